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
	version := func(v int) Attrs {
		return Attrs{Metric: 10, Nexthop: nexthop.Nexthop{Link: int32(v)}}
	}
	x := tab.Begin()
	for _, d := range dsts {
		if err := x.Add(Route{Dst: d, Attrs: version(1)}); err != nil {
			t.Fatal(err)
		}
	}
	x.Commit()

	const versions = 400
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var torn atomic.Int64
	var seen atomic.Int64
	for w := 0; w < 3; w++ { // readers
		wg.Add(1)
		go func() {
			defer wg.Done()
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
				tab.LookupKeys(keys, nil, out)
				for i, p := range out {
					if p == nil || p.Nexthop.Link < v {
						torn.Add(1)
						t.Errorf("route %s at version %v after seeing version %d", dsts[i], p, v)
						return
					}
				}
				seen.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() { // noise in the same table: single-route transactions
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, byte(i % 4), byte(i * 37), byte(i % 64), 0x80, byte(i)}), 64)
			x := tab.Begin()
			if x.Add(Route{Dst: p, Attrs: version(0)}) == nil && i%2 == 0 {
				if _, err := x.Delete(Match{Dst: p}); err != nil {
					t.Error(err)
				}
			}
			x.Commit()
		}
	}()
	wg.Add(1)
	go func() { // a writer on another table, in parallel
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 1, byte(i)}), 24)
			x := other.Begin()
			// version(0) is no route (no device): start at 1
			if err := x.Replace(Route{Dst: p, Attrs: version(i + 1)}); err != nil {
				t.Error(err)
			}
			x.Commit()
			other.Lookup(p.Addr(), netip.Addr{})
		}
	}()
	for v := 2; v <= versions; v++ {
		x := tab.Begin()
		for _, d := range dsts {
			if err := x.Replace(Route{Dst: d, Attrs: version(v)}); err != nil {
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
