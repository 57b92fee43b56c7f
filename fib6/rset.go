package fib6

import (
	"slices"

	"urouter/nexthop"
)

// What the trie stores for a prefix (its routes, and the route a lookup
// finds), and the table's one shared copy of each route's attributes.

// rset is what the trie stores for one destination prefix: its routes.
// Immutable once published. A prefix with a single route shares the rset of
// that route's Attrs with every other prefix that has the same one.
type rset struct {
	// best is what a lookup without a source finds: the first route
	// without a source prefix (nil if every route has one).
	best   *Attrs
	routes []*attrsRef // ordered by metric, then as added
	hasSrc bool        // some route has a source prefix: take the slow path
	// choice: for some source, two routes share the lowest metric, so a
	// lookup that prefers a link may take another than the first
	choice bool
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
		} else if r.best == nil {
			r.best = &a.Attrs
		}
		// the first route of a's source before it has a's metric
		if j := slices.IndexFunc(routes[:i], func(b *attrsRef) bool { return b.Src == a.Src }); j >= 0 && routes[j].Metric == a.Metric {
			r.choice = true
		}
	}
	return r
}

// groupRef is a table's one shared copy of a multipath route's paths.
type groupRef struct {
	g    *nexthop.Group
	refs int // attrsRefs that use it
}
