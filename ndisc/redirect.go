package ndisc

import (
	"net/netip"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Redirect messages (RFC 4861 4.5). When to send one is the packet path's
// decision (a packet forwarded back out of the link it came by, within
// limits); the message is built here.

// redirectFixed is a Redirect's size before its options: ICMPv6 type,
// code, checksum, reserved, target and destination.
const redirectFixed = header.ICMPv6HeaderSize + 4 + 32

// RedirectSize is the size of the Redirect Redirect would write: the fixed
// part, the target's link-layer address option if it has one, and the
// Redirected Header option quoting as much of a packet of pktLen bytes as
// fits in a message of at most max bytes.
func RedirectSize(hasTLL bool, pktLen, max int) int {
	return redirectFixed + tllLen(hasTLL) + 8 + quoteLen(hasTLL, pktLen, max)
}

func tllLen(has bool) int {
	if has {
		return 8
	}
	return 0
}

func quoteLen(hasTLL bool, pktLen, max int) int {
	return min(pktLen, (max-redirectFixed-tllLen(hasTLL)-8)&^7)
}

// Redirect writes into m (RedirectSize bytes, which say how much of pkt
// it quotes) a Redirect telling a sender that dst is better reached
// through target (whose MAC is tll when hasTLL), quoting pkt (as it came
// in: its hop limit is put back up by one). The checksum is left zero for
// the caller, who knows the addresses.
func Redirect(m []byte, target, dst netip.Addr, tll MAC, hasTLL bool, pkt header.IPv6) {
	quote := pkt[:len(m)-redirectFixed-tllLen(hasTLL)-8]
	h := header.ICMPv6(m)
	h.SetType(header.ICMPv6RedirectMsg)
	h.SetCode(0)
	h.SetTypeSpecific(0)
	h.SetChecksum(0)
	t16, d16 := target.As16(), dst.As16()
	copy(m[8:], t16[:])
	copy(m[24:], d16[:])
	at := redirectFixed
	if hasTLL {
		m[at], m[at+1] = optTargetLL, 1
		copy(m[at+2:at+8], tll[:])
		at += 8
	}
	m[at], m[at+1] = 4, byte((8+len(quote))/8) // Redirected Header option
	clear(m[at+2 : at+8])
	copy(m[at+8:], quote)
	header.IPv6(m[at+8:]).SetHopLimit(pkt.HopLimit() + 1)
}
