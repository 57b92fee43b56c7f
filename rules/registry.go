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
	txn      Txn    // the one open transaction, reused
	gens     uint64 // transactions begun
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
	g.cur.Store(newSet(seqOf(es), loopback))
	return g
}

// Load returns the rule set in force.
func (g *Registry) Load() *Set { return g.cur.Load() }

// Txn is an open change of the rule set: it holds the registry's lock
// until Commit, which publishes what it did with one atomic store.
type Txn struct {
	g       *Registry
	rules   editor
	changed bool
}

// Begin opens a transaction (taking the registry's lock). The
// transaction is the registry's own, reused: it is not to be touched
// after its Commit.
func (g *Registry) Begin() *Txn {
	g.mu.Lock()
	g.gens++
	g.txn = Txn{g: g, rules: editor{seq: g.cur.Load().seq, gen: g.gens}}
	return &g.txn
}

// Commit publishes the transaction's changes and releases the lock.
func (x *Txn) Commit() {
	if x.changed {
		x.rules.compact()
		x.g.cur.Store(newSet(x.rules.seq, x.g.loopback))
	}
	g := x.g
	*x = Txn{}
	g.mu.Unlock()
}

// Add inserts rule r after the rules of its preference and below. Without
// a preference (prefSet false) it takes Linux's: one below the second
// rule's, or 0.
func (x *Txn) Add(r Rule, prefSet bool) (Rule, error) {
	if !prefSet {
		r.Pref = 0
		if x.rules.len() > 1 && x.rules.at(1).Pref > 0 {
			r.Pref = x.rules.at(1).Pref - 1
		}
	}
	if err := r.check(); err != nil {
		return r, err
	}
	e := newEntry(&r, x.g.resolve)
	from, to := x.prefRange(r.Pref)
	for i := from; i < to; i++ {
		if x.rules.at(i).sameAs(&r) {
			return r, ErrExists
		}
	}
	x.rules.insert(to, e)
	x.changed = true
	return r, nil
}

// prefRange is where the rules of preference p are: [from, to).
func (x *Txn) prefRange(p uint32) (from, to int) {
	from, to = x.rules.search(p), x.rules.len()
	if p < ^uint32(0) {
		to = x.rules.search(p + 1)
	}
	return from, to
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
	for i := 0; i < x.rules.len(); i++ {
		if e := x.rules.at(i); sel.selects(&e.Rule) {
			x.rules.remove(i)
			x.changed = true
			return e.Rule, nil
		}
	}
	return Rule{}, ErrNotFound
}

// DeleteWhere removes every rule del says so of, and returns how many.
func (x *Txn) DeleteWhere(del func(*Rule) bool) int {
	all := x.rules.flat()
	n := len(all)
	kept := slices.DeleteFunc(all, func(e *entry) bool { return del(&e.Rule) })
	if n -= len(kept); n > 0 {
		x.rules, x.changed = editor{seq: seqOf(kept), gen: x.rules.gen}, true
		return n
	}
	return 0
}

// Relink resolves the rules' link names again, after a link came, went or
// was renamed, and publishes what changed.
func (g *Registry) Relink() {
	x := g.Begin()
	for i := 0; i < x.rules.len(); i++ {
		e := x.rules.at(i)
		if e.Iif == "" && e.Oif == "" {
			continue
		}
		n := newEntry(&e.Rule, g.resolve)
		if n.iif != e.iif || n.oif != e.oif {
			x.rules.replace(i, n)
			x.changed = true
		}
	}
	x.Commit()
}
