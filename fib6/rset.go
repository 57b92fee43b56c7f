package fib6

import (
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
	for _, a := range routes {
		if a.Src.IsValid() {
			r.hasSrc = true
		} else if r.best == nil {
			r.best = &a.Attrs
		}
	}
	return r
}

// groupRef is a table's one shared copy of a multipath route's paths.
type groupRef struct {
	g    *nexthop.Group
	refs int // attrsRefs that use it
}
