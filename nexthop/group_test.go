package nexthop

import (
	"net/netip"
	"testing"
)

// TestSelectWeights: flows spread over members in proportion to their
// weights, each flow always to the same member, and the ranges are
// Linux's upper bounds (equal weights split the 31-bit space in halves).
func TestSelectWeights(t *testing.T) {
	gw := func(i byte) Nexthop { return Nexthop{Gateway: netip.AddrFrom16([16]byte{0xfe, 0x80, 15: i}), Link: 2} }
	g := NewGroup([]Member{{Nexthop: gw(1), Weight: 1}, {Nexthop: gw(2), Weight: 3}})
	if g.upper[0] != 1<<29-1 || g.upper[1] != 1<<31-1 {
		t.Fatalf("upper bounds %#x %#x", g.upper[0], g.upper[1])
	}
	counts := make([]int, 2)
	f := Flow{Src: [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}, Dst: [16]byte{0x20, 0x01, 0x0d, 0xb8, 1, 15: 2}, Proto: 17}
	for port := 0; port < 40000; port++ {
		f.SrcPort = uint16(port)
		h := f.Hash()
		i := g.Select(h)
		if g.Select(h) != i {
			t.Fatal("the same hash took another member")
		}
		counts[i]++
	}
	if counts[0] < 9000 || counts[0] > 11000 {
		t.Errorf("weights 1:3 split 40000 flows %v", counts)
	}
	if n := NewGroup([]Member{{Nexthop: gw(1)}, {Nexthop: gw(2)}}); n.Select(0) != 0 || n.Select(^uint32(0)) != 1 ||
		n.Select(1<<31-2) != 0 || n.Select(1<<31) != 1 {
		t.Error("equal weights: the halves of the hash space")
	}
}
