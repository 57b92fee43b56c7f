package router

import (
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"urouter/rules"

	"urouter/decide"
	"urouter/fib6"
	"urouter/nexthop"
)

// TestRouteAddRacesNexthopDelete: clients add routes through nexthop
// objects while another deletes and re-adds those objects and a reader
// decides flows through them. Whatever the interleaving, once everything
// has settled no route points at a removed object (DESIGN.md rule 4: a
// route add racing a nexthop delete ends in a defined state), and no
// reader ever sees a route through a removed object take a path it does
// not have. Run it with -race.
func TestRouteAddRacesNexthopDelete(t *testing.T) {
	r := New()
	l, err := r.AddDummy("d0", 1500)
	must(t, err)
	must(t, r.SetUp(l, true))
	must(t, r.AddAddr(l, pfx("2001:db8:91::1/64")))
	gw := netip.MustParseAddr("2001:db8:91::2")
	addObjects := func() error {
		_, err1 := r.Nexthops.Add(nexthop.Spec{ID: 1, Family: nexthop.FamilyInet6, Nexthop: nexthop.Nexthop{Gateway: gw, Link: l.Index}}, true)
		_, err2 := r.Nexthops.Add(nexthop.Spec{ID: 2, Family: nexthop.FamilyInet6, Nexthop: nexthop.Nexthop{Gateway: gw.Next(), Link: l.Index}}, true)
		// group 10 may still be there (only 2 went): it is kept, refused
		_, _ = r.Nexthops.Add(nexthop.Spec{ID: 10, Group: []nexthop.Entry{{ID: 1, Weight: 1}, {ID: 2, Weight: 1}}}, false)
		return errors.Join(err1, err2)
	}
	must(t, addObjects())
	tab := r.Tables.Ensure(100)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var added, refused atomic.Int64
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				id := uint32(1)
				if i%2 == 0 {
					id = 10
				}
				o := r.Nexthops.Get(id)
				if o == nil {
					continue
				}
				x := tab.Begin()
				dst := netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(c), byte(i >> 8), byte(i), 15: 0}), 48)
				if err := x.Add(fib6.Route{Dst: dst, Attrs: fib6.Attrs{Metric: 1024, Type: fib6.Unicast, Object: o}}); err != nil {
					refused.Add(1)
				} else {
					added.Add(1)
				}
				x.Commit()
			}
		}(c)
	}
	wg.Add(1)
	go func() { // a reader: every decision through an object names a path of it
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			k := decide.Key{Packet: rules.Packet{Dst: [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(i >> 8), byte(i), 15: 1}, Src: [16]byte{0xfd, 15: byte(i)}}}
			res := r.Decider.Decide(&k)
			if res.Verdict == decide.Forward && res.Path.Gateway != gw && res.Path.Gateway != gw.Next() {
				t.Errorf("a flow took path %v", res.Path)
				return
			}
		}
	}()
	deadline := time.Now().Add(3 * time.Second)
	for round := 0; time.Now().Before(deadline) && (added.Load() < 3000 || refused.Load() < 300 || round < 300); round++ {
		time.Sleep(100 * time.Microsecond)
		switch round % 3 {
		case 0:
			must(t, r.DeleteNexthop(2)) // group 10 shrinks
		case 1:
			must(t, r.DeleteNexthop(1)) // 1 goes, group 10 empties and goes
		case 2:
			must(t, addObjects())
		}
	}
	stop.Store(true)
	wg.Wait()
	// whichever the last round left
	_ = r.DeleteNexthop(1)
	_ = r.DeleteNexthop(2)
	n := 0
	tab.Dump(fib6.Filter{}, func(rt fib6.Route) bool {
		n++
		if rt.Object != nil && !rt.Object.Alive() {
			t.Errorf("route %s points at removed nexthop %d", rt.Dst, rt.Object.ID())
		}
		return true
	})
	if n != 0 {
		t.Errorf("%d routes survive their objects", n)
	}
	if added.Load() == 0 || refused.Load() == 0 {
		t.Errorf("added %d, refused %d: the race was not met both ways", added.Load(), refused.Load())
	}
}
