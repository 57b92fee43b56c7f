package fib6

import (
	"net/netip"
	"strconv"
	"testing"

	"urouter/nexthop"
)

// paths returns n gateways on link 2, 2001:db8:91::2 and on.
func benchPaths(n int) []nexthop.Member {
	ms := make([]nexthop.Member, n)
	gw := netip.MustParseAddr("2001:db8:91::2")
	for i := range ms {
		ms[i] = nexthop.Member{Nexthop: nexthop.Nexthop{Gateway: gw, Link: 2}, Weight: 1}
		gw = gw.Next()
	}
	return ms
}

// benchObject returns a registry's object for n paths: nexthop 1 for one,
// else group n+1 of nexthops 1..n.
func benchObject(tb testing.TB, n int) (*nexthop.Registry, *nexthop.Object) {
	r := nexthop.NewRegistry(nil)
	var o *nexthop.Object
	var es []nexthop.Entry
	for i, m := range benchPaths(n) {
		var err error
		o, err = r.Add(nexthop.Spec{ID: uint32(i + 1), Family: nexthop.FamilyInet6, Nexthop: m.Nexthop}, false)
		if err != nil {
			tb.Fatal(err)
		}
		es = append(es, nexthop.Entry{ID: uint32(i + 1), Weight: 1})
	}
	if n > 1 {
		var err error
		if o, err = r.Add(nexthop.Spec{ID: uint32(n + 1), Group: es}, false); err != nil {
			tb.Fatal(err)
		}
	}
	return r, o
}

// BenchmarkRouteInsertPaths loads the real table's 160,147 prefixes in one
// transaction with routes of 1, 4 and 16 paths: inline (each route
// carries its paths, as `route add P nexthop via A ... nexthop via B ...`
// gives them; the table keeps one copy of equal ones) against nexthop
// objects (`nhid N`), and plain single-path routes. ns/op is one full
// table.
func BenchmarkRouteInsertPaths(b *testing.B) {
	ps := realTable(b)
	load := func(b *testing.B, attrs func() Attrs) {
		for i := 0; i < b.N; i++ {
			t := newTable(100, nil)
			x := t.Begin()
			for _, p := range ps {
				if err := x.Add(Route{Dst: p, Attrs: attrs()}); err != nil {
					b.Fatal(err)
				}
			}
			x.Commit()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ps)), "ns/route")
	}
	for _, n := range []int{1, 4, 16} {
		b.Run("inline-"+strconv.Itoa(n), func(b *testing.B) {
			ms := benchPaths(n)
			load(b, func() Attrs {
				a := Attrs{Metric: DefaultMetric, Type: Unicast, Proto: ProtoBoot}
				if n == 1 {
					a.Nexthop = ms[0].Nexthop
				} else {
					a.Group = nexthop.NewGroup(ms)
				}
				return a
			})
		})
	}
	for _, n := range []int{1, 4, 16} {
		b.Run("nhid-"+strconv.Itoa(n), func(b *testing.B) {
			_, o := benchObject(b, n)
			a := Attrs{Metric: DefaultMetric, Type: Unicast, Proto: ProtoBoot, Object: o}
			load(b, func() Attrs { return a })
		})
	}
	b.Run("plain", func(b *testing.B) {
		a := Attrs{Metric: DefaultMetric, Type: Unicast, Proto: ProtoBoot, Nexthop: benchPaths(1)[0].Nexthop}
		load(b, func() Attrs { return a })
	})
}

// BenchmarkGroupReplace re-points every route of a table by replacing the
// one group they share (`nexthop replace id 17 group ...`, alternating
// between two member sets): the same cost for one route as for the full
// table, since no route is touched.
func BenchmarkGroupReplace(b *testing.B) {
	ps := realTable(b)
	for _, n := range []int{1, len(ps)} {
		b.Run("routes-"+strconv.Itoa(n), func(b *testing.B) {
			r, o := benchObject(b, 16)
			t := newTable(100, nil)
			x := t.Begin()
			for _, p := range ps[:n] {
				if err := x.Add(Route{Dst: p, Attrs: Attrs{Metric: DefaultMetric, Type: Unicast, Object: o}}); err != nil {
					b.Fatal(err)
				}
			}
			x.Commit()
			sets := [2][]nexthop.Entry{}
			for i := 1; i <= 16; i++ {
				sets[0] = append(sets[0], nexthop.Entry{ID: uint32(i), Weight: 1})
				sets[1] = append(sets[1], nexthop.Entry{ID: uint32(i), Weight: uint32(1 + i%3)})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.Add(nexthop.Spec{ID: o.ID(), Group: sets[i&1]}, true); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			want := sets[(b.N-1)&1][1].Weight
			if a := t.Lookup(ps[0].Addr(), netip.Addr{}); a.Object.Load().Paths.Member(1).Weight != want {
				b.Fatal("the route does not see the replaced group")
			}
		})
	}
}
