package fib6

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"urouter/nexthop"
)

// TestStress runs writers and readers at once (run it with -race). Each
// transaction moves a whole set of routes to a new version, spread over
// many dense slots and compressed nodes so that commits copy and merge;
// readers check that they never see part of a transaction: once a route of
// version v is visible, every route of the set shows v or later. Other
// writers add and delete routes at random in the same table and in a
// second table, in parallel.
func TestStress(t *testing.T) {
	ts := NewTables()
	tab := ts.Ensure(100)
	other := ts.Ensure(101)
	var dsts []netip.Prefix
	for i := 0; i < 64; i++ {
		// spread over root slots, depth-8 and depth-16 slots, deep nodes
		b := [16]byte{0x20, byte(i % 4), byte(i * 37), byte(i), 0, 0, byte(i), 0}
		dsts = append(dsts, netip.PrefixFrom(netip.AddrFrom16(b), 32+(i%5)*8).Masked())
	}
	x := tab.Begin()
	for _, d := range dsts {
		if err := x.Add(Route{Dst: d, Attrs: stressVersion(1)}); err != nil {
			t.Fatal(err)
		}
	}
	x.Commit()

	const versions = 400
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var torn, seen atomic.Int64
	for w := 0; w < 3; w++ {
		wg.Go(func() { readVersions(t, tab, dsts, stop, &torn, &seen) })
	}
	wg.Go(func() { writeNoise(t, tab, stop) })
	wg.Go(func() { writeOther(t, other, stop) })
	for v := 2; v <= versions; v++ {
		x := tab.Begin()
		for _, d := range dsts {
			if err := x.Replace(Route{Dst: d, Attrs: stressVersion(v)}); err != nil {
				t.Error(err)
			}
		}
		x.Commit()
		if v%50 == 0 {
			time.Sleep(time.Millisecond) // let readers catch many versions
		}
	}
	close(stop)
	wg.Wait()
	if torn.Load() > 0 {
		t.Fatalf("%d torn reads", torn.Load())
	}
	if seen.Load() == 0 {
		t.Fatal("readers saw nothing")
	}
	for _, d := range dsts {
		if a := tab.Lookup(d.Addr(), netip.Addr{}); a == nil || a.Nexthop.Link != versions {
			t.Fatalf("%s: %v, want version %d", d, a, versions)
		}
	}
	if err := tab.trie.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d consistent reads", seen.Load())
}

// stressVersion is version v of the stress test's routes: its link.
func stressVersion(v int) Attrs {
	return Attrs{Metric: 10, Nexthop: nexthop.Nexthop{Link: int32(v)}}
}

// readVersions looks up every route of dsts, until stop, and counts a
// read torn if a route shows an older version than the first one did.
func readVersions(t *testing.T, tab *Table, dsts []netip.Prefix, stop chan struct{}, torn, seen *atomic.Int64) {
	addrs := make([]netip.Addr, len(dsts))
	for i, d := range dsts {
		addrs[i] = d.Addr()
	}
	out := make([]*Attrs, len(addrs))
	keys := keysOf(addrs)
	for {
		select {
		case <-stop:
			return
		default:
		}
		first := tab.Lookup(addrs[0], netip.Addr{})
		if first == nil {
			torn.Add(1)
			continue
		}
		v := first.Nexthop.Link
		tab.LookupKeys(keys, nil, out, nil)
		for i, p := range out {
			if p == nil || p.Nexthop.Link < v {
				torn.Add(1)
				t.Errorf("route %s at version %v after seeing version %d", dsts[i], p, v)
				return
			}
		}
		seen.Add(1)
	}
}

// writeNoise makes single-route transactions in the same table, until
// stop: /64s beside the versioned routes, added and every other one
// deleted again.
func writeNoise(t *testing.T, tab *Table, stop chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		p := netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, byte(i % 4), byte(i * 37), byte(i % 64), 0x80, byte(i)}), 64)
		x := tab.Begin()
		// an add of a /64 kept from an earlier round is refused (exists)
		if x.Add(Route{Dst: p, Attrs: stressVersion(1)}) == nil && i%2 == 0 {
			if _, err := x.Delete(Match{Dst: p}); err != nil {
				t.Error(err)
			}
		}
		x.Commit()
	}
}

// writeOther writes another table in parallel, until stop.
func writeOther(t *testing.T, other *Table, stop chan struct{}) {
	for i := 1; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		p := netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 1, byte(i)}), 24)
		x := other.Begin()
		if err := x.Replace(Route{Dst: p, Attrs: stressVersion(i)}); err != nil {
			t.Error(err)
		}
		x.Commit()
		other.Lookup(p.Addr(), netip.Addr{})
	}
}
