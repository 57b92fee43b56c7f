package router

import (
	"errors"
	"net/netip"
	"runtime"
	"testing"

	"urouter/fib6"
	"urouter/internal/realtable"
	"urouter/nexthop"
	"urouter/rules"
)

// benchRuleInsert adds 1,024 rules `from all table N`, N = 1..1024, each
// its own change (as 1,024 `ip rule add` commands), to a fresh router's
// rule set, b.N times.
func benchRuleInsert(b *testing.B, r func() *Router) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		rt := r()
		b.StartTimer()
		for n := uint32(1); n <= 1024; n++ {
			x := rt.Rules.Begin()
			if _, err := x.Add(rules.Rule{Action: rules.ToTable, Table: n}, false); err != nil {
				b.Fatal(err)
			}
			x.Commit()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/rule")
}

// BenchmarkRuleInsert: 1,024 rule adds into an empty router.
func BenchmarkRuleInsert(b *testing.B) { benchRuleInsert(b, func() *Router { return New() }) }

// BenchmarkRuleInsertFullTable: the same, with the real table's 160,147
// IPv6 routes in main: a rule change must cost what it costs without.
func BenchmarkRuleInsertFullTable(b *testing.B) {
	full := loadFullTable(b)
	benchRuleInsert(b, func() *Router {
		x := full.Rules.Begin() // back to the defaults, the table stays
		x.DeleteWhere(func(r *rules.Rule) bool { return r.Protocol != rules.ProtoKernel })
		x.Commit()
		return full
	})
}

func loadFullTable(b *testing.B) *Router {
	r := New()
	l, err := r.AddDummy("d0", 1500)
	if err != nil {
		b.Fatal(err)
	}
	if err := errors.Join(r.SetUp(l, true), r.AddAddr(l, netip.MustParsePrefix("2001:db8:91::1/64"))); err != nil {
		b.Fatal(err)
	}
	x := r.Tables.Main().Begin()
	nh := nexthop.Nexthop{Link: l.Index, Gateway: netip.MustParseAddr("2001:db8:91::2")}
	for _, p := range realtable.MustLoad(b) {
		_ = x.Add(fib6.Route{Dst: p, Attrs: fib6.Attrs{Metric: 1024, Nexthop: nh}}) // what lands is checked below
	}
	x.Commit()
	if n := r.Tables.Main().Len(); n < 160000 {
		b.Fatalf("main holds %d routes", n)
	}
	runtime.GC() // the loader's garbage is not the rules' to collect
	return r
}
