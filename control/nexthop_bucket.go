package control

import (
	"strconv"
	"syscall"

	"urouter/nexthop"
)

// ip nexthop bucket { show | get }: a resilient group's buckets.

func (s *session) nexthopBucket(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.bucketShow(nil, false)
	}
	w, rest := args[0], args[1:]
	switch {
	case matches(w, "list"), matches(w, "show"), is(w, "lst"):
		return s.bucketShow(rest, false)
	case is(w, "get"):
		return s.bucketShow(rest, true)
	case matches(w, "help"):
		return nexthopUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip nexthop help\".", w)
}

// bucketShow prints resilient groups' buckets (get: one, by `id G index
// I`).
func (s *session) bucketShow(args [][]byte, get bool) *cmdErr {
	index := -1
	if get {
		var err *cmdErr
		if args, index, err = bucketIndex(args); err != nil {
			return err
		}
	}
	f, err := s.parseNhFilter(args, true)
	if err != nil {
		return err
	}
	objs, err := s.resilientGroups(f)
	if err != nil {
		return err
	}
	w := s.newPrinter()
	w.begin()
	for _, o := range objs {
		ids, idle, _ := s.r.Nexthops.Buckets(o)
		if get && index >= len(ids) {
			return extack("Bucket index out of bounds.")
		}
		for i, nh := range ids {
			if get && i != index || f.nhid != 0 && nh != f.nhid {
				continue
			}
			if f.link != 0 {
				if m := s.r.Nexthops.Get(nh); m == nil || m.Load().Link != f.link {
					continue
				}
			}
			printBucket(&w, o.ID(), i, idle[i], nh)
		}
	}
	w.end()
	return nil
}

// bucketIndex takes `index I` out of a bucket get's arguments.
func bucketIndex(args [][]byte) ([][]byte, int, *cmdErr) {
	index := -1
	var rest [][]byte
	for i := 0; i < len(args); i++ {
		if is(args[i], "index") && i+1 < len(args) {
			n, err := strconv.ParseUint(str(args[i+1]), 0, 16)
			if err != nil {
				return nil, 0, invarg("invalid index value", args[i+1])
			}
			index = int(n)
			i++
			continue
		}
		rest = append(rest, args[i])
	}
	if index < 0 {
		return nil, 0, nexthopUsage()
	}
	return rest, index, nil
}

// resilientGroups are the resilient groups f selects by id, or all.
func (s *session) resilientGroups(f *nhFilter) ([]*nexthop.Object, *cmdErr) {
	var objs []*nexthop.Object
	if f.idSet {
		o := s.r.Nexthops.Get(f.id)
		if o == nil {
			return nil, answers(syscall.ENOENT)
		}
		if v := o.Load(); !v.IsGroup() || v.Type != nexthop.ResilientType {
			return nil, &cmdErr{msg: "Error: Nexthop group not of type resilient.\nDump terminated", code: 2}
		}
		return append(objs, o), nil
	}
	for _, v := range s.r.Nexthops.List() {
		if v.IsGroup() && v.Type == nexthop.ResilientType {
			if o := s.r.Nexthops.Get(v.ID); o != nil {
				objs = append(objs, o)
			}
		}
	}
	return objs, nil
}

// printBucket prints bucket i of group id as print_nexthop_bucket does;
// idle is in milliseconds.
func printBucket(w *printer, id uint32, i int, idle int64, nh uint32) {
	w.openObject("")
	w.uint("id", "id %d ", uint64(id))
	w.openObject("bucket")
	w.uint("index", "index %d ", uint64(i))
	w.number("idle_time", "idle_time %s ", strconv.FormatFloat(float64(idle/10)/100, 'f', -1, 64))
	w.uint("nhid", "nhid %d ", uint64(nh))
	w.closeObject()
	w.strings("flags", "", nil)
	w.text("\n")
	w.closeObject()
}
