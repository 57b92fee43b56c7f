package router

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"urouter/decide"
	"urouter/fib6"
	"urouter/nexthop"
	"urouter/rules"
)

// TestRulesChurn: one writer adds and deletes a rule that sends source A
// to table 10, another adds routes to main, a third adds and deletes a
// link that a rule names, while readers decide flows from A and B one at
// a time and in batches. Every decision is one a rule set in force could
// give (A: table 10 or main; B: always main), nothing waits on anything
// else's lock, and -race finds nothing.
func TestRulesChurn(t *testing.T) {
	r := New()
	l, err := r.AddDummy("d0", 1500)
	must(t, err)
	must(t, r.SetUp(l, true))
	must(t, r.AddAddr(l, pfx("2001:db8:91::1/64")))
	for _, tid := range []uint32{10, fib6.TableMain} {
		x := r.Tables.Ensure(tid).Begin()
		must(t, x.Add(fib6.Route{Dst: pfx("2001:db8:50::/48"), Attrs: fib6.Attrs{Metric: 1024,
			Nexthop: nexthop.Nexthop{Link: l.Index, Gateway: netip.MustParseAddr("2001:db8:91::2")}}}))
		x.Commit()
	}
	fromA := rules.Rule{Pref: 100, Src: pfx("2001:db8:a::/48"), Action: rules.ToTable, Table: 10}
	keyFrom := func(src string) decide.Key {
		return decide.KeyOf(netip.MustParseAddr("2001:db8:50::1"), netip.MustParseAddr(src))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var ruleChanges, routes, decisions atomic.Int64
	// enough is closed once each has happened 20 times the least the
	// test asks for (in some 50 ms; a loaded machine takes longer)
	enough, once := make(chan struct{}), sync.Once{}
	run := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				f()
				if ruleChanges.Load() >= 2000 && routes.Load() >= 2000 && decisions.Load() >= 20000 {
					once.Do(func() { close(enough) })
				}
			}
		}()
	}
	run(func() {
		x := r.Rules.Begin()
		if _, err := x.Add(fromA, true); err != nil {
			_, _ = x.Delete(&rules.Selector{Rule: rules.Rule{Pref: 100}, PrefSet: true}) // there: it was the duplicate
		}
		x.Commit()
		ruleChanges.Add(1)
	})
	run(func() {
		i := routes.Add(1)
		x := r.Tables.Main().Begin()
		// the locks are the point: a route there from an earlier lap of i is refused
		_ = x.Add(fib6.Route{Dst: netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 1, byte(i >> 8), byte(i)}), 48),
			Attrs: fib6.Attrs{Metric: 1024, Nexthop: nexthop.Nexthop{Link: l.Index}}})
		x.Commit()
	})
	run(func() {
		x := r.Rules.Begin()
		_, _ = x.Add(rules.Rule{Pref: 50, Iif: "t9", Action: rules.ToTable, Table: 10}, true) // a duplicate after the first
		x.Commit()
		if d, err := r.AddDummy("t9", 1500); err == nil {
			if err := r.DeleteLink(d); err != nil {
				t.Error(err)
			}
		}
	})
	check := func(res decide.Result, fromA bool) {
		if res.Verdict != decide.Forward || res.Table != fib6.TableMain && !(fromA && res.Table == 10 && res.Rule == 100) {
			t.Errorf("from A %v: %+v", fromA, res)
		}
	}
	run(func() {
		for _, src := range []string{"2001:db8:a::1", "2001:db8:b::1"} {
			k := keyFrom(src)
			check(r.Decider.Decide(&k), src == "2001:db8:a::1")
		}
		decisions.Add(2)
	})
	run(func() {
		var b decide.Batch
		keys := make([]decide.Key, decide.MaxBatch)
		out := make([]decide.Result, decide.MaxBatch)
		for i := range keys {
			keys[i] = keyFrom([]string{"2001:db8:a::1", "2001:db8:b::1"}[i%2])
			keys[i].Iif = l.Index
		}
		r.Decider.DecideBatch(&b, keys, out)
		for i := range out {
			check(out[i], i%2 == 0)
		}
		decisions.Add(int64(len(keys)))
	})
	select {
	case <-enough:
	case <-time.After(time.Minute): // then too little happened
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d rule changes, %d routes, %d decisions", ruleChanges.Load(), routes.Load(), decisions.Load())
	if ruleChanges.Load() < 100 || routes.Load() < 100 || decisions.Load() < 1000 {
		t.Errorf("too little happened: %d rule changes, %d routes, %d decisions", ruleChanges.Load(), routes.Load(), decisions.Load())
	}
}

// TestRulesTakeNoOtherLock: a rule change goes through while a table's
// transaction (its writer lock) is held, and a route change and a
// decision go through while the rule set's transaction is held. (A link
// change does take the rule set's lock, after the router's, to attach
// the rules that name it; a rule transaction never waits on a client.)
func TestRulesTakeNoOtherLock(t *testing.T) {
	r := New()
	within := func(what string, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { f(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s waited on a lock it should not take", what)
		}
	}
	held := r.Tables.Main().Begin()
	within("a rule add", func() {
		x := r.Rules.Begin()
		if _, err := x.Add(rules.Rule{Pref: 5, Action: rules.ToTable, Table: 10}, true); err != nil {
			t.Error(err)
		}
		x.Commit()
	})
	held.Commit()
	rx := r.Rules.Begin()
	within("a route add", func() {
		x := r.Tables.Main().Begin()
		if err := x.Add(fib6.Route{Dst: pfx("2001:db8:5::/48"), Attrs: fib6.Attrs{Type: fib6.Blackhole, Metric: 1}}); err != nil {
			t.Error(err)
		}
		x.Commit()
	})
	within("a decision", func() {
		k := decide.KeyOf(netip.MustParseAddr("2001:db8:5::1"), netip.Addr{})
		if res := r.Decider.Decide(&k); res.Verdict != decide.Blackhole {
			t.Errorf("decided %+v", res)
		}
	})
	rx.Commit()
}
