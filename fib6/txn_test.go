package fib6

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"urouter/internal/racebuild"
)

// TestTxnLookup runs random transactions (single changes, small ones and
// bulk ones past bulkOps, with deletes) and checks Txn.Lookup inside each:
// against the model after every change, and, for probes taken just before
// Commit, against Table.Lookup without a source after it.
func TestTxnLookup(t *testing.T) {
	pendingSeen := 0
	for seed := uint64(1); seed <= uint64(racebuild.Sized(12, 3)); seed++ {
		r := rand.New(rand.NewPCG(seed, 17))
		tab := newTable(100, nil)
		m := newRefTable()
		var seeds []netip.Prefix
		// probes draws addresses in and around the model's routes.
		probes := func(n int) []netip.Addr {
			cur := m.dump()
			var out []netip.Addr
			for i := 0; i < n; i++ {
				if len(cur) == 0 || r.IntN(8) == 0 {
					out = append(out, probe(r, netip.PrefixFrom(netip.IPv6Unspecified(), 0)))
				} else {
					out = append(out, probe(r, cur[r.IntN(len(cur))].Dst))
				}
			}
			return out
		}
		for round := 0; round < 24; round++ {
			ops := 1 + r.IntN(40)
			switch round % 4 {
			case 1:
				ops = 1 // a single change: the pending in-place store
			case 3:
				ops = bulkOps + 1 + r.IntN(150)
			}
			x := tab.Begin()
			for i := 0; i < ops; i++ {
				rt := nextRoute(r, m, &seeds)
				var got, want error
				if op := r.IntN(5); op == 4 {
					q := Match{Dst: rt.Dst, Src: rt.Src}
					_, want = m.del(q)
					_, got = x.Delete(q)
				} else {
					want = m.put(rt, putMode(op))
					got = x.put(rt, putMode(op))
				}
				if !sameErr(got, want) {
					t.Fatalf("seed %d op on %v: got %v want %v", seed, rt, got, want)
				}
				if i%8 == 0 || ops == 1 {
					for _, dst := range append(probes(20), rt.Dst.Addr()) {
						la := x.Lookup(dst)
						wr, wok := m.get(dst, netip.Addr{})
						if wok != (la != nil) || wok && !sameAttrs(la, &wr.Attrs) {
							t.Fatalf("seed %d round %d: Txn.Lookup(%s) = %v, want %v", seed, round, dst, la, wr)
						}
					}
				}
			}
			if x.tx.pending.n != nil {
				pendingSeen++
			}
			dsts := probes(300)
			inTxn := make([]*Attrs, len(dsts))
			for i, dst := range dsts {
				inTxn[i] = x.Lookup(dst)
			}
			x.Commit()
			for i, dst := range dsts {
				if want := tab.Lookup(dst, netip.Addr{}); inTxn[i] != want {
					t.Fatalf("seed %d round %d (%d ops): Txn.Lookup(%s) = %v, Table.Lookup after Commit %v", seed, round, ops, dst, inTxn[i], want)
				}
			}
		}
	}
	if pendingSeen == 0 {
		t.Fatal("no transaction kept a pending in-place store")
	}
	t.Logf("%d transactions ended with a pending store", pendingSeen)
}
