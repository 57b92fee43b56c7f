package control

import (
	"strconv"
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
	s *session
	j *jsonw
}

func (s *session) nhPrinter() *nhPrinter {
	p := &nhPrinter{s: s}
	if s.opt.json {
		p.j = &jsonw{w: s.out, pretty: s.opt.pretty}
	}
	return p
}

func (p *nhPrinter) begin() {
	if p.j != nil {
		p.j.startArray()
	}
}

func (p *nhPrinter) end() {
	if p.j != nil {
		p.j.endArray()
		p.s.out.WriteByte('\n')
	}
}

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
	d := p.s.opt.details
	scope := nhScope(v)
	if j := p.j; j != nil {
		j.startObject()
		j.uint("id", uint64(v.ID))
		if v.IsGroup() {
			j.name("group")
			j.startArray()
			for _, e := range v.Group {
				j.startObject()
				j.uint("id", uint64(e.ID))
				if e.Weight != 1 {
					j.uint("weight", uint64(e.Weight))
				}
				j.endObject()
			}
			j.endArray()
			if v.Type == nexthop.ResilientType {
				j.str("type", "resilient")
				j.name("resilient_args")
				j.startObject()
				j.uint("buckets", uint64(v.Buckets))
				j.uint("idle_timer", uint64(v.IdleTimer))
				j.uint("unbalanced_timer", uint64(v.UnbalancedTimer))
				j.uint("unbalanced_time", uint64(p.unbalanced(v)))
				j.endObject()
			}
		}
		if v.Gateway.IsValid() {
			j.str("gateway", v.Gateway.String())
		}
		if !v.IsGroup() && v.Flags&nexthop.Blackhole == 0 {
			j.str("dev", p.devName(v.Link))
		}
		if scope != "global" || d {
			j.str("scope", scope)
		}
		if v.Flags&nexthop.Blackhole != 0 {
			j.name("blackhole")
			j.raw("null")
		}
		if v.Proto != 0 || d {
			j.str("protocol", protoString(fib6.Proto(v.Proto)))
		}
		j.strings("flags", pathFlags(v.Nexthop))
		j.endObject()
		return
	}
	b := strconv.AppendUint([]byte("id "), uint64(v.ID), 10)
	b = append(b, ' ')
	if v.IsGroup() {
		b = append(b, "group "...)
		for i, e := range v.Group {
			if i > 0 {
				b = append(b, '/')
			}
			b = strconv.AppendUint(b, uint64(e.ID), 10)
			if e.Weight != 1 {
				b = strconv.AppendUint(append(b, ','), uint64(e.Weight), 10)
			}
		}
		b = append(b, ' ')
		if v.Type == nexthop.ResilientType {
			b = strconv.AppendUint(append(b, "type resilient buckets "...), uint64(v.Buckets), 10)
			b = strconv.AppendUint(append(b, " idle_timer "...), uint64(v.IdleTimer), 10)
			b = strconv.AppendUint(append(b, " unbalanced_timer "...), uint64(v.UnbalancedTimer), 10)
			b = strconv.AppendUint(append(b, " unbalanced_time "...), uint64(p.unbalanced(v)), 10)
			b = append(b, ' ')
		}
	}
	if v.Gateway.IsValid() {
		b = append(v.Gateway.AppendTo(append(b, "via "...)), ' ')
	}
	if !v.IsGroup() && v.Flags&nexthop.Blackhole == 0 {
		b = append(append(append(b, "dev "...), p.devName(v.Link)...), ' ')
	}
	if scope != "global" || d {
		b = append(append(append(b, "scope "...), scope...), ' ')
	}
	if v.Flags&nexthop.Blackhole != 0 {
		b = append(b, "blackhole "...)
	}
	if v.Proto != 0 || d {
		b = append(append(append(b, "proto "...), protoString(fib6.Proto(v.Proto))...), ' ')
	}
	for _, f := range pathFlags(v.Nexthop) {
		b = append(append(b, f...), ' ')
	}
	p.s.out.Write(append(b, '\n'))
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
