package fib6

import (
	"urouter/nexthop"
)

// What the trie stores for a prefix (its routes, and the paths a lookup
// finds), and the table's one shared copy of each route's attributes.

// rset is what the trie stores for one destination prefix: its routes.
// Immutable once published. A prefix with a single route shares the rset of
// that route's Attrs with every other prefix that has the same one.
type rset struct {
	// paths is what a lookup without a source finds: the first route
	// without a source prefix (nil Route if every route has one) and, when
	// routes of its metric are Linux's IPv6 ECMP siblings (unicast with a
	// gateway, added after it with append), all of them.
	paths  Paths
	routes []*attrsRef // ordered by metric, then as added
	hasSrc bool        // some route has a source prefix: take the slow path
}

// Paths is what a lookup finds for a destination: the route that decides
// and, for a multipath route, its paths behind a nexthop.Group that
// selects one per flow. fib6 stores the paths; it never picks one.
// Immutable, shared by every lookup that finds it.
type Paths struct {
	Route *Attrs // the route; for a multipath route its first path
	// Group is nil for a single path; else member i of it is the nexthop
	// of route Members[i].
	Group   *nexthop.Group
	Members []*Attrs
}

// Path returns the route of member i (the route itself for a single path).
func (p *Paths) Path(i int) *Attrs {
	if p.Group == nil {
		return p.Route
	}
	return p.Members[i]
}

func multipath(a *Attrs) bool {
	return a.Type == Unicast && a.Nexthop.Gateway.IsValid() && !a.Src.IsValid()
}

// attrsRef is a table's one shared copy of some Attrs.
type attrsRef struct {
	Attrs
	refs   int   // routes that use it
	single *rset // the rset of a prefix whose only route this is
}

func newRset(routes []*attrsRef) *rset {
	if len(routes) == 0 {
		return nil
	}
	if len(routes) == 1 {
		return routes[0].single
	}
	r := &rset{routes: routes}
	for i, a := range routes {
		if a.Src.IsValid() {
			r.hasSrc = true
		} else if r.paths.Route == nil {
			r.paths.Route = &a.Attrs
			if multipath(r.paths.Route) {
				r.paths.Members = siblings(routes[i:])
			}
		}
	}
	if len(r.paths.Members) > 1 {
		ms := make([]nexthop.Member, len(r.paths.Members))
		for i, m := range r.paths.Members {
			ms[i] = nexthop.Member{Nexthop: m.Nexthop, Weight: 1}
		}
		r.paths.Group = nexthop.NewGroup(ms)
	} else {
		r.paths.Members = nil
	}
	return r
}

// siblings are the first route of routes and the ECMP siblings after it.
func siblings(routes []*attrsRef) []*Attrs {
	out := []*Attrs{&routes[0].Attrs}
	for _, b := range routes[1:] {
		if b.Metric != routes[0].Metric || !multipath(&b.Attrs) {
			break
		}
		out = append(out, &b.Attrs)
	}
	return out
}
