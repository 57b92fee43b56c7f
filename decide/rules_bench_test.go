package decide_test

import (
	"fmt"
	"net/netip"
	"testing"

	"urouter/decide"
	"urouter/fib6"
	"urouter/rules"
)

// BenchmarkRuleLookup decides batches of forwarded packets through N
// rules of which the packets match only the last (`from 2001:db8:ffff::/48
// lookup 10`); the others select on other links in, other sources and
// other ports, and would send them to table 20. Targets: rules-1024 within
// 2x rules-1, no allocation.
func BenchmarkRuleLookup(b *testing.B) {
	for _, n := range []int{1, 32, 1024} {
		b.Run(fmt.Sprintf("rules-%d", n), func(b *testing.B) {
			r, ls := newRouter(b, 3)
			addAddr(b, r, ls[0], "2001:db8:91::1/64")
			for _, tid := range []uint32{10, 20} {
				x := r.Tables.Ensure(tid).Begin()
				if err := x.Add(fib6.Route{Dst: netip.MustParsePrefix("2001:db8:50::/48"), Attrs: via(ls[0].Index, "2001:db8:91::2")}); err != nil {
					b.Fatal(err)
				}
				x.Commit()
			}
			x := r.Rules.Begin()
			for i := 1; i < n; i++ {
				rule := rules.Rule{Pref: uint32(i), Action: rules.ToTable, Table: 20}
				switch i % 3 {
				case 0:
					rule.Iif = []string{"d1", "d2"}[i%2]
				case 1:
					rule.Src = netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(i >> 8), byte(i)}), 48)
				default:
					rule.IPProto, rule.Sport = 17, rules.PortRange{Lo: uint16(1000 + 10*i), Hi: uint16(1005 + 10*i)}
				}
				if _, err := x.Add(rule, true); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := x.Add(rules.Rule{Pref: uint32(n), Src: netip.MustParsePrefix("2001:db8:ffff::/48"), Action: rules.ToTable, Table: 10}, true); err != nil {
				b.Fatal(err)
			}
			x.Commit()
			keys := make([]decide.Key, decide.MaxBatch)
			for i := range keys {
				keys[i] = decide.Key{Packet: rules.Packet{
					Dst: [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0x50, 8: byte(i), 15: 1},
					Src: [16]byte{0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 15: byte(i)},
					Iif: ls[0].Index, Proto: 17, Sport: 50000 + uint16(i), Dport: 53,
				}}
			}
			out := make([]decide.Result, len(keys))
			var bt decide.Batch
			r.Decider.DecideBatch(&bt, keys, out)
			for i := range out {
				if out[i].Verdict != decide.Forward || out[i].Table != 10 || out[i].Rule != uint32(n) {
					b.Fatalf("packet %d: %+v", i, out[i])
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.Decider.DecideBatch(&bt, keys, out)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/packet")
		})
	}
}
