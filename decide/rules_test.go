package decide_test

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"urouter/decide"
	"urouter/fib6"
	"urouter/nexthop"
	"urouter/router"
	"urouter/rules"
)

func addRule(t *testing.T, r *router.Router, rule rules.Rule) {
	t.Helper()
	x := r.Rules.Begin()
	defer x.Commit()
	if _, err := x.Add(rule, true); err != nil {
		t.Fatalf("rule %+v: %v", rule, err)
	}
}

func addIn(t *testing.T, r *router.Router, table uint32, dst string, a fib6.Attrs) {
	t.Helper()
	x := r.Tables.Ensure(table).Begin()
	defer x.Commit()
	if err := x.Append(fib6.Route{Dst: netip.MustParsePrefix(dst), Attrs: a}); err != nil {
		t.Fatal(err)
	}
}

func via(l int32, gw string) fib6.Attrs {
	return fib6.Attrs{Metric: 1024, Nexthop: nexthop.Nexthop{Link: l, Gateway: netip.MustParseAddr(gw)}}
}

// TestRuleSemantics: each rule feature as Linux 6.18 answered `ip -6
// route get` with the same rules and routes.
func TestRuleSemantics(t *testing.T) {
	r, ls := newRouter(t, 2)
	addAddr(t, r, ls[0], "2001:db8:91::1/64")
	addAddr(t, r, ls[1], "2001:db8:92::1/64")
	d0, d1 := ls[0].Index, ls[1].Index
	addIn(t, r, 10, "2001:db8:5::/48", via(d0, "2001:db8:91::2"))
	addIn(t, r, 20, "2001:db8:5::/48", fib6.Attrs{Type: fib6.Throw, Metric: 1024})
	addIn(t, r, 20, "::/0", via(d1, "2001:db8:92::3"))
	addIn(t, r, 30, "::/0", via(d1, "2001:db8:92::4"))
	addIn(t, r, 40, "::/0", fib6.Attrs{Type: fib6.Unreachable, Metric: 1024})
	from := func(p string) netip.Prefix { return netip.MustParsePrefix(p) }
	for _, rule := range []rules.Rule{
		{Pref: 10, Src: from("2001:db8:a::/48"), Action: rules.ToTable, Table: 20},
		{Pref: 11, Invert: true, Src: from("2001:db8::/32"), Action: rules.ToTable, Table: 30},
		{Pref: 12, Iif: "lo", Dst: from("2001:db8:77::/48"), Action: rules.Prohibit},
		{Pref: 13, Iif: "d1", IPProto: 17, Sport: rules.PortRange{Lo: 1000, Hi: 2000}, Action: rules.Goto, Target: 15},
		{Pref: 14, Action: rules.ToTable, Table: 10},
		{Pref: 15, Dst: from("2001:db8:5::/48"), Action: rules.Unreachable},
		{Pref: 16, Action: rules.ToTable, Table: 30, Suppress: true, SuppressPrefixLen: 0},
		{Pref: 17, Action: rules.ToTable, Table: 40, Suppress: true, SuppressPrefixLen: 0},
	} {
		addRule(t, r, rule)
	}
	type want struct {
		v     decide.Verdict
		rule  uint32
		table uint32
		gw    string
	}
	for _, c := range []struct {
		name string
		key  decide.Key
		want want
	}{
		// a throw route in table 20 goes on; rule 14 finds the route
		{"throw", decideKey("2001:db8:5::1", "2001:db8:a::1"), want{decide.Forward, 14, 10, "2001:db8:91::2"}},
		{"from rule, other source", decideKey("2001:db8:6::1", "2001:db8:a::1"), want{decide.Forward, 10, 20, "2001:db8:92::3"}},
		// `from` never matches a lookup without a source; `not from` does
		{"not from, no source", decideKey("2001:db8:6::1", ""), want{decide.Forward, 11, 30, "2001:db8:92::4"}},
		{"iif lo is the router's own", decideKey("2001:db8:77::1", "2001:db8:91::1"), want{decide.Prohibit, 12, 0, ""}},
		// a goto skips rule 14; its target 15 does not match, so 16 decides,
		// but only a route longer than /0 passes its suppress_prefixlength 0:
		// on to 17, whose unreachable ::/0 is never suppressed
		{"goto, target fails", withIif(decideKey("2001:db8:6::1", "2001:db8:1::1"), d1, 17, 1500), want{decide.Unreachable, 17, 40, ""}},
		{"goto, target matches", withIif(decideKey("2001:db8:5::1", "2001:db8:1::1"), d1, 17, 1500), want{decide.NoRoute, 15, 0, ""}},
		{"port outside the range", withIif(decideKey("2001:db8:5::1", "2001:db8:1::1"), d1, 17, 2001), want{decide.Forward, 14, 10, "2001:db8:91::2"}},
	} {
		res := r.Decider.Decide(&c.key)
		got := want{res.Verdict, res.Rule, res.Table, ""}
		if res.Path.Gateway.IsValid() {
			got.gw = res.Path.Gateway.String()
		}
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		ex := r.Decider.Explain(&c.key)
		if ex.Result.Verdict != res.Verdict || ex.Result.Rule != res.Rule || ex.Result.Route != res.Route {
			t.Errorf("%s: explained %+v, decided %+v", c.name, ex.Result, res)
		}
	}
}

func withIif(k decide.Key, iif int32, proto uint8, sport uint16) decide.Key {
	k.Iif, k.Proto, k.Sport = iif, proto, sport
	return k
}

// TestBatchAgreesWithRules: on random rule sets (every selector, goto,
// nop, reject actions, suppress_prefixlength) over random tables, the
// batch decides every flow as the single decision does, and as its
// explanation says.
func TestBatchAgreesWithRules(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	r, ls := newRouter(t, 3)
	for i, l := range ls {
		addAddr(t, r, l, netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(0x90 + i), 15: 1}), 64).String())
	}
	addr := func(a, b int) [16]byte { return [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(a), 0, byte(b), 15: 1} }
	types := []fib6.Type{fib6.Unicast, fib6.Unicast, fib6.Throw, fib6.Unreachable, fib6.Local}
	for i := 0; i < 200; i++ {
		dst := netip.PrefixFrom(netip.AddrFrom16(addr(rnd.IntN(4), rnd.IntN(4))), []int{0, 32, 40, 48, 64}[rnd.IntN(5)]).Masked()
		a := fib6.Attrs{Metric: 1024, Type: types[rnd.IntN(len(types))]}
		if a.Type == fib6.Unicast || a.Type == fib6.Local {
			a.Nexthop = nexthop.Nexthop{Link: ls[rnd.IntN(3)].Index}
		}
		x := r.Tables.Ensure([]uint32{10, 20, 30, fib6.TableMain}[rnd.IntN(4)]).Begin()
		// a random route may repeat one already there: it is left out
		if err := x.Append(fib6.Route{Dst: dst, Attrs: a}); err != nil && err != fib6.ErrExists {
			t.Fatal(err)
		}
		x.Commit()
	}
	pfx := func() netip.Prefix {
		if rnd.IntN(2) == 0 {
			return netip.Prefix{}
		}
		return netip.PrefixFrom(netip.AddrFrom16(addr(rnd.IntN(4), rnd.IntN(4))), []int{32, 40, 48}[rnd.IntN(3)]).Masked()
	}
	actions := []rules.Action{rules.ToTable, rules.ToTable, rules.ToTable, rules.Goto, rules.Nop, rules.Blackhole, rules.Unreachable, rules.Prohibit}
	x := r.Rules.Begin()
	for i := 0; i < 60; i++ {
		rule := rules.Rule{Pref: uint32(1 + rnd.IntN(100)), Src: pfx(), Dst: pfx(), Action: actions[rnd.IntN(len(actions))],
			Invert: rnd.IntN(8) == 0, Table: []uint32{10, 20, 30, 99}[rnd.IntN(4)]}
		if rnd.IntN(3) == 0 {
			rule.Iif = []string{"d0", "d1", "lo", "nosuch"}[rnd.IntN(4)]
		}
		if rnd.IntN(4) == 0 {
			rule.IPProto, rule.Dport = 17, rules.PortRange{Lo: 50, Hi: uint16(50 + rnd.IntN(10))}
		}
		if rule.Action == rules.Goto {
			rule.Table, rule.Target = 0, rule.Pref+uint32(1+rnd.IntN(20))
		}
		if rule.Action == rules.ToTable && rnd.IntN(4) == 0 {
			rule.Suppress, rule.SuppressPrefixLen = true, int32([]int{0, 32, 48}[rnd.IntN(3)])
		}
		if rule.Action != rules.ToTable && rule.Action != rules.Goto {
			rule.Table = 0
		}
		if _, err := x.Add(rule, true); err != nil {
			t.Fatal(err)
		}
	}
	x.Commit()
	var b decide.Batch
	keys := make([]decide.Key, decide.MaxBatch)
	out := make([]decide.Result, decide.MaxBatch)
	verdicts := map[decide.Verdict]int{}
	for round := 0; round < 100; round++ {
		for i := range keys {
			k := decide.Key{Packet: rules.Packet{Dst: addr(rnd.IntN(4), rnd.IntN(4)), Proto: 17,
				Sport: uint16(rnd.IntN(100)), Dport: uint16(45 + rnd.IntN(20)), Iif: int32(1 + rnd.IntN(4))}}
			if rnd.IntN(3) > 0 {
				k.Src = addr(rnd.IntN(4), rnd.IntN(4))
			}
			keys[i] = k
		}
		r.Decider.DecideBatch(&b, keys, out)
		for i := range keys {
			one := r.Decider.Decide(&keys[i])
			ex := r.Decider.Explain(&keys[i]).Result
			got := out[i]
			for _, o := range []decide.Result{one, ex} {
				if got.Verdict != o.Verdict || got.Route != o.Route || got.Rule != o.Rule || got.Table != o.Table {
					t.Fatalf("key %+v: batch %+v, single %+v", keys[i], got, o)
				}
			}
			verdicts[got.Verdict]++
		}
	}
	if len(verdicts) < 5 {
		t.Errorf("verdicts met: %v: the rules decide too little", verdicts)
	}
}
