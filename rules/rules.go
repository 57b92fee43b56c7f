// Package rules owns policy routing: the ordered rules that choose which
// table a packet is looked up in. Until rule commands arrive, a rule set
// holds Linux's IPv6 defaults, 0 `from all lookup local` and 32766 `from
// all lookup main` (IPv6 has no default-table rule).
//
// The routing decision (package decide) loads an immutable snapshot
// through an atomic pointer and never locks; rules never imports decide,
// dataplane or control.
package rules

import (
	"sync/atomic"

	"urouter/fib6"
)

// Rule is one policy rule: at preference Pref, look the packet up in
// Table.
type Rule struct {
	Pref  uint32
	Table uint32
}

// Set is an immutable list of rules, by preference.
type Set struct {
	rules []Rule
}

// Default is Linux's IPv6 rule set.
func Default() *Set {
	return &Set{rules: []Rule{{Pref: 0, Table: fib6.TableLocal}, {Pref: 32766, Table: fib6.TableMain}}}
}

// Rules returns the rules in order. The slice is shared: do not change it.
func (s *Set) Rules() []Rule { return s.rules }

// Current is the published rule set.
type Current struct{ p atomic.Pointer[Set] }

// NewCurrent publishes the default rules.
func NewCurrent() *Current {
	c := &Current{}
	c.p.Store(Default())
	return c
}

// Load returns the rule set in force.
func (c *Current) Load() *Set { return c.p.Load() }
