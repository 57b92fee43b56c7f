package control

import (
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"urouter/internal/racebuild"
)

// checkFast: what parsePrefixFast accepts, netip accepts as the same
// prefix (and the router's parsePrefix then as it did before).
func checkFast(t *testing.T, s string) {
	t.Helper()
	p, ok := parsePrefixFast([]byte(s))
	if !ok {
		return
	}
	var want netip.Prefix
	var err error
	if strings.Contains(s, "/") {
		want, err = netip.ParsePrefix(s)
	} else {
		var a netip.Addr
		a, err = netip.ParseAddr(s)
		want = netip.PrefixFrom(a, 128)
	}
	if err != nil || p != want || !want.Addr().Is6() || want.Addr().Zone() != "" {
		t.Fatalf("%q: fast %v, netip %v %v", s, p, want, err)
	}
}

func TestParsePrefixFast(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "0123456789abcdefABCDEFgx:::::::/./%"
	fast := 0
	random, wellFormed := racebuild.Sized(1_000_000, 100_000), racebuild.Sized(300_000, 30_000)
	for i := 0; i < random; i++ {
		b := make([]byte, r.IntN(44))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		checkFast(t, string(b))
	}
	// well-formed ones, written every way netip writes them and some more
	for i := 0; i < wellFormed; i++ {
		var a [16]byte
		for g := 0; g < 8; g++ {
			if r.IntN(3) > 0 {
				a[2*g], a[2*g+1] = byte(r.IntN(256)>>r.IntN(9)), byte(r.IntN(256))
			}
		}
		p := netip.PrefixFrom(netip.AddrFrom16(a), r.IntN(140))
		for _, s := range []string{p.String(), p.Addr().String(), p.Addr().StringExpanded() + "/" + strconv.Itoa(p.Bits()),
			strings.ToUpper(p.String()), p.Addr().String() + "/0" + strconv.Itoa(p.Bits())} {
			checkFast(t, s)
			if _, ok := parsePrefixFast([]byte(s)); ok {
				fast++
			}
		}
	}
	if fast < wellFormed {
		t.Fatalf("only %d well-formed prefixes took the fast path", fast)
	}
	for _, s := range []string{"::", "::/0", "::1", "1::", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8",
		"1:2:3:4:5:6:7:8::", "1::2::3", ":1::", "1::2:", "12345::", "::ffff:1.2.3.4", "fe80::1%eth0", "1::/129", "1::/", "1::/+1", "1::/ 1"} {
		checkFast(t, s)
	}
}
