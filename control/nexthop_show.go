package control

import (
	"strconv"
	"sync"
	"syscall"
	"urouter/dataplane"

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
	none     bool   // selects nothing (FDB nexthops: the router has none)
	// members, for `master` and `vrf`, are the links enslaved to the
	// link named: a nexthop on one of them is selected
	members map[int32]bool
}

// on reports whether a nexthop on link passes the filter's dev and master.
func (f *nhFilter) on(link int32) bool {
	return (f.link == 0 || link == f.link) && (f.members == nil || f.members[link])
}

func (f *nhFilter) selects(v *nexthop.Version) bool {
	switch {
	case f.none:
		return false
	case f.idSet && v.ID != f.id:
		return false
	case f.groups && !v.IsGroup():
		return false
	case (f.link != 0 || f.members != nil) && (v.IsGroup() || !f.on(v.Link)):
		return false
	case f.protoSet && v.Proto != f.proto:
		return false
	}
	return true
}

const (
	nfDev = iota + 1
	nfGroups
	nfMaster
	nfVrf
	nfID
	nfNhid
	nfProtocol
	nfFdb
	nfHelp
)

// nhListWords() are ipnh_list_flush's keywords, nhBucketWords()
// ipnh_bucket_list's, each in its order.
var (
	nhListWords = sync.OnceValue(func() keywords {
		return newKeywords([]kw{{"dev", true, nfDev}, {"groups", true, nfGroups}, {"master", true, nfMaster},
			{"vrf", true, nfVrf}, {"id", false, nfID}, {"protocol", true, nfProtocol}, {"fdb", true, nfFdb},
			{"help", true, nfHelp}})
	})
	nhBucketWords = sync.OnceValue(func() keywords {
		return newKeywords([]kw{{"dev", true, nfDev}, {"master", true, nfMaster}, {"vrf", true, nfVrf},
			{"id", false, nfID}, {"nhid", false, nfNhid}, {"help", true, nfHelp}})
	})
)

// parseNhFilter reads a show, flush or bucket selector. In show and
// flush, id ends it (iproute2 then gets or deletes that one nexthop and
// reads no further).
func (s *Session) parseNhFilter(args [][]byte, buckets bool) (*nhFilter, *cmdErr) {
	f := &nhFilter{}
	words := nhListWords()
	if buckets {
		words = nhBucketWords()
	}
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		k := words.of(w)
		var v []byte
		var err *cmdErr
		switch k {
		case nfGroups:
			f.groups = true
			continue
		case nfFdb:
			f.none = true // the router has no FDB nexthops
			continue
		case nfHelp:
			return nil, nexthopUsage()
		case 0:
			return nil, invarg("", w)
		}
		if v, err = ws.next(); err != nil {
			return nil, err
		}
		switch k {
		case nfID:
			f.id, err = parseNhID(v)
			f.idSet = true
			if !buckets {
				return f, err
			}
		case nfNhid:
			f.nhid, err = parseNhID(v)
		case nfDev, nfMaster:
			l := s.r.Links.ByName(str(v))
			if l == nil {
				return nil, invarg("Device does not exist\n", v)
			}
			if k == nfMaster {
				f.members = s.membersOf(l)
			} else {
				f.link = l.Index
			}
		case nfVrf:
			l, err := s.vrfNamed(v, "Invalid VRF\n")
			if err != nil {
				return nil, err
			}
			f.members = s.membersOf(l)
		case nfProtocol: // a number: get_unsigned, no names
			p, ok := parseUint32(v)
			if !ok {
				return nil, invarg("invalid protocol value", v)
			}
			f.proto, f.protoSet = uint8(p), true
			f.none = f.none || p > 255
		}
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (s *Session) nexthopShow(args [][]byte, flush bool) *cmdErr {
	f, err := s.parseNhFilter(args, false)
	switch {
	case err != nil:
		return err
	case f.idSet && flush:
		return s.nexthopDelID(f.id)
	case f.idSet:
		return s.nexthopGetID(f.id)
	case flush:
		n := s.r.FlushNexthops(f.selects)
		if n == 0 {
			s.out.WriteString("Nothing to flush\n")
		} else {
			s.out.WriteString("Flushed " + strconv.Itoa(n) + " nexthops\n")
		}
		return nil
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
	s   *Session
	out printer
}

func (s *Session) nhPrinter() *nhPrinter {
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
	d, w := p.s.opt.Details, &p.out
	scope := nhScope(v)
	w.openObject("")
	w.uint("id", "id %d ", uint64(v.ID))
	if v.IsGroup() {
		p.group(v)
	}
	if v.Encap != nil {
		printEncap(w, p.s, v.Encap, " encap %s") // lwt_print_encap's " encap %s "
		w.text(" ")
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

// nexthopGet reads ipnh_get's words: id, and nothing else.
func (s *Session) nexthopGet(args [][]byte) *cmdErr {
	var id uint32
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		if !is(args[ws.i], "id") {
			return nexthopUsage()
		}
		v, err := ws.next()
		if err != nil {
			return err
		}
		if id, err = parseNhID(v); err != nil {
			return err
		}
	}
	if id == 0 {
		return nexthopUsage()
	}
	return s.nexthopGetID(id)
}

func (s *Session) nexthopGetID(id uint32) *cmdErr {
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

// membersOf is the set of links enslaved to l (none: an empty set).
func (s *Session) membersOf(l *dataplane.Link) map[int32]bool {
	m := map[int32]bool{}
	for _, x := range s.r.Links.Members(l) {
		m[x.Index] = true
	}
	return m
}
