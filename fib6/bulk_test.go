package fib6

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"unsafe"

	"urouter/internal/racebuild"
	"urouter/nexthop"
)

// sameTrie reports the first difference between two tries' structures:
// node kinds, classes, vectors, flags, defaults, locals, tails, owners and
// the route sets stored (as eq compares them: tables intern their own),
// so that a bulk-built trie can be held to be exactly the one the
// incremental path builds. The error names where, as the path of slots
// (/s) and entries (.i) from the root: built on the way back from a
// difference, as a path formatted at every node cost most of the time of
// a comparison of large tries.
func sameTrie(a, b unsafe.Pointer, eq func(r, s *rset) bool) error {
	if tagOf(a) != tagOf(b) {
		return fmt.Errorf(": kinds %d and %d", tagOf(a), tagOf(b))
	}
	sameLocals := func(l, m *locals) error {
		if l.len() != m.len() || l != nil && m != nil && (l.short != m.short || l.owner != m.owner || !slices.EqualFunc(l.vals, m.vals, eq)) {
			return fmt.Errorf(": locals differ: %+v and %+v", l, m)
		}
		return nil
	}
	switch tagOf(a) {
	case tagRset:
		if !eq(asRset(a), asRset(b)) {
			return fmt.Errorf(": route sets differ")
		}
	case tagTail:
		if ta, tb := *asTail(a), *asTail(b); ta.k != tb.k || ta.plen != tb.plen || ta.fringe != tb.fringe || !eq(ta.val, tb.val) || !eq(ta.dflt, tb.dflt) {
			return fmt.Errorf(": tails %+v and %+v", *asTail(a), *asTail(b))
		}
	case tagDense:
		d, e := asDense(a), asDense(b)
		if !eq(d.dflt, e.dflt) || d.fringe != e.fringe || !slices.EqualFunc(d.fval, e.fval, eq) || d.owner != e.owner {
			return fmt.Errorf(": dense nodes differ")
		}
		if err := sameLocals(d.loc, e.loc); err != nil {
			return err
		}
		for s := range d.slots {
			if err := sameTrie(d.slots[s], e.slots[s], eq); err != nil {
				return fmt.Errorf("/%d%w", s, err)
			}
		}
	case tagNode:
		n, m := asNode(a), asNode(b)
		if n.cum != m.cum || n.flags != m.flags || n.cls != m.cls || n.vec != m.vec || !eq(n.dflt, m.dflt) || n.cold().owner != m.cold().owner {
			return fmt.Errorf(": nodes differ: %+v and %+v", *n, *m)
		}
		if err := sameLocals(n.cold().loc, m.cold().loc); err != nil {
			return err
		}
		for i := 0; i < n.entries(); i++ {
			if err := sameTrie(n.entryAt(i), m.entryAt(i), eq); err != nil {
				return fmt.Errorf(".%d%w", i, err)
			}
		}
	}
	return nil
}

func sameTries(t *testing.T, a, b *trie, eq func(r, s *rset) bool) {
	t.Helper()
	if err := sameTrie(denseEntry(a.root.Load()), denseEntry(b.root.Load()), eq); err != nil {
		t.Fatal(err)
	}
}

func sameSet(r, s *rset) bool { return r == s }

// sameRoutes compares route sets of two tables by their routes.
func sameRoutes(r, s *rset) bool {
	if r == nil || s == nil {
		return r == s
	}
	return r.hasSrc == s.hasSrc && r.choice == s.choice && slices.EqualFunc(r.routes, s.routes, func(a, b *attrsRef) bool { return sameAttrs(&a.Attrs, &b.Attrs) })
}

// TestBulkRealTable loads the real table bottom-up and incrementally, in
// order and shuffled, and holds the two tries to be the same, then to stay
// the same through the same deletes and adds in small transactions.
func TestBulkRealTable(t *testing.T) {
	ps := realTableSized(t)
	t.Run("sorted", func(t *testing.T) { checkBulkRealTable(t, ps) })
	shuffled := slices.Clone(ps)
	rand.New(rand.NewPCG(6, 6)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	t.Run("shuffled", func(t *testing.T) { checkBulkRealTable(t, shuffled) })
}

// TestBulkSplit loads, shuffled, a table large enough that its build is
// split in two (settleBuf), whose prefixes crowd in 2000::/4 so that the
// halves split inside it, with short prefixes (below /8) that reach slots
// of both halves and /8s among them: the bottom-up trie must be the
// incremental one.
func TestBulkSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	seen := map[netip.Prefix]bool{}
	var ps []netip.Prefix
	for _, p := range []string{"::/0", "2000::/3", "2000::/4", "2400::/6", "2600::/7", "2500::/8", "2a00::/8", "2f00::/8", "3000::/4"} {
		ps = append(ps, netip.MustParsePrefix(p))
	}
	for len(ps) < splitSettle+splitSettle/4 {
		var a [16]byte
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		a[0] = 0x20 | a[0]&0x0f
		p := netip.PrefixFrom(netip.AddrFrom16(a), 9+r.IntN(56)).Masked()
		if !seen[p] {
			seen[p] = true
			ps = append(ps, p)
		}
	}
	r.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	checkBulkRealTable(t, ps)
}

func checkBulkRealTable(t *testing.T, ps []netip.Prefix) {
	sets := testSets(5)
	bulk, inc := newTrie(), newTrie()
	ref := refTrie{}
	var x, y trieTxn
	bulk.begin(&x, 1)
	x.startBulk()
	inc.begin(&y, 1)
	for i, p := range ps {
		k := prefixKey(p)
		if x.insert(k, p.Bits(), sets[i%5]) != nil || y.insert(k, p.Bits(), sets[i%5]) != nil {
			t.Fatalf("%s found", p)
		}
		ref[p] = sets[i%5]
	}
	if !x.bulk.bottomUp() {
		t.Fatal("the load was not built bottom-up")
	}
	x.commit()
	y.commit()
	sameTries(t, bulk, inc, sameSet)
	r := rand.New(rand.NewPCG(3, 3))
	checkTrie(t, bulk, ref, r)
	for i := 0; i < racebuild.Sized(40, 6); i++ {
		bulk.begin(&x, uint64(2+i))
		inc.begin(&y, uint64(2+i))
		for j := 0; j < 1+r.IntN(200); j++ {
			p := ps[r.IntN(len(ps))]
			v := sets[r.IntN(5)]
			if r.IntN(2) == 0 {
				v = nil
				delete(ref, p)
			} else {
				p = netip.PrefixFrom(probe(r, p), min(128, p.Bits()+r.IntN(30))).Masked()
				ref[p] = v
			}
			x.set(prefixKey(p), p.Bits(), v)
			y.set(prefixKey(p), p.Bits(), v)
		}
		x.commit()
		y.commit()
		sameTries(t, bulk, inc, sameSet)
	}
	checkTrie(t, bulk, ref, r)
}

// loadOps draws a load of n routes for an empty table, in prefix order
// (or shuffled) with what real loads bring now and then: more routes of a
// destination, a replace, a duplicate; and at settleAt one change that
// ends the bottom-up build (a route out of order, a delete, a lookup in
// the view; a shuffled load takes the first in its buffer).
func loadOps(r *rand.Rand, n, settleAt int, shuffled bool) []func(*Txn, *refTable) (error, error) {
	var seeds []netip.Prefix
	routes := make([]Route, n)
	for i := range routes {
		routes[i] = randRoute(r, seeds)
		seeds = append(seeds, routes[i].Dst)
	}
	slices.SortStableFunc(routes, func(a, b Route) int { return comparePrefix(a.Dst, b.Dst) })
	if shuffled {
		r.Shuffle(len(routes), func(i, j int) { routes[i], routes[j] = routes[j], routes[i] })
	}
	var ops []func(*Txn, *refTable) (error, error)
	put := func(rt Route, mode putMode) {
		ops = append(ops, func(x *Txn, m *refTable) (error, error) { return x.put(rt, mode), m.put(rt, mode) })
	}
	for i, rt := range routes {
		if i == settleAt {
			switch r.IntN(3) {
			case 0:
				put(routes[r.IntN(i)], modeAdd)
			case 1:
				q := Match{Dst: routes[r.IntN(i)].Dst}
				ops = append(ops, func(x *Txn, m *refTable) (error, error) {
					_, want := m.del(q)
					_, got := x.Delete(q)
					return got, want
				})
			case 2:
				ops = append(ops, func(x *Txn, m *refTable) (error, error) {
					x.Lookup(rt.Dst.Addr())
					return nil, nil
				})
			}
		}
		mode := modeAdd
		switch d := r.IntN(60); {
		case d == 0:
			mode = modeReplace
		case d == 1:
			mode = modeAppend
		case d == 2:
			mode = modePrepend
		case d == 3 && i > 0:
			put(routes[i-1], modeAdd) // a duplicate, or another metric
		}
		put(rt, mode)
	}
	return ops
}

// TestBulkModel loads random tables into empty tables (small ones, below
// the bottom-up threshold, and large ones; in order and shuffled), one
// bottom-up and one the
// incremental way (a lookup in the view first settles it), against the
// model; then churns them: lookups, dumps, sizes, generations, watcher
// changes and the tries' structures must agree throughout.
func TestBulkModel(t *testing.T) {
	for seed := uint64(1); seed <= uint64(racebuild.Sized(12, 6)); seed++ {
		n := []int{1, 40, 1000, 3000, 6000}[seed%5]
		settleAt := -1
		if seed%3 == 0 {
			settleAt = n * 2 / 3
		}
		rounds := racebuild.Sized(10, 3)
		checkBulkLoad(t, rand.New(rand.NewPCG(seed, 11)), n, settleAt, rounds, false)
		checkBulkLoad(t, rand.New(rand.NewPCG(seed, 12)), n, settleAt, rounds, true)
	}
}

// checkBulkLoad loads n routes (see loadOps) into two empty tables, one
// bottom-up, one the incremental way, then churns both for rounds
// transactions, holding them to the model and to each other.
func checkBulkLoad(t *testing.T, r *rand.Rand, n, settleAt, rounds int, shuffled bool) {
	t.Helper()
	ops := loadOps(r, n, settleAt, shuffled)
	var seen [2][]Change
	tabs := [2]*Table{}
	for i := range tabs {
		w := Watcher(func(_ *Table, cs *Changes) { seen[i] = slices.AppendSeq(seen[i], cs.All()) })
		tabs[i] = newTable(100, nil)
		tabs[i].watch.Store(&w)
	}
	models := [2]*refTable{newRefTable(), newRefTable()}
	for i, tab := range tabs {
		x := tab.Begin()
		if i == 1 {
			x.Lookup(netip.IPv6Unspecified()) // settles: incremental from here
		}
		for _, op := range ops {
			if got, want := op(x, models[i]); !sameErr(got, want) {
				t.Fatalf("load: got %v want %v", got, want)
			}
		}
		if i == 0 && n >= 2*compactOps && (settleAt < 0 || settleAt >= 2*compactOps) && !x.tx.bulk.bottomUp() {
			t.Fatal("the load was not built bottom-up")
		}
		x.Commit()
	}
	var seeds []netip.Prefix
	for round := 0; ; round++ {
		for i, tab := range tabs {
			checkTable(t, tab, models[i], r)
		}
		sameTries(t, tabs[0].trie, tabs[1].trie, sameRoutes)
		if tabs[0].Generation() != tabs[1].Generation() || tabs[0].Len() != tabs[1].Len() {
			t.Fatalf("round %d: generations %d, %d, sizes %d, %d", round, tabs[0].Generation(), tabs[1].Generation(), tabs[0].Len(), tabs[1].Len())
		}
		if !slices.EqualFunc(seen[0], seen[1], func(a, b Change) bool { return a.Op == b.Op && sameRoute(a.Route, b.Route) }) {
			t.Fatalf("round %d: watchers heard different changes", round)
		}
		if round == rounds {
			return
		}
		// the same churn for both
		churn := make([]Route, 1+r.IntN(80))
		modes := make([]int, len(churn))
		for i := range churn {
			churn[i], modes[i] = nextRoute(r, models[0], &seeds), r.IntN(5)
		}
		for i, tab := range tabs {
			x := tab.Begin()
			for j, rt := range churn {
				var got, want error
				if modes[j] == 4 {
					_, want = models[i].del(Match{Dst: rt.Dst, Src: rt.Src})
					_, got = x.Delete(Match{Dst: rt.Dst, Src: rt.Src})
				} else {
					want, got = models[i].put(rt, putMode(modes[j])), x.put(rt, putMode(modes[j]))
				}
				if !sameErr(got, want) {
					t.Fatalf("churn %v: got %v want %v", rt, got, want)
				}
			}
			x.Commit()
		}
	}
}

// TestBulkSingle: one route into an empty table is the one stored slot
// the incremental path makes, and a lone transaction's lookup of it
// inside the view answers before commit.
func TestBulkSingle(t *testing.T) {
	tab := newTable(100, nil)
	root := tab.trie.root.Load()
	x := tab.Begin()
	rt := Route{Dst: netip.MustParsePrefix("2001:db8::/32"), Attrs: Attrs{Nexthop: nexthop.Nexthop{Link: 1}}}
	if err := x.Add(rt); err != nil {
		t.Fatal(err)
	}
	if x.Lookup(netip.MustParseAddr("2001:db8::1")) == nil {
		t.Fatal("the view misses the route")
	}
	x.Commit()
	if tab.trie.root.Load() != root {
		t.Fatal("one route copied the root")
	}
	if tab.Lookup(netip.MustParseAddr("2001:db8::1"), netip.Addr{}) == nil || tab.Len() != 1 {
		t.Fatal("the route is missing")
	}
}

// BenchmarkSortBuffer: settling an out-of-order load's sort alone, the
// real table shuffled. ns/op is per prefix.
func BenchmarkSortBuffer(b *testing.B) {
	ps := slices.Clone(realTable(b))
	rand.New(rand.NewPCG(6, 6)).Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	var bb bulkBuf
	bb.init(64)
	for _, p := range ps {
		k := prefixKey(p)
		_, s := bb.find(k, p.Bits())
		bb.add(bulkEntry{k: k, plen: p.Bits()}, s)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i += len(ps) {
		bb.sorted()
	}
}

// TestBulkExpect loads the real table shuffled, told how many prefixes
// come (Txn.Expect): the buffer's index is made for them once and never
// grows, and the table is the one a load told nothing builds. A guess too
// low grows the index from there, one on a table that is not empty (no
// bulk load) changes nothing; both build the same table.
func TestBulkExpect(t *testing.T) {
	ps := slices.Clone(realTableSized(t))
	rand.New(rand.NewPCG(6, 6)).Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	load := func(expect int, grows bool) *Table {
		t.Helper()
		tab := newTable(TableMain, nil)
		x := tab.Begin()
		x.Expect(expect)
		size := 0
		for i, p := range ps {
			if err := x.Add(Route{Dst: p, Attrs: benchRoute}); err != nil {
				t.Fatal(p, err)
			}
			if n := len(x.tx.bulk.buf.idx); i == compactOps+1 {
				size = n
			} else if i > compactOps+1 && n != size && !grows {
				t.Fatalf("after %d of %d prefixes expected, the index grew from %d to %d slots", i+1, expect, size, n)
			}
		}
		if grows && size == len(x.tx.bulk.buf.idx) {
			t.Fatalf("told %d of %d prefixes, the index did not grow from %d slots", expect, len(ps), size)
		}
		x.Commit()
		if got := tab.Len(); got != len(ps) {
			t.Fatalf("%d routes, want %d", got, len(ps))
		}
		return tab
	}
	want := load(0, true)
	sameTries(t, load(len(ps), false).trie, want.trie, sameRoutes)
	sameTries(t, load(len(ps)/8, true).trie, want.trie, sameRoutes)

	// a table with routes takes its changes one by one: nothing to size
	x := want.Begin()
	x.Expect(1 << 20)
	if x.tx.bulk.on || x.tx.bulk.expect != 0 {
		t.Fatal("a table with routes began a bulk load")
	}
	x.Commit()
}
