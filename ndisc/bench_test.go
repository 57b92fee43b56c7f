package ndisc

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"testing"
)

// lockedResolve is the fast path as Linux had it before "ipv6: Avoid
// rt6_probe() taking writer lock in the fast path": every packet takes
// the entry's write lock to read its state.
func (t *Table) lockedResolve(addr netip.Addr) (MAC, bool) {
	e := t.Lookup(addr)
	if e == nil {
		return MAC{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state&fast == 0 {
		return MAC{}, false
	}
	if now := t.Clock.Load(); e.used.Load() != now {
		e.used.Store(now)
	}
	return e.mac, true
}

// BenchmarkNeighResolve resolves a REACHABLE neighbour from 1, 2 and 8
// goroutines (RunParallel), through the lock-free fast path and through
// the entry's lock.
func BenchmarkNeighResolve(b *testing.B) {
	for _, variant := range []string{"lockfree", "mutex"} {
		for _, n := range []int{1, 2, 8} {
			b.Run(fmt.Sprintf("%s-%d", variant, n), func(b *testing.B) {
				tbl, _, _ := testTable(DefaultParams())
				tbl.Clock = &coarse // the real clock, advancing as it does under traffic
				if err := tbl.Set(target, macA, true, Reachable, 0, Add); err != nil {
					b.Fatal(err)
				}
				procs := min(n, runtime.NumCPU())
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				b.SetParallelism((n + procs - 1) / procs) // n goroutines
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					var sink MAC
					for pb.Next() {
						var m MAC
						var ok bool
						if variant == "lockfree" {
							e := tbl.Lookup(target)
							m, ok = e.Fast(tbl.Clock)
						} else {
							m, ok = tbl.lockedResolve(target)
						}
						if !ok {
							panic("not resolved")
						}
						sink = m
					}
					_ = sink
				})
			})
		}
	}
}

// TestFastPathRace hammers the fast path while the entry changes state
// and MAC, and entries come and go: under -race, and the MAC read is
// always one that was published with a state that sends.
func TestFastPathRace(t *testing.T) {
	tbl, _, clk := testTable(DefaultParams())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if m, ok := tbl.Output(target, []byte{1}); ok && m != macA && m != macB {
					t.Errorf("torn MAC %v", m)
					return
				}
			}
		}()
	}
	for i := 0; i < 20000; i++ {
		switch i % 6 {
		case 0:
			tbl.Advertised(target, Advert{MAC: macA, HasMAC: true, Solicited: true, Override: true})
		case 1:
			tbl.Advertised(target, Advert{MAC: macB, HasMAC: true, Override: true})
		case 2:
			clk.Add(int64(DefaultParams().BaseReachable))
			tbl.Run(clk.Load())
		case 3:
			tbl.Solicited(target, macA)
		case 4:
			if i%60 == 4 {
				_ = tbl.Delete(target) // gone already, or not: the race is the point
			}
		case 5:
			tbl.Dump()
		}
	}
	close(stop)
	wg.Wait()
}
