package dataplane

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/ndisc"
)

// raBody is a Router Advertisement that would make its sender the default
// router and give a prefix to autoconfigure from, with its link-layer
// address.
func raBody(prefix netip.Prefix, mac ndisc.MAC) []byte {
	b := make([]byte, header.NDPRAMinimumSize)
	b[0] = 64                               // cur hop limit
	binary.BigEndian.PutUint16(b[2:], 1800) // router lifetime
	b = append(b, optSourceLL, 1)           // source link-layer address
	b = append(b, mac[:]...)
	pi := make([]byte, 32) // Prefix Information, on-link and autonomous
	pi[0], pi[1], pi[2], pi[3] = 3, 4, byte(prefix.Bits()), 0xc0
	binary.BigEndian.PutUint32(pi[4:], 86400)
	binary.BigEndian.PutUint32(pi[8:], 14400)
	a := prefix.Addr().As16()
	copy(pi[16:], a[:])
	return append(b, pi...)
}

// redirectBody tells the router that dst is better reached by target.
func redirectBody(target, dst netip.Addr, mac ndisc.MAC) []byte {
	b := make([]byte, 4+32)
	t16, d16 := target.As16(), dst.As16()
	copy(b[4:], t16[:])
	copy(b[20:], d16[:])
	return append(append(b, 2, 1), mac[:]...) // target link-layer address
}

// TestEtherDistrusts: what a router must not believe from a host changes
// nothing and is counted by reason: a Router Advertisement (no neighbour
// entry for its sender, as a forwarding Linux takes none of its settings),
// a Redirect, an advertisement of the router's own address (a DAD
// conflict: the address stays), ND with a hop limit below 255 or a bad
// checksum.
func TestEtherDistrusts(t *testing.T) {
	l, e, f := etherLink(t)
	own := netip.MustParseAddr("2001:db8:91::1")
	other := netip.MustParseAddr("2001:db8:91::7")
	allNodes := netip.MustParseAddr("ff02::1")
	badSum := ndFrame(header.ICMPv6NeighborSolicit, hostAddr, own, nsBody(own, &hostMAC), 255)
	badSum[len(badSum)-1] ^= 0xff
	for _, c := range []struct {
		what   string
		frame  []byte
		reason DropReason
	}{
		{"a forged RA", ndFrame(header.ICMPv6RouterAdvert, hostAddr, allNodes, raBody(netip.MustParsePrefix("2001:db8:66::/64"), hostMAC), 255), DropRAIgnored},
		{"a Redirect", ndFrame(header.ICMPv6RedirectMsg, hostAddr, own, redirectBody(other, netip.MustParseAddr("2001:db8:77::1"), hostMAC), 255), DropRedirectIgnored},
		{"an NA of the router's address", ndFrame(header.ICMPv6NeighborAdvert, hostAddr, allNodes, naBody(own, false, true, hostMAC), 255), DropDADConflict},
		{"an NS with hop limit 64", ndFrame(header.ICMPv6NeighborSolicit, hostAddr, own, nsBody(own, &hostMAC), 64), DropNDHopLimit},
		{"an NS with a bad checksum", badSum, DropNDChecksum},
	} {
		before := dropsOf(l, c.reason)
		f.rx <- c.frame
		waitFor(t, c.what+" counted as "+c.reason.String(), func() bool { return dropsOf(l, c.reason) == before+1 })
		if n := e.neigh.Len(); n != 0 {
			t.Errorf("%s made %d neighbour entries: %v", c.what, n, e.neigh.Dump())
		}
		if got := f.take(); len(got) != 0 {
			t.Errorf("%s was answered: %d frames", c.what, len(got))
		}
	}
	if s := l.DAD(own); s != ndisc.DADDone {
		t.Errorf("the router's address after a conflicting NA: %v, want still in use", s)
	}
	if len(l.Addrs()) != 2 {
		t.Errorf("the link's addresses changed: %v", l.Addrs())
	}
}

// TestUntrackedNA: an unsolicited advertisement for an address without an
// entry makes none, unless accept_untracked_na says so: 1, STALE; 2, only
// from a source on one of the link's prefixes (Linux's, RFC 9131).
func TestUntrackedNA(t *testing.T) {
	l, e, f := etherLink(t)
	allNodes := netip.MustParseAddr("ff02::1")
	offLink := netip.MustParseAddr("2001:db8:5::2")
	na := func(src, target netip.Addr) {
		t.Helper()
		f.rx <- ndFrame(header.ICMPv6NeighborAdvert, src, allNodes, naBody(target, false, true, hostMAC), 255)
	}
	for _, c := range []struct {
		mode   int
		src    netip.Addr
		target netip.Addr
		want   ndisc.State
	}{
		{0, hostAddr, hostAddr, ndisc.None},
		{2, offLink, offLink, ndisc.None},
		{2, hostAddr, hostAddr, ndisc.Stale},
		{1, offLink, offLink, ndisc.Stale},
	} {
		l.SetUntrackedNA(c.mode)
		na(c.src, c.target)
		if c.want == ndisc.None {
			ndSettled(t, f, netip.MustParseAddr("2001:db8:91::1")) // it took the NA
		} else {
			waitFor(t, "its entry", func() bool { st, _ := e.neigh.State(c.target); return st == c.want })
		}
		if st, mac := e.neigh.State(c.target); st != c.want || st != ndisc.None && mac != hostMAC {
			t.Errorf("accept_untracked_na %d, an NA from %v: %v %v, want %v", c.mode, c.src, st, mac, c.want)
		}
	}
}
