package decide_test

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"urouter/decide"
	"urouter/fib6"
	"urouter/nexthop"
	"urouter/rules"
)

func decideKey(dst, src string) decide.Key {
	var s netip.Addr
	if src != "" {
		s = netip.MustParseAddr(src)
	}
	return decide.KeyOf(netip.MustParseAddr(dst), s)
}

// TestVerdicts: rule by rule (local, then main), each route type gives its
// verdict; throw and no route go on to the next rule, and past the last
// one nothing decided.
func TestVerdicts(t *testing.T) {
	r, ls := newRouter(t, 1)
	addAddr(t, r, ls[0], "2001:db8:91::1/64")
	for p, typ := range map[string]fib6.Type{
		"2001:db8:66::/48": fib6.Unreachable, "2001:db8:67::/48": fib6.Prohibit,
		"2001:db8:68::/48": fib6.Blackhole, "2001:db8:69::/48": fib6.Throw,
	} {
		addRoute(t, r, p, fib6.Attrs{Metric: 1024, Type: typ})
	}
	for dst, want := range map[string]decide.Verdict{
		"2001:db8:91::1": decide.Local, "2001:db8:91::7": decide.Forward, "2001:db8:66::1": decide.Unreachable,
		"2001:db8:67::1": decide.Prohibit, "2001:db8:68::1": decide.Blackhole, "2001:db8:69::1": decide.NoRoute,
		"2001:db8:70::1": decide.NoRoute,
	} {
		k := decideKey(dst, "")
		res := r.Decider.Decide(&k)
		if res.Verdict != want {
			t.Errorf("%s: verdict %d, want %d", dst, res.Verdict, want)
		}
		if want == decide.Local && (res.Table != fib6.TableLocal || res.Rule != 0) {
			t.Errorf("%s: decided by rule %d table %d", dst, res.Rule, res.Table)
		}
		if want == decide.Forward && (res.Table != fib6.TableMain || res.Rule != 32766 || res.Prefix.String() != "2001:db8:91::/64") {
			t.Errorf("%s: decided by rule %d table %d prefix %s", dst, res.Rule, res.Table, res.Prefix)
		}
	}
}

// TestBatchAgrees: the batch the dataplane decides with and the single
// decision of route get and the router's own packets agree, flow for flow,
// on random tables with multipath, source-specific, throw and reject
// routes in both tables the default rules consult.
func TestBatchAgrees(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 9))
	r, ls := newRouter(t, 3)
	for i, l := range ls {
		addAddr(t, r, l, netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(0x90 + i), 15: 1}), 64).String())
	}
	gw := func(i int) netip.Addr {
		return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(0x90 + i%3), 15: byte(2 + i)})
	}
	types := []fib6.Type{fib6.Unicast, fib6.Unicast, fib6.Unicast, fib6.Throw, fib6.Unreachable, fib6.Blackhole, fib6.Prohibit}
	add := func(t0 *fib6.Table, dst netip.Prefix, a fib6.Attrs) {
		x := t0.Begin()
		// a random route may repeat one already there: it is left out
		if err := x.Append(fib6.Route{Dst: dst, Attrs: a}); err != nil && err != fib6.ErrExists {
			t.Fatal(err)
		}
		x.Commit()
	}
	for i := 0; i < 120; i++ {
		// 2001:db8:X:Y::/48 under a few /32s and /40s
		plen := []int{32, 40, 48, 48, 48}[rnd.IntN(5)]
		dst := netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(rnd.IntN(5)), 0, byte(rnd.IntN(5))}), plen).Masked()
		a := fib6.Attrs{Metric: uint32(1 + rnd.IntN(2)), Type: types[rnd.IntN(len(types))]}
		t0 := r.Tables.Main()
		if rnd.IntN(10) == 0 {
			t0 = r.Tables.Local()
		}
		if a.Type != fib6.Unicast {
			add(t0, dst, a)
			continue
		}
		if rnd.IntN(8) == 0 {
			a.Src = netip.MustParsePrefix("2001:db8:aa::/48")
			a.Nexthop = nexthop.Nexthop{Link: ls[0].Index}
			add(t0, dst, a)
			continue
		}
		for n := 1 + rnd.IntN(3); n > 0; n-- { // siblings: a multipath route
			g := rnd.IntN(6)
			a.Nexthop = nexthop.Nexthop{Link: ls[g%3].Index, Gateway: gw(g)}
			add(t0, dst, a)
		}
	}
	var b decide.Batch
	keys := make([]decide.Key, decide.MaxBatch)
	out := make([]decide.Result, decide.MaxBatch)
	multipath := 0
	for round := 0; round < 200; round++ {
		for i := range keys {
			k := decide.Key{Packet: rules.Packet{Dst: [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(rnd.IntN(6)), 0, byte(rnd.IntN(6)), 15: byte(rnd.IntN(256))},
				Proto: 17, Sport: uint16(rnd.IntN(65536)), Dport: 53}, FlowLabel: uint32(rnd.IntN(1 << 20))}
			if rnd.IntN(4) == 0 {
				k.Src = [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0xaa, 15: 5}
			}
			keys[i] = k
		}
		r.Decider.DecideBatch(&b, keys, out)
		for i := range keys {
			one := r.Decider.Decide(&keys[i])
			got := out[i]
			if got.Verdict != one.Verdict || got.Route != one.Route || got.Table != one.Table || got.Member != one.Member {
				t.Fatalf("key %+v: batch %+v, single %+v", keys[i], got, one)
			}
			if got.Path != one.Path {
				t.Fatalf("key %+v: batch took %v, single %v", keys[i], got.Path, one.Path)
			}
			if got.Group != nil {
				multipath++
			}
		}
	}
	if multipath == 0 {
		t.Fatal("no flow met a multipath route: the test tests nothing")
	}
}

// TestMultipathMember: flows over a two-member multipath route take both
// members, each flow always the same one, and the path is the member's.
// By default (Linux's policy 0) the ports do not count; with policy 1 they
// do.
func TestMultipathMember(t *testing.T) {
	r, ls := newRouter(t, 2)
	addAddr(t, r, ls[0], "2001:db8:91::1/64")
	addAddr(t, r, ls[1], "2001:db8:92::1/64")
	addRoute(t, r, "2001:db8:100::/48", fib6.Attrs{Metric: 1024, Nexthop: nexthop.Nexthop{Link: ls[0].Index, Gateway: netip.MustParseAddr("2001:db8:91::2")}})
	addRoute(t, r, "2001:db8:100::/48", fib6.Attrs{Metric: 1024, Nexthop: nexthop.Nexthop{Link: ls[1].Index, Gateway: netip.MustParseAddr("2001:db8:92::2")}})
	spread := func(vary func(k *decide.Key, i int)) map[int32]int {
		seen := map[int32]int{}
		for i := 0; i < 2000; i++ {
			k := decideKey("2001:db8:100::1", "2001:db8:1::2")
			k.Proto, k.Sport, k.Dport = 17, 1000, 53
			vary(&k, i)
			res := r.Decider.Decide(&k)
			if res.Verdict != decide.Forward || res.Group == nil || res.Path != res.Group.Member(res.Member).Nexthop {
				t.Fatalf("flow %d: %+v", i, res)
			}
			if again := r.Decider.Decide(&k); again.Member != res.Member {
				t.Fatal("the same flow took another member")
			}
			seen[res.Nexthop().Link]++
		}
		return seen
	}
	bySrc := spread(func(k *decide.Key, i int) { k.Src[14], k.Src[15] = byte(i>>8), byte(i) })
	if len(bySrc) != 2 || bySrc[ls[0].Index] < 800 || bySrc[ls[1].Index] < 800 {
		t.Errorf("2000 sources over two members: %v", bySrc)
	}
	byPort := func(k *decide.Key, i int) { k.Sport = uint16(i) }
	if seen := spread(byPort); len(seen) != 1 {
		t.Errorf("policy 0 spread ports over %v", seen)
	}
	r.Decider.SetHashPolicy(nexthop.PolicyL4, 0)
	if seen := spread(byPort); len(seen) != 2 || seen[ls[0].Index] < 800 {
		t.Errorf("policy 1: 2000 ports over two members: %v", seen)
	}
}

// TestMultipathLegs: each path of a multipath route made by appends
// keeps its own MTU, protocol and preferred source (Linux's ECMP
// siblings), and a flow gets its path's.
func TestMultipathLegs(t *testing.T) {
	r, ls := newRouter(t, 2)
	addAddr(t, r, ls[0], "2001:db8:91::1/64")
	addAddr(t, r, ls[1], "2001:db8:92::1/64")
	src := netip.MustParseAddr("2001:db8:92::1")
	addRoute(t, r, "2001:db8:100::/48", fib6.Attrs{Metric: 1024, MTU: 1400, Proto: fib6.ProtoStatic,
		Nexthop: nexthop.Nexthop{Link: ls[0].Index, Gateway: netip.MustParseAddr("2001:db8:91::2")}})
	addRoute(t, r, "2001:db8:100::/48", fib6.Attrs{Metric: 1024, MTU: 1300, Proto: 186, PrefSrc: src,
		Nexthop: nexthop.Nexthop{Link: ls[1].Index, Gateway: netip.MustParseAddr("2001:db8:92::2")}})
	want := map[int32]nexthop.Leg{ls[0].Index: {MTU: 1400, Proto: uint8(fib6.ProtoStatic)}, ls[1].Index: {MTU: 1300, Proto: 186, PrefSrc: src}}
	seen := map[int32]bool{}
	for i := 0; i < 200; i++ {
		k := decideKey("2001:db8:100::1", "2001:db8:1::2")
		k.Src[15] = byte(i)
		res := r.Decider.Decide(&k)
		if res.Group == nil {
			t.Fatalf("not multipath: %+v", res)
		}
		l := res.Path.Link
		seen[l] = true
		if got := res.Leg(); got != want[l] || res.PathMTU() != want[l].MTU {
			t.Fatalf("a flow out of link %d gets %+v (PathMTU %d), want its path's %+v", l, got, res.PathMTU(), want[l])
		}
		if res.Route.MTU != 1400 {
			t.Fatalf("the route shows MTU %d, want its first path's 1400", res.Route.MTU)
		}
	}
	if len(seen) != 2 {
		t.Errorf("flows took %d paths", len(seen))
	}
}

// TestMultipathLegWithoutMTU: a path appended without an MTU keeps none
// of its own (its link's holds), though the first path has one: the
// packet path's PathMTU says what Leg says.
func TestMultipathLegWithoutMTU(t *testing.T) {
	r, ls := newRouter(t, 2)
	addAddr(t, r, ls[0], "2001:db8:91::1/64")
	addAddr(t, r, ls[1], "2001:db8:92::1/64")
	addRoute(t, r, "2001:db8:100::/48", fib6.Attrs{Metric: 1024, MTU: 1400, Proto: fib6.ProtoBoot,
		Nexthop: nexthop.Nexthop{Link: ls[0].Index, Gateway: netip.MustParseAddr("2001:db8:91::2")}})
	addRoute(t, r, "2001:db8:100::/48", fib6.Attrs{Metric: 1024, Proto: fib6.ProtoBoot, // as ip route append has it
		Nexthop: nexthop.Nexthop{Link: ls[1].Index, Gateway: netip.MustParseAddr("2001:db8:92::2")}})
	want := map[int32]uint32{ls[0].Index: 1400, ls[1].Index: 0}
	seen := map[int32]bool{}
	for i := 0; i < 200; i++ {
		k := decideKey("2001:db8:100::1", "2001:db8:1::2")
		k.Src[15] = byte(i)
		res := r.Decider.Decide(&k)
		l := res.Path.Link
		seen[l] = true
		if res.Leg().MTU != want[l] || res.PathMTU() != want[l] {
			t.Fatalf("a flow out of link %d: Leg MTU %d, PathMTU %d; want %d", l, res.Leg().MTU, res.PathMTU(), want[l])
		}
	}
	if len(seen) != 2 {
		t.Errorf("flows took %d paths", len(seen))
	}
}
