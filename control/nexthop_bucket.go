package control

import (
	"strconv"
	"syscall"

	"urouter/nexthop"
)

// ip nexthop bucket { show | get }: a resilient group's buckets.

func (s *Session) nexthopBucket(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.bucketShow(nil, false)
	}
	w, rest := args[0], args[1:]
	switch { // do_ipnh_bucket's order
	case matches(w, "list"), matches(w, "show"), matches(w, "lst"):
		return s.bucketShow(rest, false)
	case matches(w, "get"):
		return s.bucketShow(rest, true)
	case matches(w, "help"):
		return nexthopUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip nexthop help\".", w)
}

// bucketShow prints resilient groups' buckets (get: one, by `id G index
// I`).
func (s *Session) bucketShow(args [][]byte, get bool) *cmdErr {
	index := -1
	var f *nhFilter
	var err *cmdErr
	if get {
		f, index, err = bucketGetArgs(args)
	} else {
		f, err = s.parseNhFilter(args, true)
	}
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
			if f.link != 0 || f.members != nil {
				if m := s.r.Nexthops.Get(nh); m == nil || !f.on(m.Load().Link) {
					continue
				}
			}
			printBucket(&w, o.ID(), i, idle[i], nh)
		}
	}
	w.end()
	return nil
}

// bucketGetArgs reads ipnh_bucket_get's words: id and index, both
// needed, and nothing else.
func bucketGetArgs(args [][]byte) (*nhFilter, int, *cmdErr) {
	f := &nhFilter{}
	index := -1
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		if !is(w, "id") && !is(w, "index") {
			return nil, 0, nexthopUsage()
		}
		v, err := ws.next()
		if err != nil {
			return nil, 0, err
		}
		if is(w, "id") {
			if f.id, err = parseNhID(v); err != nil {
				return nil, 0, err
			}
			continue
		}
		n, perr := strconv.ParseUint(str(v), 0, 16)
		if perr != nil {
			return nil, 0, invarg("invalid bucket index value", v)
		}
		index = int(n)
	}
	if f.id == 0 || index < 0 {
		return nil, 0, nexthopUsage()
	}
	f.idSet = true
	return f, index, nil
}

// resilientGroups are the resilient groups f selects by id, or all.
func (s *Session) resilientGroups(f *nhFilter) ([]*nexthop.Object, *cmdErr) {
	var objs []*nexthop.Object
	if f.idSet {
		o := s.r.Nexthops.Get(f.id)
		if o == nil {
			return nil, answers(syscall.ENOENT)
		}
		switch v := o.Load(); {
		case !v.IsGroup():
			return nil, &cmdErr{msg: "Error: Not a nexthop group.\nDump terminated", code: 2}
		case v.Type != nexthop.ResilientType:
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
