package fib6

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"urouter/internal/racebuild"
	"urouter/internal/realtable"
)

// refTrie is the obviously correct model the trie is checked against: a map
// of prefixes, with longest-prefix match by trying every length.
type refTrie map[netip.Prefix]*rset

func (m refTrie) lookup(a netip.Addr) (netip.Prefix, *rset) {
	for l := 128; l >= 0; l-- {
		p := netip.PrefixFrom(a, l).Masked()
		if r, ok := m[p]; ok {
			return p, r
		}
	}
	return netip.Prefix{}, nil
}

func (m refTrie) sorted() []netip.Prefix {
	ps := make([]netip.Prefix, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, comparePrefix)
	return ps
}

// comparePrefix orders by address, then shorter first: the dump order.
func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// distinct route sets to store; their identity is what the checks compare.
func testSets(n int) []*rset {
	s := make([]*rset, n)
	for i := range s {
		s[i] = &rset{best: &Attrs{Metric: uint32(i + 1)}}
	}
	return s
}

// randPrefix draws prefixes that cluster, so that they nest and share
// nodes at every depth, as real tables do.
func randPrefix(r *rand.Rand, seeds []netip.Prefix) netip.Prefix {
	if len(seeds) > 0 && r.IntN(3) > 0 {
		base := seeds[r.IntN(len(seeds))]
		b := base.Addr().As16()
		l := min(128, base.Bits()+r.IntN(40))
		if r.IntN(4) == 0 {
			l = max(0, base.Bits()-r.IntN(20))
		}
		for i := base.Bits(); i < l; i++ {
			if r.IntN(2) == 1 {
				b[i/8] ^= 0x80 >> (i % 8)
			}
		}
		return netip.PrefixFrom(netip.AddrFrom16(b), l).Masked()
	}
	var b [16]byte
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	if r.IntN(2) == 0 {
		b[0], b[1] = 0x20, 0x01
	}
	lens := []int{0, 3, 8, 12, 16, 19, 24, 29, 32, 36, 40, 44, 47, 48, 56, 64, 72, 96, 120, 127, 128}
	l := lens[r.IntN(len(lens))]
	if r.IntN(3) == 0 {
		l = r.IntN(129)
	}
	return netip.PrefixFrom(netip.AddrFrom16(b), l).Masked()
}

// probe draws an address inside p (or anywhere, now and then).
// keysOf is addrs as LookupKeys takes them; an invalid address (no
// source) becomes all zeros.
func keysOf(addrs []netip.Addr) [][16]byte {
	keys := make([][16]byte, len(addrs))
	for i, a := range addrs {
		if a.IsValid() {
			keys[i] = a.As16()
		}
	}
	return keys
}

func probe(r *rand.Rand, p netip.Prefix) netip.Addr {
	b := p.Addr().As16()
	for i := p.Bits(); i < 128; i++ {
		if r.IntN(2) == 1 {
			b[i/8] |= 0x80 >> (i % 8)
		}
	}
	if r.IntN(10) == 0 {
		b[r.IntN(16)] ^= byte(r.UintN(256))
	}
	return netip.AddrFrom16(b)
}

func checkTrie(t *testing.T, tr *trie, ref refTrie, r *rand.Rand) {
	t.Helper()
	if err := tr.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	ps := ref.sorted()
	// lookups, single and batched, against the model
	var addrs []netip.Addr
	for i := 0; i < 2000; i++ {
		var a netip.Addr
		if len(ps) > 0 {
			a = probe(r, ps[r.IntN(len(ps))])
		} else {
			a = probe(r, netip.PrefixFrom(netip.IPv6Unspecified(), 0))
		}
		addrs = append(addrs, a)
	}
	out := make([]*rset, len(addrs))
	keys := keysOf(addrs)
	for base := 0; base < len(keys); base += batchWidth {
		n := min(batchWidth, len(keys)-base)
		tr.lookupKeys(keys[base:base+n], out[base:base+n])
	}
	for i, a := range addrs {
		wp, want := ref.lookup(a)
		b := a.As16()
		if got := tr.lookup(&b); got != want {
			t.Fatalf("lookup %s: got %v want %v (%s)", a, got, want, wp)
		}
		if out[i] != want {
			t.Fatalf("lookupKeys %s: got %v want %v (%s)", a, out[i], want, wp)
		}
		ms := tr.matches(keyOf(&b), nil)
		var wantMs []netip.Prefix
		for l := 128; l >= 0; l-- {
			if p := netip.PrefixFrom(a, l).Masked(); ref[p] != nil {
				wantMs = append(wantMs, p)
			}
		}
		if len(ms) != len(wantMs) {
			t.Fatalf("matches %s: got %d want %d %v", a, len(ms), len(wantMs), wantMs)
		}
		for j, m := range ms {
			if m.p != wantMs[j] || m.r != ref[m.p] {
				t.Fatalf("matches %s [%d]: got %s want %s", a, j, m.p, wantMs[j])
			}
		}
	}
	// the walk yields every prefix once, in order
	var got []netip.Prefix
	tr.walk(netip.PrefixFrom(netip.IPv6Unspecified(), 0), func(p netip.Prefix, rs *rset) bool {
		if ref[p] != rs {
			b := p.Addr().As16()
			var ms []string
			for _, m := range tr.matches(keyOf(&b), nil) {
				ms = append(ms, fmt.Sprintf("%s=%p", m.p, m.r))
			}
			t.Fatalf("walk %s: set %p, want %p; matches %v", p, rs, ref[p], ms)
		}
		got = append(got, p)
		return true
	})
	if !slices.Equal(got, ps) {
		t.Fatalf("walk: got %d prefixes want %d\n got %v\nwant %v", len(got), len(ps), head(got), head(ps))
	}
	// a bounded walk yields exactly the prefixes inside the bound
	if len(ps) > 0 {
		b := ps[r.IntN(len(ps))]
		var in, want []netip.Prefix
		tr.walk(b, func(p netip.Prefix, _ *rset) bool { in = append(in, p); return true })
		for _, p := range ps {
			if p.Bits() >= b.Bits() && b.Contains(p.Addr()) {
				want = append(want, p)
			}
		}
		if !slices.Equal(in, want) {
			t.Fatalf("walk within %s: got %v want %v", b, head(in), head(want))
		}
	}
}

func head(ps []netip.Prefix) string {
	if len(ps) > 12 {
		return fmt.Sprint(ps[:12]) + "..."
	}
	return fmt.Sprint(ps)
}

// TestTrieRandom applies random transactions of random sizes (inserts,
// replacements, deletions, nested and clustered prefixes of every length)
// and checks every lookup path against the model after each commit, and
// exact gets inside each transaction.
func TestTrieRandom(t *testing.T) {
	for seed := uint64(1); seed <= uint64(racebuild.Sized(16, 4)); seed++ {
		r := rand.New(rand.NewPCG(seed, 99))
		sets := testSets(7)
		tr := newTrie()
		ref := refTrie{}
		var seeds []netip.Prefix
		var x trieTxn
		id := uint64(0)
		for round := 0; round < 12; round++ {
			id++
			tr.begin(&x, id)
			pending := refTrie{}
			for k, v := range ref {
				pending[k] = v
			}
			ops := 1 + r.IntN(40)
			if round%4 == 3 {
				ops = 300 // a bulk transaction
			}
			for i := 0; i < ops; i++ {
				var p netip.Prefix
				if len(pending) > 0 && r.IntN(3) == 0 {
					ps := pending.sorted()
					p = ps[r.IntN(len(ps))]
				} else {
					p = randPrefix(r, seeds)
					seeds = append(seeds, p)
				}
				var v *rset
				if r.IntN(4) != 0 {
					v = sets[r.IntN(len(sets))]
				}
				x.set(prefixKey(p), p.Bits(), v)
				if v == nil {
					delete(pending, p)
				} else {
					pending[p] = v
				}
				q := p
				if len(pending) > 0 && r.IntN(2) == 0 {
					ps := pending.sorted()
					q = ps[r.IntN(len(ps))]
				}
				if got := x.get(prefixKey(q), q.Bits()); got != pending[q] {
					t.Fatalf("seed %d: get %s inside txn: got %v want %v", seed, q, got, pending[q])
				}
			}
			// readers still see the old version
			checkTrie(t, tr, ref, r)
			x.commit()
			ref = pending
			checkTrie(t, tr, ref, r)
		}
	}
}

func loadRealTable(tb testing.TB) []netip.Prefix {
	tb.Helper()
	return realtable.MustLoad(tb)
}

// realTableSized is the real table, or under the race detector every
// eighth of its prefixes (see racebuild): the tests that load it whole
// run in one goroutine, where the detector has nothing to watch.
func realTableSized(tb testing.TB) []netip.Prefix {
	tb.Helper()
	ps := loadRealTable(tb)
	if !racebuild.Enabled {
		return ps
	}
	var some []netip.Prefix
	for i := 0; i < len(ps); i += 8 {
		some = append(some, ps[i])
	}
	return some
}

// TestTrieRealTable loads the real table in one transaction, checks it,
// then deletes a third of it in small transactions and checks again.
func TestTrieRealTable(t *testing.T) {
	ps := realTableSized(t)
	sets := testSets(5)
	tr := newTrie()
	ref := refTrie{}
	var x trieTxn
	tr.begin(&x, 1)
	for i, p := range ps {
		x.set(prefixKey(p), p.Bits(), sets[i%5])
		ref[p] = sets[i%5]
	}
	x.commit()
	r := rand.New(rand.NewPCG(7, 7))
	checkTrie(t, tr, ref, r)
	for i := 0; i < len(ps); i += 3 * 50 {
		tr.begin(&x, uint64(2+i))
		for j := i; j < min(i+50, len(ps)); j++ {
			p := ps[r.IntN(len(ps))]
			x.set(prefixKey(p), p.Bits(), nil)
			delete(ref, p)
		}
		x.commit()
	}
	checkTrie(t, tr, ref, r)
}

// TestShortBest holds locals.shortBest to its definition, the longest
// short local (of lengths 7 down to 0) covering the slot, for every slot
// of random sets of locals, sparse and dense.
func TestShortBest(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	sets := testSets(1)
	for round := 0; round < 2000; round++ {
		var l locals
		density := 1 + r.IntN(64)
		for i := 1; i < 256; i++ {
			if r.IntN(density) == 0 {
				l.short.set(uint8(i))
			}
		}
		for i := 0; i < 256; i++ {
			if l.short.has(uint8(i)) {
				l.vals = append(l.vals, &rset{routes: sets[0].routes, hasSrc: i%2 == 0})
			}
		}
		for s := 0; s < 256; s++ {
			var want *rset
			for n := 7; n >= 0 && want == nil; n-- {
				if i := artIndex(n, uint8(s)); l.short.has(i) {
					want = l.vals[l.short.rank(i)]
				}
			}
			if got := l.shortBest(uint8(s)); got != want {
				t.Fatalf("locals %x, slot %d: got %p, want %p", l.short, s, got, want)
			}
		}
	}
}
