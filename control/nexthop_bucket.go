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
		var rest [][]byte
		for i := 0; i < len(args); i++ {
			if is(args[i], "index") && i+1 < len(args) {
				n, err := strconv.ParseUint(str(args[i+1]), 0, 16)
				if err != nil {
					return invarg("invalid index value", args[i+1])
				}
				index = int(n)
				i++
				continue
			}
			rest = append(rest, args[i])
		}
		args = rest
		if index < 0 {
			return nexthopUsage()
		}
	}
	f, err := s.parseNhFilter(args, true)
	if err != nil {
		return err
	}
	var objs []*nexthop.Object
	if f.idSet {
		o := s.r.Nexthops.Get(f.id)
		if o == nil {
			return answers(syscall.ENOENT)
		}
		if v := o.Load(); !v.IsGroup() || v.Type != nexthop.ResilientType {
			return &cmdErr{msg: "Error: Nexthop group not of type resilient.\nDump terminated", code: 2}
		}
		objs = append(objs, o)
	} else {
		for _, v := range s.r.Nexthops.List() {
			if v.IsGroup() && v.Type == nexthop.ResilientType {
				if o := s.r.Nexthops.Get(v.ID); o != nil {
					objs = append(objs, o)
				}
			}
		}
	}
	var j *jsonw
	if s.opt.json {
		j = &jsonw{w: s.out, pretty: s.opt.pretty}
		j.startArray()
	}
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
			secs := strconv.FormatFloat(float64(idle[i]/10)/100, 'f', -1, 64)
			if j != nil {
				j.startObject()
				j.uint("id", uint64(o.ID()))
				j.name("bucket")
				j.startObject()
				j.uint("index", uint64(i))
				j.name("idle_time")
				j.raw(secs)
				j.uint("nhid", uint64(nh))
				j.endObject()
				j.strings("flags", nil)
				j.endObject()
				continue
			}
			s.out.WriteString("id " + strconv.FormatUint(uint64(o.ID()), 10) + " index " + strconv.Itoa(i) +
				" idle_time " + secs + " nhid " + strconv.FormatUint(uint64(nh), 10) + " \n")
		}
	}
	if j != nil {
		j.endArray()
		s.out.WriteByte('\n')
	}
	return nil
}
