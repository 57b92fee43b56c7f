package fib6

import (
	"net/netip"
	"slices"

	"urouter/nexthop"
)

// What changes a route's paths rather than the route: coalescing appends,
// taking one path out, a link's events, and the routes of removed nexthop
// objects.

// coalesce returns route a with the paths of b after its own; a path
// both have is refused, as Linux refuses a duplicate sibling.
func coalesce(a, b *Attrs) (Attrs, error) {
	ms := a.legs()
	for _, p := range b.legs() {
		for _, q := range ms {
			if q.Gateway == p.Gateway && q.Link == p.Link {
				return Attrs{}, ErrExists
			}
		}
		ms = append(ms, p)
	}
	out := *a
	out.Nexthop, out.Group = nexthop.Nexthop{}, nexthop.NewGroup(ms)
	return out, nil
}

// duplicate reports whether routes a and b (of one metric) go the same
// way, so that an append of b next to a is refused, as Linux's
// rt6_duplicate_nexthop finds: through the same nexthop object, or by the
// same link and gateway. Every reject and throw route goes by lo without
// one; multipath routes are compared path by path (coalesce).
func duplicate(a, b *Attrs) bool {
	switch {
	case a.Object != nil || b.Object != nil:
		return a.Object == b.Object
	case a.Group != nil || b.Group != nil:
		return false
	}
	if a.Type.ViaLoopback() || b.Type.ViaLoopback() {
		return a.Type.ViaLoopback() && b.Type.ViaLoopback()
	}
	return a.Nexthop.Link == b.Nexthop.Link && a.Nexthop.Gateway == b.Nexthop.Gateway
}

// removePath takes path p out of multipath route i of cur, as Linux deletes
// one ECMP sibling; a route left with one path becomes a plain one. It
// returns the route of the path removed.
func (x *Txn) removePath(dst netip.Prefix, k key, cur *rset, i, p int) Route {
	a := cur.routes[i]
	ms := a.legs()
	gone := Route{Dst: dst, Attrs: a.Attrs}
	gone.Group, gone.Nexthop = nil, ms[p].Nexthop
	gone.showLeg(ms[p].Leg)
	ms = slices.Delete(ms, p, p+1)
	x.setPaths(dst, k, cur, i, ms)
	return gone
}

// setPaths makes route i of cur go by paths ms (a plain route if one).
func (x *Txn) setPaths(dst netip.Prefix, k key, cur *rset, i int, ms []nexthop.Member) {
	t := x.t
	a := cur.routes[i]
	b := a.Attrs
	b.showLeg(ms[0].Leg)
	if len(ms) == 1 {
		b.Nexthop, b.Group = ms[0].Nexthop, nil
	} else {
		b.Nexthop, b.Group = nexthop.Nexthop{}, nexthop.NewGroup(ms)
	}
	ref := t.ref(&b)
	routes := slices.Clone(cur.routes)
	routes[i] = ref
	x.tx.set(k, dst.Bits(), newRset(routes))
	ref.refs++
	x.n++
	x.note(Deleted, dst, a)
	x.note(Added, dst, ref)
	if b.Expires != 0 {
		t.expiry[dst]++
	}
	t.unref(dst, a)
}

// LinkEvent says what happened to a link, for LinkChanged.
type LinkEvent uint8

const (
	LinkDown LinkEvent = iota + 1
	LinkUp
	LinkGone
)

// LinkChanged does to the table's inline routes what Linux does when a
// link goes down, comes up or goes away: down deletes the single-path
// routes out of it and marks the paths of multipath routes out of it dead
// (a route all of whose paths are dead goes); up revives them; gone takes
// them out. Routes through nexthop objects are the registry's business.
// It returns the number of routes changed or deleted.
func (x *Txn) LinkChanged(link int32, ev LinkEvent) int {
	var hits []Route
	x.t.Dump(Filter{}, func(r Route) bool {
		if r.Object == nil && (r.Group == nil && r.Nexthop.Link == link && ev != LinkUp ||
			r.Group != nil && r.Group.AnyLink(link)) {
			hits = append(hits, r)
		}
		return true
	})
	n := 0
	for _, h := range hits {
		k, cur, i := x.find(h)
		if i < 0 {
			continue
		}
		if h.Group == nil {
			x.remove(h.Dst, k, cur, i)
			n++
			continue
		}
		ms := slices.Clone(h.Group.Members())
		live := 0
		for j := range ms {
			if ms[j].Link == link {
				ms[j].Flags = nexthop.MarkLinkDown(ms[j].Flags, ev != LinkUp)
			}
			if ms[j].Usable() {
				live++
			}
		}
		if ev == LinkGone {
			ms = slices.DeleteFunc(ms, func(m nexthop.Member) bool { return m.Link == link })
		}
		if len(ms) == 0 || live == 0 {
			x.remove(h.Dst, k, cur, i)
		} else {
			x.setPaths(h.Dst, k, cur, i, ms)
		}
		n++
	}
	return n
}

// GatewayChanged marks the paths of inline multipath routes through
// gateway gw on link dead while its neighbour is FAILED (unresolved), or
// alive again (unless their link is down). Single-path routes keep their
// path: their packets earn Address Unreachable. It returns the number of
// routes changed.
func (x *Txn) GatewayChanged(link int32, gw netip.Addr, unresolved bool) int {
	var hits []Route
	x.t.Dump(Filter{}, func(r Route) bool {
		if r.Object == nil && r.Group != nil && r.Group.HasGateway(link, gw) {
			hits = append(hits, r)
		}
		return true
	})
	for _, h := range hits {
		k, cur, i := x.find(h)
		if i < 0 {
			continue
		}
		ms := slices.Clone(h.Group.Members())
		for j := range ms {
			if ms[j].Link == link && ms[j].Gateway == gw {
				ms[j].Flags = nexthop.MarkUnresolved(ms[j].Flags, unresolved)
			}
		}
		x.setPaths(h.Dst, k, cur, i, ms)
	}
	return len(hits)
}

// DeleteUsing deletes every route through an object gone selects, and
// returns how many.
func (x *Txn) DeleteUsing(gone func(*nexthop.Object) bool) int {
	if !x.t.uses(gone) {
		return 0
	}
	var victims []Route
	x.t.Dump(Filter{}, func(r Route) bool {
		if r.Object != nil && gone(r.Object) {
			victims = append(victims, r)
		}
		return true
	})
	for _, r := range victims {
		x.deleteExact(r)
	}
	return len(victims)
}

// uses reports whether some route of the table goes through an object
// sel selects (under the table's lock).
func (t *Table) uses(sel func(*nexthop.Object) bool) bool {
	for a := range t.intern {
		if a.Object != nil && sel(a.Object) {
			return true
		}
	}
	return false
}

// deleteExact deletes the route of r's destination whose attributes are
// r's.
func (x *Txn) deleteExact(r Route) bool {
	k, cur, i := x.find(r)
	if i >= 0 {
		x.remove(r.Dst, k, cur, i)
	}
	return i >= 0
}

// find returns where route r is, as the transaction sees it: its
// destination's key and routes, and its index in them (-1: not there).
func (x *Txn) find(r Route) (key, *rset, int) {
	k := prefixKey(r.Dst)
	cur := x.tx.get(k, r.Dst.Bits())
	if cur == nil {
		return k, nil, -1
	}
	return k, cur, slices.IndexFunc(cur.routes, func(a *attrsRef) bool { return a.Attrs == r.Attrs })
}
