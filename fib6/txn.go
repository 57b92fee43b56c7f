package fib6

import (
	"net/netip"
	"slices"
	"time"
)

// Transactions: a table's writer lock, the changes made under it (add,
// replace, append, prepend, delete, expiry) and their publish.

// Begin opens a transaction on the table, waiting for the one open, if any.
// Changes made in it are invisible to readers until Commit publishes them
// all at once.
func (t *Table) Begin() *Txn {
	t.mu.Lock()
	return t.begin()
}

// TryBegin opens a transaction if none is open, and reports whether it
// did: housekeeping uses it so that it never waits for a table a client
// is writing.
func (t *Table) TryBegin() (*Txn, bool) {
	if !t.mu.TryLock() {
		return nil, false
	}
	return t.begin(), true
}

func (t *Table) begin() *Txn {
	t.lastTxn++
	x := &t.txn
	x.t = t
	x.n = 0
	x.changes = x.changes[:0]
	x.watched = t.watch.Load() != nil
	t.trie.begin(&x.tx, t.lastTxn)
	if t.size.Load() == 0 {
		x.tx.startBulk()
	}
	return x
}

// Expect tells the transaction that about n changes follow (a batch's
// size says so). A load into an empty table that comes out of order is
// buffered, and its buffer's index is then made for them at once: grown
// from small by doubling, it is rebuilt again and again, each rebuild a
// cache miss per prefix and fresh memory (a full table's ~5 ms, a third
// of its build). A wrong guess costs only that: too low, the index grows
// from there; too high, it takes more memory until the commit (up to
// expectMax's index, whatever the guess: it may be a client's word).
func (x *Txn) Expect(n int) {
	if x.tx.bulk.on {
		x.tx.bulk.expect = min(max(n, 0), expectMax)
	}
}

// expectMax is the most prefixes Expect sizes an index for: 2M, twice
// the Internet's IPv4 table, an index of 16 MB.
const expectMax = 1 << 21

// Txn is an open transaction of one table.
type Txn struct {
	t       *Table
	tx      trieTxn
	n       int // changes made
	watched bool
	changes []Change
	gone    *dnode // a flush's emptied version, for the watcher (see Changes)
	goneN   int
}

// ChangeOp says what happened to a route.
type ChangeOp uint8

const (
	Added ChangeOp = iota + 1
	Deleted
)

// Change is one route added or deleted, as monitors see it.
type Change struct {
	Op    ChangeOp
	Table uint32
	Route Route
}

// SetHelper gives the transaction what starts a helper goroutine, when a
// large load out of order is built in two halves at once (at commit, or
// whatever else first needs the trie): the caller's writer may run at a
// lowered priority (see dataplane.Pacer), which its helper should share.
// Without one the helper is a plain goroutine.
func (x *Txn) SetHelper(start func(work func())) { x.tx.helper = start }

// Table is the transaction's table.
func (x *Txn) Table() *Table { return x.t }

// Commit publishes the transaction's changes with one atomic store, bumps
// the generation, tells the table's watcher, and closes the transaction.
func (x *Txn) Commit() {
	t := x.t
	if x.n > 0 {
		start := time.Now()
		x.tx.commit()
		t.publishes.observe(time.Since(start))
		t.gen.Add(1)
		if t.allGen != nil {
			t.allGen.Add(1)
		}
	}
	changes := x.told()
	t.expiring.Store(len(t.expiry) > 0)
	t.mu.Unlock()
	if w := t.watch.Load(); w != nil && changes != nil {
		(*w)(t, changes)
	}
}

type putMode uint8

const (
	modeAdd putMode = iota
	modeReplace
	modeAppend
	modePrepend
)

// Add adds r; a route with the same destination, source and metric must not
// exist (`ip route add`).
func (x *Txn) Add(r Route) error { return x.put(r, modeAdd) }

// Replace adds r or replaces the route with its destination, source and
// metric (`ip route replace`).
func (x *Txn) Replace(r Route) error { return x.put(r, modeReplace) }

// Append adds r after the routes with its metric (`ip route append`); only
// an identical route is refused.
func (x *Txn) Append(r Route) error { return x.put(r, modeAppend) }

// Prepend adds r before the routes with its metric (`ip route prepend`).
func (x *Txn) Prepend(r Route) error { return x.put(r, modePrepend) }

func (x *Txn) put(r Route, mode putMode) error {
	if err := r.normalize(); err != nil {
		return err
	}
	t := x.t
	k := prefixKey(r.Dst)
	plen := r.Dst.Bits()
	ref := t.ref(&r.Attrs)
	// A new destination, the common case, takes one walk of the trie.
	cur := x.tx.insert(k, plen, ref.single)
	if cur == nil {
		x.added(r.Dst, ref, r.Expires)
		return nil
	}
	if err := x.putOn(cur, k, plen, r, ref, mode); err != nil {
		return x.refused(ref, err)
	}
	return nil
}

// AddEach adds r with each of dsts for its destination in turn, as Add
// of each would, and stops at the first that fails: it returns how many
// it added and that one's error, having changed nothing for it. A batch's
// run of lines that differ only in their prefix (a table's) so checks
// and interns the route once.
func (x *Txn) AddEach(r Route, dsts []netip.Prefix) (int, error) {
	if len(dsts) == 0 {
		return 0, nil
	}
	r.Dst = dsts[0]
	if err := r.normalize(); err != nil {
		return 0, err
	}
	t := x.t
	ref := t.ref(&r.Attrs)
	for i, d := range dsts {
		if i > 0 {
			if err := checkPrefix("destination", d); err != nil {
				return i, x.refused(ref, err)
			}
		}
		k, plen := prefixKey(d), d.Bits()
		cur := x.tx.insert(k, plen, ref.single)
		if cur == nil {
			x.added(d, ref, r.Expires)
			continue
		}
		r.Dst = d
		if err := x.putOn(cur, k, plen, r, ref, modeAdd); err != nil {
			return i, x.refused(ref, err)
		}
	}
	return len(dsts), nil
}

// refused is err, a change refused: ref is dropped if nothing took it.
func (x *Txn) refused(ref *attrsRef, err error) error {
	if ref.refs == 0 {
		x.t.drop(ref)
	}
	return err
}

func (x *Txn) added(dst netip.Prefix, ref *attrsRef, expires int64) {
	ref.refs++
	x.n++
	x.note(Added, dst, ref)
	x.t.size.Add(1)
	if expires != 0 {
		x.t.expiry[dst]++
	}
}

// putOn adds r to the routes cur of its destination. An append or prepend
// of a gateway route to one of the same metric and source coalesces into
// that route's paths, added after its own, as Linux makes IPv6 ECMP
// siblings (iproute2 shows them as one multipath route).
func (x *Txn) putOn(cur *rset, k key, plen int, r Route, ref *attrsRef, mode putMode) error {
	t := x.t
	old := cur.routes
	at := -1       // insert position
	replaced := -1 // index in old of the route replaced
	for i, a := range old {
		same := a.Src == r.Src && a.Metric == r.Metric
		switch mode {
		case modeAdd:
			if same {
				return ErrExists
			}
		case modeReplace:
			if same && replaced < 0 {
				replaced = i
			}
		case modeAppend, modePrepend:
			if a == ref || same && duplicate(&a.Attrs, &r.Attrs) {
				return ErrExists
			}
			if same && replaced < 0 && a.multipath() && r.multipath() {
				merged, err := coalesce(&a.Attrs, &r.Attrs)
				if err != nil {
					return err
				}
				if ref.refs == 0 {
					t.drop(ref)
				}
				r.Attrs, ref, replaced = merged, t.ref(&merged), i
			}
		}
		if at < 0 && (a.Metric > r.Metric || a.Metric == r.Metric && mode == modePrepend) {
			at = i
		}
	}
	if at < 0 {
		at = len(old)
	}
	var set *rset
	switch {
	case len(old) == 0 || len(old) == 1 && replaced == 0:
		set = ref.single
	case replaced >= 0:
		routes := slices.Clone(old)
		routes[replaced] = ref
		set = newRset(routes)
	default:
		set = newRset(slices.Insert(slices.Clip(old), at, ref))
	}
	x.tx.set(k, plen, set)
	ref.refs++
	x.n++
	if replaced >= 0 {
		x.note(Deleted, r.Dst, old[replaced])
	}
	x.note(Added, r.Dst, ref)
	if replaced >= 0 {
		t.unref(r.Dst, old[replaced])
	} else {
		t.size.Add(1)
	}
	if r.Expires != 0 {
		t.expiry[r.Dst]++
	}
	return nil
}

// Delete removes the first route that m selects (`ip route del`).
func (x *Txn) Delete(m Match) (Route, error) {
	if err := checkPrefix("destination", m.Dst); err != nil {
		return Route{}, err
	}
	if m.Src.IsValid() && m.Src.Bits() == 0 {
		m.Src = netip.Prefix{}
	}
	k := prefixKey(m.Dst)
	cur := x.tx.get(k, m.Dst.Bits())
	if cur == nil {
		return Route{}, ErrNoRoute
	}
	for i, a := range cur.routes {
		if ok, path := m.matches(&a.Attrs); ok {
			if path >= 0 {
				return x.removePath(m.Dst, k, cur, i, path), nil
			}
			x.remove(m.Dst, k, cur, i)
			return Route{Dst: m.Dst, Attrs: a.Attrs}, nil
		}
	}
	return Route{}, ErrNoRoute
}

func (x *Txn) remove(dst netip.Prefix, k key, cur *rset, i int) {
	a := cur.routes[i]
	var set *rset
	if len(cur.routes) > 1 {
		set = newRset(slices.Delete(slices.Clone(cur.routes), i, i+1))
	}
	x.tx.set(k, dst.Bits(), set)
	x.n++
	x.note(Deleted, dst, a)
	x.t.unref(dst, a)
	x.t.size.Add(-1)
}

// Untold keeps the transaction's changes from the table's watchers (`ip
// monitor`): Linux's net.ipv6.route.skip_notify_on_dev_down keeps what a
// link going down deletes from them.
func (x *Txn) Untold() {
	x.watched = false
	x.changes = x.changes[:0]
}

func (x *Txn) note(op ChangeOp, dst netip.Prefix, a *attrsRef) {
	if x.watched {
		x.changes = append(x.changes, Change{Op: op, Table: x.t.id, Route: Route{Dst: dst, Attrs: a.Attrs}})
	}
}

// ref returns the table's shared copy of a, whose group, if any, becomes
// the table's shared copy of an equal one.
func (t *Table) ref(a *Attrs) *attrsRef {
	if l := t.last; l != nil && l.Attrs == *a {
		return l
	}
	if a.Group != nil {
		t.keyBuf = a.Group.AppendKey(t.keyBuf[:0])
		if g := t.groups[string(t.keyBuf)]; g != nil {
			a.Group = g.g
		}
	}
	r := t.intern[*a]
	if r == nil {
		r = &attrsRef{Attrs: *a}
		r.single = &rset{routes: []*attrsRef{r}, hasSrc: a.Src.IsValid()}
		if !a.Src.IsValid() {
			r.single.best = &r.Attrs
		}
		t.intern[*a] = r
		if a.Group != nil {
			g := t.groups[string(t.keyBuf)]
			if g == nil {
				g = &groupRef{g: a.Group}
				t.groups[string(t.keyBuf)] = g
			}
			g.refs++
		}
	}
	t.last = r
	return r
}

func (t *Table) drop(r *attrsRef) {
	delete(t.intern, r.Attrs)
	if t.last == r {
		t.last = nil
	}
	if r.Group != nil {
		t.keyBuf = r.Group.AppendKey(t.keyBuf[:0])
		if g := t.groups[string(t.keyBuf)]; g != nil {
			if g.refs--; g.refs == 0 {
				delete(t.groups, string(t.keyBuf))
			}
		}
	}
}

func (t *Table) unref(dst netip.Prefix, r *attrsRef) {
	r.refs--
	if r.refs == 0 {
		t.drop(r)
	}
	if r.Expires != 0 {
		if t.expiry[dst]--; t.expiry[dst] <= 0 {
			delete(t.expiry, dst)
		}
	}
}

// Expiring reports whether the table has routes with an expiry time, as
// of its last publish.
func (t *Table) Expiring() bool { return t.expiring.Load() }

// Expire deletes, in the transaction, the routes whose expiry time (Unix
// nanoseconds) has come, and returns how many it deleted.
func (x *Txn) Expire(now int64) int {
	t := x.t
	n := 0
	// remove may delete dst from t.expiry, which a range allows
	for dst := range t.expiry {
		k := prefixKey(dst)
		for {
			cur := x.tx.get(k, dst.Bits())
			i := -1
			if cur != nil {
				i = slices.IndexFunc(cur.routes, func(a *attrsRef) bool { return a.Expires != 0 && a.Expires <= now })
			}
			if i < 0 {
				break
			}
			x.remove(dst, k, cur, i)
			n++
		}
	}
	return n
}

// Lookup returns the route a packet to dst without a source takes in the
// table as the open transaction sees it, its own uncommitted changes
// included: what Table.Lookup(dst, netip.Addr{}) will return once the
// transaction commits (for ECMP, the best path, as Lookup does). It changes
// nothing, so a transaction of one change keeps its in-place store.
func (x *Txn) Lookup(dst netip.Addr) *Attrs {
	_, a, _ := x.Get(dst, netip.Addr{}, nil)
	return a
}

// Get is Table.Get in the table as the open transaction sees it.
func (x *Txn) Get(dst, src netip.Addr, score Score) (netip.Prefix, *Attrs, bool) {
	a := dst.As16()
	var buf [16]match
	x.tx.settle()
	return get(matchesIn(&x.tx, denseEntry(x.tx.root), keyOf(&a), buf[:0]), src, score)
}

// Has reports whether the table, as the open transaction sees it, has a
// route of destination dst from src with metric: what a route's owner
// (a route feed) asks after a delete that may have left it or not.
func (x *Txn) Has(dst, src netip.Prefix, metric uint32) bool {
	if !dst.IsValid() {
		return false
	}
	if src.IsValid() && src.Bits() == 0 {
		src = netip.Prefix{}
	}
	cur := x.tx.get(prefixKey(dst), dst.Bits())
	return cur != nil && slices.ContainsFunc(cur.routes, func(a *attrsRef) bool { return a.Src == src && a.Metric == metric })
}
