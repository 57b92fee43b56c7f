package fib6

import (
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"urouter/nexthop"
)

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

// Table is one routing table. Lookups never lock and never allocate: they
// load the published trie. Writers take the table's own mutex, so writers
// to different tables run in parallel.
type Table struct {
	id   uint32
	trie *trie
	gen  atomic.Uint64
	size atomic.Int64 // routes

	mu      sync.Mutex // held by the open transaction
	txn     Txn
	lastTxn uint64
	intern  map[Attrs]*attrsRef
	last    *attrsRef
	expiry  map[netip.Prefix]int // destinations with expiring routes -> how many
	// expiring is len(expiry) > 0 as of the last commit, for housekeeping
	// that looks without the lock
	expiring atomic.Bool
	watch    *atomic.Pointer[Watcher]
}

// Watcher hears every committed change of every table of a registry.
type Watcher func(t *Table, changes []Change)

func newTable(id uint32, watch *atomic.Pointer[Watcher]) *Table {
	if watch == nil {
		watch = new(atomic.Pointer[Watcher])
	}
	return &Table{
		id:     id,
		trie:   newTrie(),
		intern: make(map[Attrs]*attrsRef),
		expiry: make(map[netip.Prefix]int),
		watch:  watch,
	}
}

// ID is the table's number.
func (t *Table) ID() uint32 { return t.id }

// Generation counts the table's publishes; a cache built from a lookup is
// valid while the generation it saw is current.
func (t *Table) Generation() uint64 { return t.gen.Load() }

// Len is the number of routes in the table.
func (t *Table) Len() int { return int(t.size.Load()) }

// Lookup returns the route a packet to dst from src takes: the longest
// matching destination, then, where source-specific routes exist, the
// longest matching source (Linux's IPv6 subtrees). nil means no route.
func (t *Table) Lookup(dst, src netip.Addr) *Attrs {
	a := dst.As16()
	r := t.trie.lookup(&a)
	if r == nil {
		return nil
	}
	if !r.hasSrc {
		return r.paths.Route
	}
	if _, p, ok := t.Get(dst, src, nil); ok {
		return p.Route
	}
	return nil
}

// LookupKeys looks up the destinations of a batch of packets, as the
// bytes of their headers (no conversion per address), interleaving their
// memory accesses; out[i] is the paths Lookup(dsts[i], srcs[i]) finds
// (nil for none). srcs may be nil; a source of all zeros (the unspecified
// address) counts as none.
func (t *Table) LookupKeys(dsts [][16]byte, srcs [][16]byte, out []*Paths) {
	var sets [batchWidth]*rset
	for base := 0; base < len(dsts); base += batchWidth {
		n := min(batchWidth, len(dsts)-base)
		t.trie.lookupKeys(dsts[base:base+n], sets[:n])
		for j := 0; j < n; j++ {
			r := sets[j]
			switch {
			case r == nil:
				out[base+j] = nil
			case !r.hasSrc:
				out[base+j] = &r.paths
			default: // Lookup's slow path: the set found has source routes
				var src netip.Addr
				if srcs != nil && srcs[base+j] != ([16]byte{}) {
					src = netip.AddrFrom16(srcs[base+j])
				}
				_, p, _ := t.Get(netip.AddrFrom16(dsts[base+j]), src, nil)
				out[base+j] = p
			}
		}
	}
}

// Get is the slow, explaining lookup: it returns the prefix that matched
// and its paths. accept, if not nil, skips routes it refuses (and the
// lookup goes on to shorter prefixes), as a lookup with oif skips reject
// routes; the route it accepts is returned as a single path.
func (t *Table) Get(dst, src netip.Addr, accept func(*Attrs) bool) (netip.Prefix, *Paths, bool) {
	a := dst.As16()
	var buf [16]match
	for _, m := range t.trie.matches(keyOf(&a), buf[:0]) {
		if accept == nil && !m.r.hasSrc && m.r.paths.Route != nil {
			return m.p, &m.r.paths, true
		}
		if r, ok := pick(m, src, accept); ok {
			return m.p, &r.single.paths, true
		}
	}
	return netip.Prefix{}, nil, false
}

// pick chooses among the routes of one matching prefix. A prefix with
// source-specific routes hides its plain routes from every source its
// source prefixes do not cover, except ::/0, which falls back to them
// (Linux 6.18 behaves so; see DESIGN.md).
func pick(m match, src netip.Addr, accept func(*Attrs) bool) (*attrsRef, bool) {
	ok := func(a *attrsRef) bool { return accept == nil || accept(&a.Attrs) }
	if !m.r.hasSrc {
		for _, a := range m.r.routes {
			if ok(a) {
				return a, true
			}
		}
		return nil, false
	}
	if src.IsValid() {
		var best *attrsRef
		for _, a := range m.r.routes {
			if a.Src.IsValid() && a.Src.Contains(src) && ok(a) &&
				(best == nil || a.Src.Bits() > best.Src.Bits()) {
				best = a
			}
		}
		if best != nil {
			return best, true
		}
	}
	if m.p.Bits() == 0 {
		for _, a := range m.r.routes {
			if !a.Src.IsValid() && ok(a) {
				return a, true
			}
		}
	}
	return nil, false
}

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
	return x
}

// Txn is an open transaction of one table.
type Txn struct {
	t       *Table
	tx      trieTxn
	n       int // changes made
	watched bool
	changes []Change
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

// Table is the transaction's table.
func (x *Txn) Table() *Table { return x.t }

// Commit publishes the transaction's changes with one atomic store, bumps
// the generation, tells the table's watcher, and closes the transaction.
func (x *Txn) Commit() {
	t := x.t
	if x.n > 0 {
		x.tx.commit()
		t.gen.Add(1)
	}
	var changes []Change
	if len(x.changes) > 0 {
		changes = slices.Clone(x.changes)
	}
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
	err := x.putOn(cur, k, plen, r, ref, mode)
	if err != nil && ref.refs == 0 {
		t.drop(ref)
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

// putOn adds r to the routes cur of its destination.
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
		case modeAppend:
			if a == ref {
				return ErrExists
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
	x.note(Added, r.Dst, ref)
	if replaced >= 0 {
		x.note(Deleted, r.Dst, old[replaced])
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
		if m.matches(&a.Attrs) {
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

func (x *Txn) note(op ChangeOp, dst netip.Prefix, a *attrsRef) {
	if x.watched {
		x.changes = append(x.changes, Change{Op: op, Table: x.t.id, Route: Route{Dst: dst, Attrs: a.Attrs}})
	}
}

// ref returns the table's shared copy of a.
func (t *Table) ref(a *Attrs) *attrsRef {
	if l := t.last; l != nil && l.Attrs == *a {
		return l
	}
	r := t.intern[*a]
	if r == nil {
		r = &attrsRef{Attrs: *a}
		r.single = &rset{routes: []*attrsRef{r}, hasSrc: a.Src.IsValid()}
		// a source route's own paths serve the slow path that picks it
		r.single.paths.Route = &r.Attrs
		t.intern[*a] = r
	}
	t.last = r
	return r
}

func (t *Table) drop(r *attrsRef) {
	delete(t.intern, r.Attrs)
	if t.last == r {
		t.last = nil
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

func (f *Filter) selects(dst netip.Prefix, a *Attrs) bool {
	if f.Proto != 0 && a.Proto != f.Proto || f.Type != 0 && a.Type != f.Type ||
		f.Link != 0 && a.Nexthop.Link != f.Link || f.Gateway.IsValid() && a.Nexthop.Gateway != f.Gateway {
		return false
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
	emit := func(p netip.Prefix, r *rset) bool {
		for _, a := range r.routes {
			if f.selects(p, &a.Attrs) && !fn(Route{Dst: p, Attrs: a.Attrs}) {
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
// returns how many.
func (t *Table) Flush(f Filter) int {
	var victims []Route
	x := t.Begin()
	defer x.Commit()
	t.Dump(f, func(r Route) bool { victims = append(victims, r); return true })
	n := 0
	for _, r := range victims {
		if _, err := x.Delete(Match{Dst: r.Dst, Src: r.Src, Metric: r.Metric, Proto: r.Proto, Type: r.Type,
			Gateway: r.Nexthop.Gateway, Link: r.Nexthop.Link}); err == nil {
			n++
		}
	}
	return n
}

// Tables is the set of routing tables, by id. Readers find a table without
// a lock; creating one takes the registry's own mutex, which no route
// change ever needs.
type Tables struct {
	mu    sync.Mutex
	all   atomic.Pointer[map[uint32]*Table]
	main  *Table
	local *Table
	watch atomic.Pointer[Watcher]
}

// NewTables returns the registry with local (255), main (254) and default
// (253).
func NewTables() *Tables {
	ts := &Tables{}
	m := map[uint32]*Table{}
	for _, id := range []uint32{TableLocal, TableMain, TableDefault} {
		m[id] = newTable(id, &ts.watch)
	}
	ts.main, ts.local = m[TableMain], m[TableLocal]
	ts.all.Store(&m)
	return ts
}

// Watch makes w hear every change committed from now on; nil stops it.
// Transactions record changes only while someone watches.
func (ts *Tables) Watch(w Watcher) {
	if w == nil {
		ts.watch.Store(nil)
	} else {
		ts.watch.Store(&w)
	}
}

// Main and Local are the two tables every lookup starts with.
func (ts *Tables) Main() *Table  { return ts.main }
func (ts *Tables) Local() *Table { return ts.local }

// Get returns table id, or nil if it does not exist yet.
func (ts *Tables) Get(id uint32) *Table { return (*ts.all.Load())[id] }

// Ensure returns table id, creating it on first use as Linux does.
func (ts *Tables) Ensure(id uint32) *Table {
	if t := ts.Get(id); t != nil {
		return t
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	old := *ts.all.Load()
	if t := old[id]; t != nil {
		return t
	}
	m := maps.Clone(old)
	t := newTable(id, &ts.watch)
	m[id] = t
	ts.all.Store(&m)
	return t
}

// All returns every table, by id.
func (ts *Tables) All() []*Table {
	m := *ts.all.Load()
	out := make([]*Table, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Table) int { return int(int64(a.id) - int64(b.id)) })
	return out
}
