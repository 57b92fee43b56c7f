package nexthop

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

func gw(i byte) Nexthop {
	return Nexthop{Gateway: netip.AddrFrom16([16]byte{0xfe, 0x80, 15: i}), Link: int32(i)}
}

func randomFlow(r *rand.Rand) Flow {
	var f Flow
	for i := range f.Src {
		f.Src[i], f.Dst[i] = byte(r.Uint32()), byte(r.Uint32())
	}
	f.Proto, f.SrcPort, f.DstPort, f.Label = 17, uint16(r.Uint32()), uint16(r.Uint32()), r.Uint32()&0xfffff
	return f
}

// TestSelectWeights: 1M random flows over weights 1/2/3/4 land within ±1%
// of the weights, each flow always on the same member; the ranges are
// Linux's upper bounds.
func TestSelectWeights(t *testing.T) {
	g := NewGroup([]Member{{Nexthop: gw(1), Weight: 1}, {Nexthop: gw(2), Weight: 2}, {Nexthop: gw(3), Weight: 3}, {Nexthop: gw(4), Weight: 4}})
	if g.upper[0] != (1<<31+5)/10-1 || g.upper[3] != 1<<31-1 {
		t.Fatalf("upper bounds %#x", g.upper)
	}
	h := Hasher{Seed: 7}
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1_000_000
	counts := make([]int, 4)
	for range n {
		f := randomFlow(r)
		hash := h.Hash(&f)
		i := g.Select(hash)
		if g.Select(h.Hash(&f)) != i {
			t.Fatal("the same flow took another member")
		}
		counts[i]++
	}
	for i, c := range counts {
		want := float64(n) * float64(i+1) / 10
		if d := float64(c) - want; d > want/100 || d < -want/100 {
			t.Errorf("member %d (weight %d): %d flows, want %.0f ±1%%", i, i+1, c, want)
		}
	}
	if n := NewGroup([]Member{{Nexthop: gw(1)}, {Nexthop: gw(2)}}); n.Select(0) != 0 || n.Select(^uint32(0)) != 1 ||
		n.Select((1<<30-1)<<1) != 0 || n.Select(1<<31) != 1 {
		t.Error("equal weights: the halves of the hash space")
	}
}

// TestSelectSkipsDead: a dead member takes no flow; the others share its.
func TestSelectSkipsDead(t *testing.T) {
	dead := gw(2)
	dead.Flags |= Dead | LinkDown
	g := NewGroup([]Member{{Nexthop: gw(1), Weight: 1}, {Nexthop: dead, Weight: 1}, {Nexthop: gw(3), Weight: 1}})
	h := Hasher{}
	r := rand.New(rand.NewPCG(3, 4))
	counts := make([]int, 3)
	for range 30000 {
		f := randomFlow(r)
		counts[g.Select(h.Hash(&f))]++
	}
	if counts[1] != 0 || counts[0] < 14000 || counts[2] < 14000 {
		t.Errorf("flows %v: the dead member must carry none, the others half each", counts)
	}
}

// failing is a neighbour view in which the gateways of the given links
// are not valid (FAILED or INCOMPLETE).
type failing map[int32]bool

func (f failing) Good(link int32, _ netip.Addr) bool { return !f[link] }

// TestSelectGood: a group of objects passes over a member whose gateway's
// neighbour is not valid, as Linux 6.18's nexthop_select_path_hthr (the
// kernel's choices in a netns, for members 1/2/3): member 2's flows go to
// 3, the next good one; 3's to 1, the first good one, the others staying;
// with none good every flow takes member 1. A member without a gateway is
// always good; a resilient group hands out its bucket's member.
func TestSelectGood(t *testing.T) {
	dev := Nexthop{Link: 9}
	g := NewGroup([]Member{{Nexthop: gw(1)}, {Nexthop: gw(2)}, {Nexthop: gw(3)}})
	withDev := NewGroup([]Member{{Nexthop: gw(1)}, {Nexthop: dev}})
	h := Hasher{}
	r := rand.New(rand.NewPCG(7, 8))
	for range 30000 {
		f := randomFlow(r)
		hash := h.Hash(&f)
		i := g.Select(hash)
		for _, c := range []struct {
			down failing
			want int
		}{
			{failing{}, i},
			{failing{2: true}, map[int]int{0: 0, 1: 2, 2: 2}[i]},
			{failing{3: true}, map[int]int{0: 0, 1: 1, 2: 0}[i]},
			{failing{1: true, 3: true}, 1},
			{failing{1: true, 2: true, 3: true}, 0},
		} {
			if got := g.SelectGood(hash, c.down); got != c.want {
				t.Fatalf("hash %#x (member %d), not valid %v: member %d, want %d", hash, i, c.down, got, c.want)
			}
		}
		if got := withDev.SelectGood(hash, failing{9: true}); got != withDev.Select(hash) {
			t.Fatalf("a member without a gateway was passed over")
		}
	}
	var nb Neighbours = failing{2: true}
	if n := testing.AllocsPerRun(100, func() { sink += g.SelectGood(0x9e3779b9, nb) }); n != 0 {
		t.Errorf("SelectGood allocates %.1f times", n)
	}
	dead := gw(1)
	dead.Flags |= Dead | LinkDown
	if got := NewGroup([]Member{{Nexthop: dead}, {Nexthop: gw(2)}, {Nexthop: gw(3)}}).SelectGood(0, failing{2: true, 3: true}); got != 1 {
		t.Errorf("none good: member %d, want the first usable, 1", got)
	}
	reg := NewRegistry(func() int64 { return 0 })
	for i := range 2 {
		if _, err := reg.Add(Spec{ID: uint32(i + 1), Nexthop: gw(byte(i + 1))}, false); err != nil {
			t.Fatal(err)
		}
	}
	o, err := reg.Add(Spec{ID: 10, Group: []Entry{{ID: 1, Weight: 1}, {ID: 2, Weight: 1}}, Type: ResilientType, Buckets: 8, BucketsSet: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	res := o.Load().Paths
	for hash := uint32(0); hash < 16; hash++ {
		if res.SelectGood(hash<<1, failing{1: true}) != res.Select(hash<<1) {
			t.Fatal("a resilient group passed over its bucket's member")
		}
	}
}

// TestHashPolicy: policy 0 (Linux's default) ignores the ports and reads
// the flow label; policy 1 reads the ports and not the label; the seed
// changes the split.
func TestHashPolicy(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	f := randomFlow(r)
	g := f
	g.SrcPort++
	l3, l4 := Hasher{Policy: PolicyL3}, Hasher{Policy: PolicyL4}
	if l3.Hash(&f) != l3.Hash(&g) {
		t.Error("policy 0 hashed the ports")
	}
	if l4.Hash(&f) == l4.Hash(&g) {
		t.Error("policy 1 ignored the ports")
	}
	g = f
	g.Label++
	if l3.Hash(&f) == l3.Hash(&g) || l4.Hash(&f) != l4.Hash(&g) {
		t.Error("the flow label: policy 0 reads it, policy 1 does not")
	}
	if (Hasher{Seed: 1}).Hash(&f) == (Hasher{Seed: 2}).Hash(&f) {
		t.Error("the seed changed nothing")
	}
}

// BenchmarkSelect is one selection of a member by a flow's hash, in a
// hash-threshold (mpath) and a resilient group of 16 members.
func BenchmarkSelect(b *testing.B) {
	ms := make([]Member, 16)
	es := make([]Entry, 16)
	r := NewRegistry(func() int64 { return 0 })
	for i := range ms {
		ms[i] = Member{Nexthop: gw(byte(i + 1)), Weight: uint32(1 + i%4)}
		if _, err := r.Add(Spec{ID: uint32(i + 1), Nexthop: ms[i].Nexthop}, false); err != nil {
			b.Fatal(err)
		}
		es[i] = Entry{ID: uint32(i + 1), Weight: ms[i].Weight}
	}
	res, err := r.Add(Spec{ID: 100, Group: es, Type: ResilientType, Buckets: 128, BucketsSet: true}, false)
	if err != nil {
		b.Fatal(err)
	}
	hashes := make([]uint32, 1024)
	rnd := rand.New(rand.NewPCG(9, 9))
	for i := range hashes {
		hashes[i] = rnd.Uint32()
	}
	for _, c := range []struct {
		name string
		g    *Group
	}{{"mpath", NewGroup(ms)}, {"resilient", res.Load().Paths}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			s := 0
			for i := 0; i < b.N; i++ {
				s += c.g.Select(hashes[i&1023])
			}
			sink = s
		})
	}
}

var sink int
