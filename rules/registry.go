package rules

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Registry is the router's rule set: the published snapshot, and the
// writer lock that orders changes to it (no other lock is taken).
type Registry struct {
	mu       sync.Mutex
	cur      atomic.Pointer[Set]
	resolve  func(name string) int32
	loopback int32
}

// NewRegistry publishes Linux's default rules. resolve finds a link's
// index by name (0 for none; it is called with the registry's lock held
// and must not block on it), loopback is the index of the link the
// router's own packets come in by.
func NewRegistry(resolve func(name string) int32, loopback int32) *Registry {
	g := &Registry{resolve: resolve, loopback: loopback}
	var es []*entry
	for _, r := range Default() {
		es = append(es, newEntry(&r, resolve))
	}
	g.cur.Store(newSet(es, loopback))
	return g
}

// Load returns the rule set in force.
func (g *Registry) Load() *Set { return g.cur.Load() }

// Txn is an open change of the rule set: it holds the registry's lock
// until Commit, which publishes what it did with one atomic store.
type Txn struct {
	g       *Registry
	rules   []*entry
	owned   bool // rules is the transaction's copy
	changed bool
}

// Begin opens a transaction (taking the registry's lock).
func (g *Registry) Begin() *Txn {
	g.mu.Lock()
	return &Txn{g: g, rules: g.cur.Load().rules}
}

// Commit publishes the transaction's changes and releases the lock.
func (x *Txn) Commit() {
	if x.changed {
		x.g.cur.Store(newSet(x.rules, x.g.loopback))
	}
	x.g.mu.Unlock()
	x.g = nil
}

func (x *Txn) own() {
	if !x.owned {
		x.rules = slices.Clone(x.rules)
		x.owned = true
	}
	x.changed = true
}

// Add inserts rule r after the rules of its preference and below. Without
// a preference (prefSet false) it takes Linux's: one below the second
// rule's, or 0.
func (x *Txn) Add(r Rule, prefSet bool) (Rule, error) {
	if !prefSet {
		r.Pref = 0
		if len(x.rules) > 1 && x.rules[1].Pref > 0 {
			r.Pref = x.rules[1].Pref - 1
		}
	}
	if err := r.check(); err != nil {
		return r, err
	}
	e := newEntry(&r, x.g.resolve)
	from, to := x.prefRange(r.Pref)
	for _, o := range x.rules[from:to] {
		if o.sameAs(&r) {
			return r, ErrExists
		}
	}
	x.own()
	x.rules = slices.Insert(x.rules, to, e)
	return r, nil
}

// prefRange is where the rules of preference p are: [from, to).
func (x *Txn) prefRange(p uint32) (from, to int) {
	from, _ = slices.BinarySearchFunc(x.rules, p, func(e *entry, p uint32) int { return cmpU32(e.Pref, p) })
	to, _ = slices.BinarySearchFunc(x.rules[from:], p+1, func(e *entry, p uint32) int { return cmpU32(e.Pref, p) })
	if p == ^uint32(0) {
		to = len(x.rules) - from
	}
	return from, from + to
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Delete removes the first rule sel selects, as Linux's RTM_DELRULE.
func (x *Txn) Delete(sel *Selector) (Rule, error) {
	for i, e := range x.rules {
		if sel.selects(&e.Rule) {
			x.own()
			x.rules = slices.Delete(x.rules, i, i+1)
			return e.Rule, nil
		}
	}
	return Rule{}, ErrNotFound
}

// DeleteWhere removes every rule del says so of, and returns how many.
func (x *Txn) DeleteWhere(del func(*Rule) bool) int {
	n := 0
	for _, e := range x.rules {
		if del(&e.Rule) {
			n++
		}
	}
	if n > 0 {
		x.own()
		x.rules = slices.DeleteFunc(x.rules, func(e *entry) bool { return del(&e.Rule) })
	}
	return n
}

// Relink resolves the rules' link names again, after a link came, went or
// was renamed, and publishes what changed.
func (g *Registry) Relink() {
	x := g.Begin()
	for i, e := range x.rules {
		if e.Iif == "" && e.Oif == "" {
			continue
		}
		n := newEntry(&e.Rule, g.resolve)
		if n.iif != e.iif || n.oif != e.oif {
			x.own()
			x.rules[i] = n
		}
	}
	x.Commit()
}
