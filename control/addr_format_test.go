package control

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// TestAppendDst: the dump's own address writer writes what netip does,
// for addresses with zero groups of every run and place.
func TestAppendDst(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200_000; i++ {
		var b [16]byte
		for g := 0; g < 8; g++ {
			switch r.IntN(4) {
			case 0, 1: // zero
			case 2:
				b[2*g+1] = byte(r.IntN(256) >> r.IntN(8))
			default:
				b[2*g], b[2*g+1] = byte(r.IntN(256)>>r.IntN(8)), byte(r.IntN(256))
			}
		}
		p := netip.PrefixFrom(netip.AddrFrom16(b), r.IntN(129))
		if got, want := string(appendDst(nil, p)), netipDst(p); got != want {
			t.Fatalf("%x/%d: got %s want %s", b, p.Bits(), got, want)
		}
	}
	for _, s := range []string{"::ffff:1.2.3.4/128", "::ffff:1.2.3.0/120", "::/0", "::1/128", "1::/16", "fe80::1%eth0/128"} {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			continue // a zone: no prefix has one
		}
		if got, want := string(appendDst(nil, p)), netipDst(p); got != want {
			t.Fatalf("%s: got %s want %s", s, got, want)
		}
	}
	z := netip.MustParseAddr("fe80::1%eth0")
	if got := string(appendAddr(nil, z)); got != z.String() {
		t.Fatalf("zone: got %s", got)
	}
}

// netipDst is a destination as iproute2 prints it, through netip.
func netipDst(p netip.Prefix) string {
	switch p.Bits() {
	case 0:
		return "default"
	case 128:
		return p.Addr().String()
	}
	return p.String()
}
