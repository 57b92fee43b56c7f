package control

import (
	"strconv"
	"syscall"

	"urouter/fib6"
	"urouter/nexthop"
)

// Showing and flushing nexthop objects: the selector, and the printer
// of ipnexthop.c's print_nexthop.

// nhFilter is a show, flush or bucket selector.
type nhFilter struct {
	id       uint32
	idSet    bool
	link     int32
	groups   bool
	proto    uint8
	protoSet bool
	nhid     uint32 // bucket show nhid
}

func (f *nhFilter) selects(v *nexthop.Version) bool {
	switch {
	case f.idSet && v.ID != f.id:
		return false
	case f.groups && !v.IsGroup():
		return false
	case f.link != 0 && (v.IsGroup() || v.Link != f.link):
		return false
	case f.protoSet && v.Proto != f.proto:
		return false
	}
	return true
}

func (s *session) parseNhFilter(args [][]byte, buckets bool) (*nhFilter, *cmdErr) {
	f := &nhFilter{}
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch {
		case is(w, "id"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			if f.id, err = parseNhID(v); err != nil {
				return nil, err
			}
			f.idSet = true
		case is(w, "dev"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			l := s.r.Links.ByName(str(v))
			if l == nil {
				return nil, invarg("Device does not exist\n", v)
			}
			f.link = l.Index
		case is(w, "groups"):
			f.groups = true
		case is(w, "fdb"):
		case buckets && is(w, "nhid"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			if f.nhid, err = parseNhID(v); err != nil {
				return nil, err
			}
		case matches(w, "protocol"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			p, ok := parseProto(v)
			if !ok {
				return nil, invarg("invalid protocol value", v)
			}
			f.proto, f.protoSet = uint8(p), true
		case is(w, "vrf"), is(w, "master"):
			return nil, unsupported(w)
		case matches(w, "help"):
			return nil, nexthopUsage()
		default:
			return nil, invarg("", w)
		}
	}
	return f, nil
}

func (s *session) nexthopShow(args [][]byte, flush bool) *cmdErr {
	f, err := s.parseNhFilter(args, false)
	if err != nil {
		return err
	}
	if flush {
		n := s.r.FlushNexthops(f.selects)
		if n == 0 {
			s.out.WriteString("Nothing to flush\n")
		} else {
			s.out.WriteString("Flushed " + strconv.Itoa(n) + " nexthops\n")
		}
		return nil
	}
	if f.idSet && !f.groups && f.link == 0 && !f.protoSet {
		return s.nexthopGet(args)
	}
	p := s.nhPrinter()
	p.begin()
	for _, v := range s.r.Nexthops.List() {
		if f.selects(v) {
			p.print(v)
		}
	}
	p.end()
	return nil
}

// nhPrinter prints nexthop objects as ipnexthop.c's print_nexthop does.
type nhPrinter struct {
	s   *session
	out printer
}

func (s *session) nhPrinter() *nhPrinter {
	return &nhPrinter{s: s, out: s.newPrinter()}
}

func (p *nhPrinter) begin() { p.out.begin() }

func (p *nhPrinter) end() { p.out.end() }

func (p *nhPrinter) devName(link int32) string {
	if l := p.s.r.Links.ByIndex(link); l != nil {
		return l.Name
	}
	return "if" + strconv.Itoa(int(link))
}

// scope is the nexthop's scope as Linux reports it: link for a gateway,
// host for an IPv4 nexthop on a link alone, global otherwise.
func nhScope(v *nexthop.Version) string {
	switch {
	case v.IsGroup() || v.Flags&nexthop.Blackhole != 0:
		return "global"
	case v.Gateway.IsValid() || v.Family == nexthop.FamilyInet6:
		return "link"
	}
	return "host"
}

func (p *nhPrinter) print(v *nexthop.Version) {
	d, w := p.s.opt.details, &p.out
	scope := nhScope(v)
	w.openObject("")
	w.uint("id", "id %d ", uint64(v.ID))
	if v.IsGroup() {
		p.group(v)
	}
	if v.Gateway.IsValid() {
		w.addr("gateway", "via %s ", v.Gateway)
	}
	if !v.IsGroup() && v.Flags&nexthop.Blackhole == 0 {
		w.str("dev", "dev %s ", p.devName(v.Link))
	}
	if scope != "global" || d {
		w.str("scope", "scope %s ", scope)
	}
	if v.Flags&nexthop.Blackhole != 0 {
		w.null("blackhole", "blackhole ")
	}
	if v.Proto != 0 || d {
		w.str("protocol", "proto %s ", protoString(fib6.Proto(v.Proto)))
	}
	w.strings("flags", "%s ", pathFlags(v.Nexthop))
	w.text("\n")
	w.closeObject()
}

// group prints a group's members, ID[,WEIGHT] by '/', and a resilient
// group's arguments.
func (p *nhPrinter) group(v *nexthop.Version) {
	w := &p.out
	w.text("group ")
	w.openArray("group")
	for i, e := range v.Group {
		if i > 0 {
			w.text("/")
		}
		w.openObject("")
		w.uint("id", "%d", uint64(e.ID))
		if e.Weight != 1 {
			w.uint("weight", ",%d", uint64(e.Weight))
		}
		w.closeObject()
	}
	w.closeArray()
	w.text(" ")
	if v.Type != nexthop.ResilientType {
		return
	}
	w.str("type", "type %s ", "resilient")
	w.openObject("resilient_args")
	w.uint("buckets", "buckets %d", uint64(v.Buckets))
	w.uint("idle_timer", " idle_timer %d", uint64(v.IdleTimer))
	w.uint("unbalanced_timer", " unbalanced_timer %d", uint64(v.UnbalancedTimer))
	w.uint("unbalanced_time", " unbalanced_time %d", uint64(p.unbalanced(v)))
	w.closeObject()
	w.text(" ")
}

// unbalanced is how long a resilient group has been unbalanced, in
// seconds.
func (p *nhPrinter) unbalanced(v *nexthop.Version) int64 {
	o := p.s.r.Nexthops.Get(v.ID)
	if o == nil {
		return 0
	}
	_, _, unb := p.s.r.Nexthops.Buckets(o)
	return unb / 1000
}

func (s *session) nexthopGet(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return nexthopUsage()
	}
	id, err := s.nexthopIDArg(args)
	if err != nil {
		return err
	}
	o := s.r.Nexthops.Get(id)
	if o == nil {
		return answers(syscall.ENOENT)
	}
	p := s.nhPrinter()
	p.begin()
	p.print(o.Load())
	p.end()
	return nil
}
