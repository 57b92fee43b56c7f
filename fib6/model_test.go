package fib6

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"urouter/nexthop"
)

// refTable is the naive model of a table: a flat list of routes per
// destination, kept in Linux's order, searched linearly.
type refTable struct {
	routes map[netip.Prefix][]Route
	sorted []netip.Prefix // the destinations in order; nil once one comes or goes
}

func newRefTable() *refTable { return &refTable{routes: map[netip.Prefix][]Route{}} }

func (m *refTable) put(r Route, mode putMode) error {
	if err := r.normalize(); err != nil {
		return err
	}
	l, ok := m.routes[r.Dst]
	if !ok {
		m.sorted = nil
	}
	at := len(l)
	for i, o := range l {
		if o.Metric > r.Metric || mode == modePrepend && o.Metric == r.Metric {
			at = i
			break
		}
	}
	for i, o := range l {
		same := o.Src == r.Src && o.Metric == r.Metric
		switch {
		case mode == modeAdd && same:
			return ErrExists
		case (mode == modeAppend || mode == modePrepend) && (sameAttrs(&o.Attrs, &r.Attrs) || same && sameWay(&o.Attrs, &r.Attrs)):
			return ErrExists
		case (mode == modeAppend || mode == modePrepend) && same && o.multipath() && r.multipath():
			var ms []nexthop.Member
			for _, p := range append(o.legs(), r.legs()...) { // each path keeps its own (Leg)
				if slices.ContainsFunc(ms, func(q nexthop.Member) bool { return q.Gateway == p.Gateway && q.Link == p.Link }) {
					return ErrExists
				}
				ms = append(ms, p)
			}
			o.Nexthop, o.Group = nexthop.Nexthop{}, nexthop.NewGroup(ms)
			l = slices.Clone(l)
			l[i] = o
			m.routes[r.Dst] = l
			return nil
		case mode == modeReplace && same:
			l = slices.Clone(l)
			l[i] = r
			m.routes[r.Dst] = l
			return nil
		}
	}
	m.routes[r.Dst] = slices.Insert(slices.Clone(l), at, r)
	return nil
}

func (m *refTable) del(q Match) (Route, error) {
	if q.Src.IsValid() && q.Src.Bits() == 0 {
		q.Src = netip.Prefix{}
	}
	l := m.routes[q.Dst]
	for i, r := range l {
		if ok, path := q.matches(&r.Attrs); ok {
			if path >= 0 {
				ms := r.legs()
				gone := r
				gone.Group, gone.Nexthop = nil, ms[path].Nexthop
				gone.showLeg(ms[path].Leg)
				ms = slices.Delete(ms, path, path+1)
				r.showLeg(ms[0].Leg) // the route shows its first path's
				if len(ms) == 1 {
					r.Group, r.Nexthop = nil, ms[0].Nexthop
				} else {
					r.Group = nexthop.NewGroup(ms)
				}
				l = slices.Clone(l)
				l[i] = r
				m.routes[q.Dst] = l
				return gone, nil
			}
			l = slices.Delete(slices.Clone(l), i, i+1)
			if len(l) == 0 {
				delete(m.routes, q.Dst)
				m.sorted = nil
			} else {
				m.routes[q.Dst] = l
			}
			return r, nil
		}
	}
	return Route{}, ErrNoRoute
}

// sameAttrs compares routes with their groups by content: the model
// keeps its own copies.
func sameAttrs(a, b *Attrs) bool {
	x, y := *a, *b
	x.Group, y.Group = nil, nil
	return x == y && a.Group.Equal(b.Group)
}

// sameWay: Linux's rt6_duplicate_nexthop, written out. Reject and throw
// routes all go by lo; a nexthop object is itself; multipath routes are
// merged path by path instead.
func sameWay(a, b *Attrs) bool {
	byLo := func(x *Attrs) bool {
		return x.Type == Blackhole || x.Type == Unreachable || x.Type == Prohibit || x.Type == Throw
	}
	switch {
	case a.Object != nil || b.Object != nil:
		return a.Object == b.Object
	case a.Group != nil || b.Group != nil:
		return false
	case byLo(a) || byLo(b):
		return byLo(a) && byLo(b)
	}
	return a.Nexthop.Link == b.Nexthop.Link && a.Nexthop.Gateway == b.Nexthop.Gateway
}

func sameRoute(a, b Route) bool { return a.Dst == b.Dst && sameAttrs(&a.Attrs, &b.Attrs) }

// get is Linux's IPv6 lookup, written out plainly: the longest destination
// first; a destination with source routes answers only for sources they
// cover (the longest source prefix, then the lowest metric), and falls
// back to its plain routes only if it is ::/0.
func (m *refTable) get(dst, src netip.Addr) (Route, bool) {
	for l := 128; l >= 0; l-- {
		p := netip.PrefixFrom(dst, l).Masked()
		rs := m.routes[p]
		if len(rs) == 0 {
			continue
		}
		hasSrc := slices.ContainsFunc(rs, func(r Route) bool { return r.Src.IsValid() })
		if !hasSrc {
			return rs[0], true
		}
		bestLen := -1
		var best Route
		for _, r := range rs {
			if src.IsValid() && r.Src.IsValid() && r.Src.Contains(src) && r.Src.Bits() > bestLen {
				best, bestLen = r, r.Src.Bits()
			}
		}
		if bestLen >= 0 {
			return best, true
		}
		if l == 0 {
			for _, r := range rs {
				if !r.Src.IsValid() {
					return r, true
				}
			}
		}
	}
	return Route{}, false
}

func (m *refTable) dump() []Route {
	if m.sorted == nil {
		for p := range m.routes {
			m.sorted = append(m.sorted, p)
		}
		slices.SortFunc(m.sorted, comparePrefix)
	}
	var out []Route
	for _, p := range m.sorted {
		out = append(out, m.routes[p]...)
	}
	return out
}

// randRoute draws routes whose fields collide often: few metrics, few
// gateways, every type, sometimes a source prefix.
func randRoute(r *rand.Rand, seeds []netip.Prefix) Route {
	types := []Type{Unicast, Unicast, Unicast, Local, Blackhole, Unreachable, Prohibit, Throw}
	rt := Route{Dst: randPrefix(r, seeds)}
	rt.Type = types[r.IntN(len(types))]
	rt.Metric = []uint32{0, 100, 1024, 1024, 2048}[r.IntN(5)]
	rt.Proto = Proto(r.IntN(3) + 2)
	if rt.Type == Unicast || rt.Type == Local {
		rt.Nexthop.Link = int32(1 + r.IntN(3))
		if r.IntN(2) == 0 {
			rt.Nexthop.Gateway = netip.AddrFrom16([16]byte{0xfe, 0x80, 15: byte(1 + r.IntN(3))})
		}
	}
	if r.IntN(6) == 0 {
		rt.Src = randPrefix(r, seeds)
	}
	if r.IntN(10) == 0 {
		rt.MTU = 1280
	}
	return rt
}

func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	var ea, eb *Error
	return errors.As(a, &ea) && errors.As(b, &eb) && ea.Errno == eb.Errno
}

// checkTable compares every lookup path and the dump with the model.
func checkTable(t *testing.T, tab *Table, m *refTable, r *rand.Rand) {
	t.Helper()
	if err := tab.trie.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	want := m.dump()
	var got []Route
	tab.Dump(Filter{}, func(rt Route) bool { got = append(got, rt); return true })
	if !slices.EqualFunc(got, want, sameRoute) {
		t.Fatalf("dump differs:\n got %v\nwant %v", got, want)
	}
	if tab.Len() != len(want) {
		t.Fatalf("Len %d, want %d", tab.Len(), len(want))
	}
	var dsts, srcs []netip.Addr
	for i := 0; i < 500; i++ {
		var dst, src netip.Addr
		if len(want) > 0 {
			rt := want[r.IntN(len(want))]
			dst = probe(r, rt.Dst)
			if rt.Src.IsValid() && r.IntN(2) == 0 {
				src = probe(r, rt.Src)
			} else if r.IntN(3) == 0 {
				src = probe(r, want[r.IntN(len(want))].Dst)
			}
		} else {
			dst = probe(r, netip.PrefixFrom(netip.IPv6Unspecified(), 0))
		}
		if i > 0 && r.IntN(3) == 0 {
			dst = dsts[i-1] // a flow's run of one destination (its sources may differ)
		}
		dsts, srcs = append(dsts, dst), append(srcs, src)
		wr, wok := m.get(dst, src)
		gp, ga, gok := tab.Get(dst, src, nil)
		if wok != gok || wok && (gp != wr.Dst || !sameAttrs(ga, &wr.Attrs)) {
			t.Fatalf("Get(%s, %s) = %v %v %v, want %v %v", dst, src, gp, ga, gok, wr, wok)
		}
		la := tab.Lookup(dst, src)
		if wok != (la != nil) || wok && !sameAttrs(la, &wr.Attrs) {
			t.Fatalf("Lookup(%s, %s) = %v, want %v", dst, src, la, wr)
		}
	}
	outKeys := make([]*Attrs, len(dsts))
	tab.LookupKeys(keysOf(dsts), keysOf(srcs), outKeys, nil)
	for i := range dsts {
		want := tab.Lookup(dsts[i], srcs[i])
		if got := outKeys[i]; (got == nil) != (want == nil) || got != nil && got != want {
			t.Fatalf("LookupKeys(%s, %s) differs from Lookup", dsts[i], srcs[i])
		}
	}
}

// nextRoute draws the route of a random change: one the model has (now
// and then on another link) or a new one near the prefixes seen so far.
func nextRoute(r *rand.Rand, m *refTable, seeds *[]netip.Prefix) Route {
	if len(m.routes) > 0 && r.IntN(3) == 0 { // the dump only then: it sorts the model
		cur := m.dump()
		rt := cur[r.IntN(len(cur))]
		if r.IntN(2) == 0 {
			rt.Nexthop.Link = int32(1 + r.IntN(3))
		}
		return rt
	}
	rt := randRoute(r, *seeds)
	*seeds = append(*seeds, rt.Dst)
	return rt
}
