package dataplane

import (
	"net/netip"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/decide"
	"urouter/ndisc"
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

func (r *redirectLimits) allow(src, dst *[16]byte, now int64) bool {
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
// is a neighbour on it and the limits allow; ndisc builds the message.
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
	key.L3Table = in.l3Table()
	r := w.dp.Decider.Decide(&key)
	if r.Verdict != decide.Forward || r.Nexthop().Link != in.Index || r.Nexthop().Gateway.IsValid() {
		return // "destination is not a neighbour"
	}
	if !w.dp.redirects.allow(&src, &dst, w.now) {
		return
	}
	var tll ndisc.MAC
	hasTLL := false
	if t := in.Neigh(); t != nil {
		if st, mac := t.State(target); st&ndisc.Valid != 0 {
			tll, hasTLL = mac, true
		}
	}
	const max = MinMTU - ipv6Len
	size := ndisc.RedirectSize(hasTLL, len(k.p), max)
	b := w.scratch(vnetHdrLen + ipv6Len + size)
	clear(b[:vnetHdrLen])
	p := header.IPv6(b[vnetHdrLen:])
	m := header.ICMPv6(p[ipv6Len:])
	ndisc.Redirect(m, target, netip.AddrFrom16(dst), tll, hasTLL, k.p)
	p.Encode(&header.IPv6Fields{PayloadLength: uint16(len(m)), TransportProtocol: header.ICMPv6ProtocolNumber,
		HopLimit: 255, SrcAddr: addrOf(ll), DstAddr: addrOf(netip.AddrFrom16(src))})
	m.SetChecksum(^transportSum(p, ipv6Len, protoICMPv6))
	w.queue(in, b, netip.AddrFrom16(src), 1)
}

func addrOf(a netip.Addr) tcpip.Address { return tcpip.AddrFrom16(a.As16()) }
