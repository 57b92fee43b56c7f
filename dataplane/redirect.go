package dataplane

import (
	"net/netip"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/decide"
)

// Redirects (RFC 4861 section 8), as Linux's ip6_forward and
// ndisc_send_redirect send them: a packet forwarded out of the link it
// came in by tells its sender of the better first hop, the packet's
// destination itself or a link-local gateway. The redirect comes from the
// link's link-local address, carries the target's link-layer address when
// the cache has it and as much of the packet as fits in 1280 bytes, and
// is limited to one a second with bursts of 6, both per destination and
// per source (Linux's inet_peer_xrlim_allow, 1*HZ). The packet is still
// forwarded.

type redirectLimits struct{ byDst, bySrc destBuckets }

func (r *redirectLimits) init() {
	r.byDst.set(time.Second, 6)
	r.bySrc.set(time.Second, 6)
}

func (r *redirectLimits) allow(src, dst *[16]byte) bool {
	now := int64(time.Since(epoch))
	return r.byDst.allow(dst, now) && r.bySrc.allow(src, now)
}

// redirectTarget is the first hop a sender on the packet's own link
// should use: the destination when it is on the link, else a link-local
// gateway; false when there is none to name.
func redirectTarget(k *pkt) (netip.Addr, bool) {
	dst := netip.AddrFrom16([16]byte(k.p.DestinationAddressSlice()))
	if k.via == dst || k.via.IsLinkLocalUnicast() {
		return k.via, true
	}
	return netip.Addr{}, false
}

// redirect sends k's source a Redirect for k (forwarded back out of the
// link it came in by), if the link has a link-local address, the source
// is a neighbour on it and the limits allow.
func (w *worker) redirect(k *pkt) {
	in := w.in
	ll, ok := in.linkLocalAddr()
	target, named := redirectTarget(k)
	if !ok || !named {
		return
	}
	src := [16]byte(k.p.SourceAddressSlice())
	dst := [16]byte(k.p.DestinationAddressSlice())
	key := decide.KeyOf(netip.AddrFrom16(src), netip.Addr{})
	key.Proto = protoICMPv6
	r := w.dp.Decider.Decide(&key)
	if r.Verdict != decide.Forward || r.Nexthop().Link != in.Index || r.Nexthop().Gateway.IsValid() {
		return // "destination is not a neighbour"
	}
	if !w.dp.redirects.allow(&src, &dst) {
		return
	}
	var tll []byte
	if t := in.Neigh(); t != nil {
		if st, mac := t.State(target); st&neighValid != 0 {
			tll = append([]byte{optTargetLL, 1}, mac[:]...)
		}
	}
	const fixed = header.ICMPv6HeaderSize + 4 + 32 // type, code, sum, reserved, target, destination
	room := MinMTU - ipv6Len - fixed - len(tll) - 8
	quote := k.p[:min(len(k.p), room&^7)]
	b := w.scratch(vnetHdrLen + ipv6Len + fixed + len(tll) + 8 + len(quote))
	clear(b[:vnetHdrLen])
	p := header.IPv6(b[vnetHdrLen:])
	m := header.ICMPv6(p[ipv6Len:])
	m.SetType(header.ICMPv6RedirectMsg)
	m.SetCode(0)
	m.SetTypeSpecific(0)
	t16 := target.As16()
	copy(m[8:], t16[:])
	copy(m[24:], dst[:])
	at := fixed
	at += copy(m[at:], tll)
	m[at], m[at+1] = 4, byte((8+len(quote))/8) // Redirected Header option
	clear(m[at+2 : at+8])
	copy(m[at+8:], quote)
	header.IPv6(m[at+8:]).SetHopLimit(k.p.HopLimit() + 1) // as it came in
	p.Encode(&header.IPv6Fields{PayloadLength: uint16(len(m)), TransportProtocol: header.ICMPv6ProtocolNumber,
		HopLimit: 255, SrcAddr: addrOf(ll), DstAddr: addrOf(netip.AddrFrom16(src))})
	m.SetChecksum(0)
	m.SetChecksum(^transportSum(p, ipv6Len, protoICMPv6))
	w.queue(in, b, netip.AddrFrom16(src), 1)
}

func addrOf(a netip.Addr) tcpip.Address { return tcpip.AddrFrom16(a.As16()) }
