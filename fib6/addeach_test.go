package fib6

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"urouter/nexthop"
)

// TestAddEach holds AddEach to Add of each destination in turn: into an
// empty table (a load that comes in order, one out of order, both past
// the bottom-up threshold) and into a full one, with duplicates, routes
// of another metric already there, host bits, an IPv4 prefix and a bad
// first destination among the runs. What each run added, the first error,
// the tries, sizes, the routes' sharing and the changes a watcher heard
// must all be the same.
func TestAddEach(t *testing.T) {
	for _, c := range []struct {
		name     string
		n        int
		shuffled bool
		preload  bool
	}{{"small", 300, true, false}, {"in order", 5000, false, false}, {"shuffled", 5000, true, false}, {"into a table", 3000, true, true}} {
		t.Run(c.name, func(t *testing.T) { checkAddEach(t, rand.New(rand.NewPCG(uint64(c.n), 7)), c.n, c.shuffled, c.preload) })
	}
}

func checkAddEach(t *testing.T, r *rand.Rand, n int, shuffled, preload bool) {
	dsts := addEachDsts(r, n, shuffled)
	rt := Route{Attrs: Attrs{Type: Unicast, Proto: ProtoBoot, Metric: DefaultMetric,
		Nexthop: nexthop.Nexthop{Gateway: netip.MustParseAddr("2001:db8:91::2"), Link: 3}}}
	tabs, seen := twinTables(dsts, rt, preload)
	x, y := tabs[0].Begin(), tabs[1].Begin()
	bad := rt
	bad.Type = Type(200)
	if _, err := x.AddEach(bad, dsts[:3]); err == nil || tabs[0].Len() != tabs[1].Len() {
		t.Fatalf("a bad route: %v, %d routes", err, tabs[0].Len())
	}
	addEachRuns(t, r, x, y, rt, dsts)
	// refused at once, with a route nothing else holds: it is not kept
	other := rt
	other.Dst = netip.MustParsePrefix("2001:db8:ffff::/48")
	if x.Add(other) != nil || y.Add(other) != nil {
		t.Fatal("2001:db8:ffff::/48 is there")
	}
	other.Nexthop.Gateway = netip.MustParseAddr("2001:db8:91::4")
	interned := len(tabs[0].intern)
	if n, err := x.AddEach(other, []netip.Prefix{other.Dst, dsts[1]}); n != 0 || err == nil || len(tabs[0].intern) != interned {
		t.Fatalf("a run whose first is there: added %d (%v), %d interned, want %d", n, err, len(tabs[0].intern), interned)
	}
	if !shuffled && !preload && !x.tx.bulk.bottomUp() {
		t.Fatal("the load was not built bottom-up")
	}
	x.Commit()
	y.Commit()
	sameTwins(t, tabs, seen)
}

// addEachDsts draws about n destinations, in order or shuffled, with a
// duplicate now and then and, among them, odd ones: host bits, an IPv4
// prefix, a zero prefix.
func addEachDsts(r *rand.Rand, n int, shuffled bool) []netip.Prefix {
	var seeds []netip.Prefix
	dsts := make([]netip.Prefix, n)
	for i := range dsts {
		dsts[i] = randPrefix(r, seeds)
		seeds = append(seeds, dsts[i])
	}
	slices.SortFunc(dsts, comparePrefix)
	dsts = slices.Compact(dsts)
	if shuffled {
		r.Shuffle(len(dsts), func(i, j int) { dsts[i], dsts[j] = dsts[j], dsts[i] })
	}
	odd := []netip.Prefix{netip.MustParsePrefix("2001:db8::1/32"), netip.MustParsePrefix("192.0.2.0/24"), {}}
	for i := 0; i < len(dsts)/50; i++ {
		at := 1 + r.IntN(len(dsts)-1)
		d := dsts[r.IntN(at)] // a duplicate
		if r.IntN(3) == 0 {
			d = odd[r.IntN(len(odd))]
		}
		dsts = slices.Insert(dsts, at, d)
	}
	return dsts
}

// twinTables are two empty tables with watchers that record what they
// hear, or, if preload, two with the same routes of rt to a third of
// dsts, of other metrics.
func twinTables(dsts []netip.Prefix, rt Route, preload bool) (tabs [2]*Table, seen *[2][]Change) {
	seen = new([2][]Change)
	for i := range tabs {
		w := Watcher(func(_ *Table, cs *Changes) { seen[i] = slices.AppendSeq(seen[i], cs.All()) })
		tabs[i] = newTable(100, nil)
		tabs[i].watch.Store(&w)
		if preload {
			x := tabs[i].Begin()
			for j, d := range dsts {
				if j%3 == 0 && d.IsValid() && d.Addr().Is6() {
					other := rt
					other.Dst, other.Metric = d, []uint32{DefaultMetric, 100, 2048}[j%9/3]
					_ = x.Add(other) // the odd ones fail, as they do below
				}
			}
			x.Commit()
		}
	}
	return tabs, seen
}

// addEachRuns adds dsts in runs of random lengths, metrics and gateways:
// each run by AddEach in x and by Add of each in y, which must add as many
// and fail alike. A failed run goes on past the refused destination.
func addEachRuns(t *testing.T, r *rand.Rand, x, y *Txn, rt Route, dsts []netip.Prefix) {
	gws := []netip.Addr{rt.Nexthop.Gateway, netip.MustParseAddr("2001:db8:91::3")}
	fails := 0
	for rest := dsts; len(rest) > 0; {
		run := rest[:min(len(rest), 1+r.IntN(80))]
		// a run's metric: a first that fails leaves a route interned for
		// nothing unless it is dropped
		rt.Metric = []uint32{DefaultMetric, DefaultMetric, 100, 2048, 7}[r.IntN(5)]
		rt.Nexthop.Gateway = gws[r.IntN(len(gws))]
		got, gerr := x.AddEach(rt, run)
		want, werr := len(run), error(nil)
		for i, d := range run {
			one := rt
			one.Dst = d
			if werr = y.Add(one); werr != nil {
				want = i
				break
			}
		}
		if got != want || !sameErr(gerr, werr) {
			t.Fatalf("run %v: added %d (%v), Add of each %d (%v)", run, got, gerr, want, werr)
		}
		if gerr != nil {
			fails++
			got++ // the refused one, as a batch goes on past it
		}
		rest = rest[got:]
	}
	if fails == 0 {
		t.Fatal("no run failed")
	}
}

// sameTwins holds two tables to the same tries, sizes, interned routes
// and their sharing, and the same changes heard.
func sameTwins(t *testing.T, tabs [2]*Table, seen *[2][]Change) {
	sameTries(t, tabs[0].trie, tabs[1].trie, sameRoutes)
	if tabs[0].Len() != tabs[1].Len() || len(tabs[0].intern) != len(tabs[1].intern) {
		t.Fatalf("sizes %d, %d; interned %d, %d", tabs[0].Len(), tabs[1].Len(), len(tabs[0].intern), len(tabs[1].intern))
	}
	for i, tab := range tabs {
		for _, ref := range tab.intern {
			if n := countRefs(tab, ref); n != ref.refs {
				t.Fatalf("table %d: %v has %d refs, counted %d", i, ref.Attrs, ref.refs, n)
			}
		}
	}
	if !slices.EqualFunc(seen[0], seen[1], func(a, b Change) bool { return a.Op == b.Op && sameRoute(a.Route, b.Route) }) {
		t.Fatalf("watchers heard different changes: %d and %d", len(seen[0]), len(seen[1]))
	}
}

// countRefs counts the routes of tab that are ref.
func countRefs(tab *Table, ref *attrsRef) int {
	n := 0
	tab.trie.walk(netip.PrefixFrom(netip.IPv6Unspecified(), 0), func(_ netip.Prefix, s *rset) bool {
		for _, a := range s.routes {
			if a == ref {
				n++
			}
		}
		return true
	})
	return n
}
