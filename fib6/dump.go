package fib6

import (
	"net/netip"
)

// Reading a table's routes by a filter: Dump and Flush.

// Filter selects routes for Dump and Flush. Zero fields select everything.
type Filter struct {
	// Root: only destinations within this prefix (`root P`).
	Root netip.Prefix
	// Match: only destinations containing this prefix (`match P`).
	Match netip.Prefix
	// Exact: only this destination (`exact P`, or a bare prefix).
	Exact netip.Prefix
	Proto Proto
	Type  Type
	// Src: only routes whose source prefix lies within this one.
	Src netip.Prefix
	// Link, Gateway: only routes through this link, via this gateway.
	Link    int32
	Gateway netip.Addr
}

// selects: a link or gateway filter reads a route's single path, as
// iproute2's reads RTA_OIF and RTA_GATEWAY: a multipath route has neither.
func (f *Filter) selects(dst netip.Prefix, a *Attrs) bool {
	if f.Proto != 0 && a.Proto != f.Proto || f.Type != 0 && a.Type != f.Type {
		return false
	}
	if f.Link != 0 || f.Gateway.IsValid() {
		ps := a.Paths()
		if a.Group != nil || len(ps) != 1 || a.Object != nil && a.Object.Load().Paths != nil {
			return false
		}
		if f.Link != 0 && ps[0].Link != f.Link || f.Gateway.IsValid() && ps[0].Gateway != f.Gateway {
			return false
		}
	}
	if f.Src.IsValid() && (!a.Src.IsValid() || a.Src.Bits() < f.Src.Bits() || !f.Src.Contains(a.Src.Addr())) {
		return false
	}
	return true
}

// Dump calls fn for every route the filter selects, in prefix order
// (by address, shorter first), until fn returns false. It reads the
// published table without locking; it sees every transaction whole, but a
// transaction published while it runs may show in one part and not in
// another.
func (t *Table) Dump(f Filter, fn func(Route) bool) {
	t.DumpAttrs(f, func(p netip.Prefix, a *Attrs) bool { return fn(Route{Dst: p, Attrs: *a}) })
}

// DumpAttrs is Dump without the copy of each route: fn gets the table's
// own shared copy of the route's attributes, which it must not change. It
// stays what it is for good (a change makes a new one), and routes with
// equal attributes mostly share one, so a printer may keep what it made
// of the last one it saw.
func (t *Table) DumpAttrs(f Filter, fn func(netip.Prefix, *Attrs) bool) {
	emit := func(p netip.Prefix, r *rset) bool {
		for _, a := range r.routes {
			if f.selects(p, &a.Attrs) && !fn(p, &a.Attrs) {
				return false
			}
		}
		return true
	}
	switch {
	case f.Exact.IsValid():
		a := f.Exact.Addr().As16()
		for _, m := range t.trie.matches(keyOf(&a), nil) {
			if m.p == f.Exact {
				emit(m.p, m.r)
			}
		}
	case f.Match.IsValid():
		a := f.Match.Addr().As16()
		ms := t.trie.matches(keyOf(&a), nil)
		for i := len(ms) - 1; i >= 0; i-- {
			if ms[i].p.Bits() <= f.Match.Bits() && !emit(ms[i].p, ms[i].r) {
				return
			}
		}
	default:
		bound := f.Root
		if !bound.IsValid() {
			bound = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
		}
		t.trie.walk(bound, emit)
	}
}

// Flush deletes every route the filter selects, in one transaction, and
// returns how many. Without a filter it empties the table (see flushAll).
func (t *Table) Flush(f Filter) int {
	if f == (Filter{}) {
		return t.flushAll()
	}
	var victims []Route
	x := t.Begin()
	defer x.Commit()
	t.Dump(f, func(r Route) bool { victims = append(victims, r); return true })
	n := 0
	for _, r := range victims {
		if x.deleteExact(r) {
			n++
		}
	}
	return n
}
