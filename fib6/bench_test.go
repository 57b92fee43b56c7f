package fib6

import (
	"math/rand/v2"
	"net/netip"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gaissmai/bart"

	"urouter/nexthop"
)

// The benchmarks load the real table (testdata/prefixes.txt.gz) into fib6
// and into bart, the best Go LPM table, in the same run. Sub-benchmark
// fib6 is the lookup the dataplane makes (LookupKeys: a batch of a packet
// batch's destinations, as header bytes); fib6-addr is the same batch as
// netip.Addr values; fib6-single is one lookup at a time.

var benchRoute = Attrs{
	Metric:  DefaultMetric,
	Type:    Unicast,
	Proto:   ProtoStatic,
	Nexthop: nexthop.Nexthop{Gateway: netip.MustParseAddr("2001:db8:91::2"), Link: 2},
}

var (
	realOnce sync.Once
	realPfx  []netip.Prefix
)

func realTable(b *testing.B) []netip.Prefix {
	realOnce.Do(func() { realPfx = loadRealTable(b) })
	return realPfx
}

// probes returns n addresses inside random prefixes of the table.
func probes(ps []netip.Prefix, n int) []netip.Addr {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]netip.Addr, n)
	for i := range out {
		p := ps[r.IntN(len(ps))]
		b := p.Addr().As16()
		for j := p.Bits(); j < 128; j++ {
			if r.IntN(2) == 1 {
				b[j/8] |= 0x80 >> (j % 8)
			}
		}
		out[i] = netip.AddrFrom16(b)
	}
	return out
}

func loadFib6(tb testing.TB, ps []netip.Prefix) *Table {
	t := newTable(TableMain, nil)
	x := t.Begin()
	for _, p := range ps {
		if err := x.Add(Route{Dst: p, Attrs: benchRoute}); err != nil {
			tb.Fatal(err)
		}
	}
	x.Commit()
	return t
}

func loadBartFast(ps []netip.Prefix) *bart.Fast[*Attrs] {
	f := new(bart.Fast[*Attrs])
	v := &benchRoute
	for _, p := range ps {
		f.Insert(p, v)
	}
	return f
}

func loadBartTable(ps []netip.Prefix) *bart.Table[*Attrs] {
	f := new(bart.Table[*Attrs])
	v := &benchRoute
	for _, p := range ps {
		f.Insert(p, v)
	}
	return f
}

var sinkAttrs *Attrs

func benchLookups(b *testing.B, n int) {
	ps := realTable(b)
	addrs := probes(ps, n)
	t := loadFib6(b, ps)
	fast := loadBartFast(ps)
	tab := loadBartTable(ps)
	const batch = 64
	keys := keysOf(addrs)
	batched := func(fromAddrs bool) func(*testing.B) {
		return func(b *testing.B) {
			out := make([]*Attrs, batch)
			var conv [batch][16]byte
			var s *Attrs
			for i := 0; i < b.N; i += batch {
				j := i & (n - 1)
				ks := keys[j : j+batch]
				if fromAddrs { // a caller holding netip.Addr values converts them
					for x, a := range addrs[j : j+batch] {
						conv[x] = a.As16()
					}
					ks = conv[:]
				}
				t.LookupKeys(ks, nil, out, nil)
				s = out[batch-1]
			}
			sinkAttrs = s
		}
	}
	b.Run("fib6", batched(false))
	b.Run("fib6-addr", batched(true))
	b.Run("fib6-single", func(b *testing.B) {
		var s *Attrs
		for i := 0; i < b.N; i++ {
			s = t.Lookup(addrs[i&(n-1)], netip.Addr{})
		}
		sinkAttrs = s
	})
	b.Run("bart-fast", func(b *testing.B) {
		var s *Attrs
		for i := 0; i < b.N; i++ {
			s, _ = fast.Lookup(addrs[i&(n-1)])
		}
		sinkAttrs = s
	})
	b.Run("bart-table", func(b *testing.B) {
		var s *Attrs
		for i := 0; i < b.N; i++ {
			s, _ = tab.Lookup(addrs[i&(n-1)])
		}
		sinkAttrs = s
	})
}

// BenchmarkLookupHot: 1,024 probe addresses, cycled; the table's hot paths
// stay in cache.
func BenchmarkLookupHot(b *testing.B) { benchLookups(b, 1024) }

// BenchmarkLookupCold: 1<<20 probe addresses; most lookups miss the cache.
func BenchmarkLookupCold(b *testing.B) { benchLookups(b, 1<<20) }

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkLoad builds the whole IPv6 table: fib6 in one transaction, bart
// by in-place Insert. B/pfx is the heap the built table holds, per prefix.
func BenchmarkLoad(b *testing.B) {
	ps := realTable(b)
	measure := func(b *testing.B, build func() any) {
		var keep any
		var bytes uint64
		for i := 0; i < b.N; i++ {
			keep = nil
			b.StopTimer()
			before := heapInUse()
			b.StartTimer()
			keep = build()
			b.StopTimer()
			bytes += heapInUse() - before
			b.StartTimer()
		}
		runtime.KeepAlive(keep)
		b.ReportMetric(float64(bytes)/float64(b.N)/float64(len(ps)), "B/pfx")
	}
	b.Run("fib6", func(b *testing.B) { measure(b, func() any { return loadFib6(b, ps) }) })
	// the same prefixes in a random order (a file or feed that is not
	// sorted), fixed by the seed
	shuffled := slices.Clone(ps)
	rand.New(rand.NewPCG(6, 6)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b.Run("fib6-shuffled", func(b *testing.B) { measure(b, func() any { return loadFib6(b, shuffled) }) })
	// the shuffled prefixes in runs of 32 (AddEach: a batch's lines that
	// differ only in their prefix, as the control layer adds them)
	b.Run("fib6-shuffled-each", func(b *testing.B) {
		measure(b, func() any {
			t := newTable(TableMain, nil)
			x := t.Begin()
			for i := 0; i < len(shuffled); i += 32 {
				run := shuffled[i:min(i+32, len(shuffled))]
				if n, err := x.AddEach(Route{Attrs: benchRoute}, run); n != len(run) {
					b.Fatal(err)
				}
			}
			x.Commit()
			return t
		})
	})
	b.Run("bart-table", func(b *testing.B) { measure(b, func() any { return loadBartTable(ps) }) })
	b.Run("bart-fast", func(b *testing.B) { measure(b, func() any { return loadBartFast(ps) }) })
}

// publishPrefixes are /64s inside random table prefixes.
func publishPrefixes(ps []netip.Prefix) []netip.Prefix {
	out := make([]netip.Prefix, 1024)
	for i, a := range probes(ps, len(out)) {
		out[i] = netip.PrefixFrom(a, 64).Masked()
	}
	return out
}

// BenchmarkPublish adds and deletes one /64 in the full table, publishing
// each change: fib6's writer path against bart's persistent insert and
// delete plus an atomic pointer store.
func BenchmarkPublish(b *testing.B) {
	ps := realTable(b)
	pubs := publishPrefixes(ps)
	b.Run("fib6", func(b *testing.B) {
		t := loadFib6(b, ps)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p := pubs[i&1023]
			x := t.Begin()
			err := x.Add(Route{Dst: p, Attrs: benchRoute})
			x.Commit()
			if err != nil {
				continue // the /64 is in the table already
			}
			x = t.Begin()
			if _, err := x.Delete(Match{Dst: p}); err != nil {
				b.Fatal(err)
			}
			x.Commit()
		}
	})
	b.Run("bart-table", func(b *testing.B) {
		var cur atomic.Pointer[bart.Table[*Attrs]]
		cur.Store(loadBartTable(ps))
		v := &benchRoute
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p := pubs[i&1023]
			if _, ok := cur.Load().Get(p); ok {
				continue
			}
			cur.Store(cur.Load().InsertPersist(p, v))
			cur.Store(cur.Load().DeletePersist(p))
		}
	})
}

// BenchmarkLookupUnderWrites: fib6 lookups while the table is idle, and
// while one goroutine publishes changes without pause. It runs the
// collector as the daemon does (GCPercent); gogc100-idle and -writing
// are the same under Go's default, for comparison.
func BenchmarkLookupUnderWrites(b *testing.B) {
	ps := realTable(b)
	addrs := probes(ps, 1<<16)
	keys := keysOf(addrs)
	pubs := publishPrefixes(ps)
	run := func(b *testing.B, write bool) {
		t := loadFib6(b, ps)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		if write {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					p := pubs[i&1023]
					x := t.Begin()
					if x.Add(Route{Dst: p, Attrs: benchRoute}) == nil {
						x.Commit()
						x = t.Begin()
						if _, err := x.Delete(Match{Dst: p}); err != nil {
							b.Error(err)
						}
					}
					x.Commit()
				}
			}()
		}
		out := make([]*Attrs, 64)
		b.ResetTimer()
		for i := 0; i < b.N; i += 64 {
			j := i & (len(addrs) - 1)
			t.LookupKeys(keys[j:j+64], nil, out, nil)
		}
		b.StopTimer()
		close(stop)
		wg.Wait()
	}
	gc := func(percent int, f func(*testing.B)) func(*testing.B) {
		return func(b *testing.B) {
			defer debug.SetGCPercent(debug.SetGCPercent(percent))
			f(b)
		}
	}
	b.Run("idle", gc(GCPercent, func(b *testing.B) { run(b, false) }))
	b.Run("writing", gc(GCPercent, func(b *testing.B) { run(b, true) }))
	b.Run("gogc100-idle", gc(100, func(b *testing.B) { run(b, false) }))
	b.Run("gogc100-writing", gc(100, func(b *testing.B) { run(b, true) }))
}

// BenchmarkParallelTables: 200,000 routes into one table by one writer,
// against 100,000 each into two tables by two writers at once.
func BenchmarkParallelTables(b *testing.B) {
	const total = 200000
	routes := func(n int) []Route {
		rs := make([]Route, n)
		for i := range rs {
			// 2001:I:J::/64 as the control benchmark's (A) case
			a := netip.AddrFrom16([16]byte{0x20, 0x01, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)})
			rs[i] = Route{Dst: netip.PrefixFrom(a, 64), Attrs: Attrs{Nexthop: nexthop.Nexthop{Link: 2}}}
		}
		return rs
	}
	fill := func(t *Table, rs []Route) {
		x := t.Begin()
		for _, r := range rs {
			if err := x.Add(r); err != nil {
				panic(err)
			}
		}
		x.Commit()
	}
	b.Run("one-writer", func(b *testing.B) {
		rs := routes(total)
		for i := 0; i < b.N; i++ {
			fill(NewTables().Ensure(100), rs)
		}
	})
	b.Run("two-writers", func(b *testing.B) {
		rs := routes(total / 2)
		for i := 0; i < b.N; i++ {
			ts := NewTables()
			var wg sync.WaitGroup
			for _, id := range []uint32{100, 101} {
				wg.Add(1)
				go func(t *Table) { defer wg.Done(); fill(t, rs) }(ts.Ensure(id))
			}
			wg.Wait()
		}
	})
}
