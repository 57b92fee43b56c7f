package dataplane

import (
	"net/netip"
	"urouter/rules"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/decide"
	"urouter/nexthop"
)

// The packets the router makes: ICMPv6 errors (RFC 4443), echo replies
// and TCP resets (local.go). Each is routed by the same decision as a
// forwarded packet, with the router itself as its incoming link.

// icmpError answers a packet with the error it earned, as Linux's
// icmp6_send: never about an ICMPv6 error, within the rate limits, quoting
// as much of the packet as fits in 1280 bytes. The martians that may not
// be answered (multicast or unspecified sources) never get here.
func (w *worker) icmpError(k *pkt) {
	if k.l4.isICMPError() {
		return
	}
	dst := [16]byte(k.p.SourceAddressSlice())
	if !w.dp.icmp.allow(k.icmpType, &dst, w.now) {
		w.ctr(w.in).ICMPLimited.add(1)
		if k.tr != nil {
			k.traceICMP(false)
		}
		return
	}
	src, ok := w.errorSource(k)
	if !ok {
		return
	}
	if k.tr != nil {
		k.traceICMP(true)
	}
	quote := k.p[:min(len(k.p), MinMTU-ipv6Len-header.ICMPv6ErrorHeaderSize)]
	b := w.scratch(vnetHdrLen + ipv6Len + header.ICMPv6ErrorHeaderSize + len(quote))
	clear(b[:vnetHdrLen])
	p := header.IPv6(b[vnetHdrLen:])
	m := header.ICMPv6(p[ipv6Len:])
	m.SetType(header.ICMPv6Type(k.icmpType))
	m.SetCode(header.ICMPv6Code(k.icmpCode))
	m.SetTypeSpecific(k.icmpParam)
	copy(m[header.ICMPv6ErrorHeaderSize:], quote)
	w.originate(b, src, dst, 0, protoICMPv6, 0, 0)
}

// errorSource is the source of an error about k, as icmp6_send picks it:
// k's destination if that is the router's own address; else the route
// back's preferred source; else the selection for the link k came in by.
func (w *worker) errorSource(k *pkt) ([16]byte, bool) {
	d := w.dp.Decider
	to := netip.AddrFrom16([16]byte(k.p.SourceAddressSlice()))
	if a := netip.AddrFrom16([16]byte(k.p.DestinationAddressSlice())); d.IsLocal(a, w.in.Index) {
		return a.As16(), true
	}
	key := decide.KeyOf(to, netip.Addr{})
	key.Proto = protoICMPv6
	key.L3Table = w.in.l3Table()
	if r := d.Decide(&key); r.Verdict == decide.Forward {
		if src := r.Leg().PrefSrc; src.IsValid() {
			return src.As16(), true
		}
	}
	a, ok := d.SourceFor(to, w.in.Index)
	return a.As16(), ok
}

// originate fills in the IPv6 header (an automatic flow label as Linux's
// auto_flowlabels makes, the hop limit of the link it leaves by) of a
// packet the router made in b (a zeroed virtio_net_hdr, room for the
// header, the payload), finishes its ICMPv6 checksum, and routes it: b
// goes out if the decision forwards it on a link that is up and takes it.
func (w *worker) originate(b []byte, src, dst [16]byte, tclass, proto uint8, sport, dport uint16) {
	p := header.IPv6(b[vnetHdrLen:])
	key := decide.Key{Packet: rules.Packet{Dst: dst, Src: src, Proto: proto, Sport: sport, Dport: dport, DSField: tclass}}
	f := key.Flow()
	// Linux's auto flow label is a hash of the 5-tuple, seeded per boot
	key.FlowLabel = nexthop.Hasher{Seed: w.dp.Decider.Seed, Policy: nexthop.PolicyL4}.Hash(&f) & 0xfffff
	p.SetTOS(tclass, key.FlowLabel)
	p.SetPayloadLength(uint16(len(p) - ipv6Len))
	p.SetNextHeader(proto)
	p.SetHopLimit(defaultHopLimit) // the leaving link's, once it is known
	copy(p.SourceAddressSlice(), src[:])
	copy(p.DestinationAddressSlice(), dst[:])
	if proto == protoICMPv6 {
		m := header.ICMPv6(p[ipv6Len:])
		m.SetChecksum(0)
		m.SetChecksum(^transportSum(p, ipv6Len, protoICMPv6))
	}
	if w.in != nil {
		// in the VRF of the link it answers, as icmp6_send's oif is its master
		key.L3Table = w.in.l3Table()
		if linkLocal(dst[:]) {
			key.Oif = w.in.Index // an answer to a link-local address goes back by its link
		}
	}
	r := w.dp.Decider.Decide(&key)
	w.ownLeak(&key, &r, w.dp.Links.snap.Load())
	if r.Verdict == decide.Local { // to the kernel's side of a mirror
		if l := w.dp.Links.ByIndex(r.Nexthop().Link); l != nil {
			if m := l.Mirror(); m != nil {
				m.give(b, len(p))
			}
		}
		return
	}
	if r.Verdict != decide.Forward {
		return
	}
	out := w.dp.Links.ByIndex(r.Nexthop().Link)
	if out == nil || !out.carries() {
		return
	}
	p.SetHopLimit(out.HopLimit())
	if st := r.Nexthop().Encap; st != nil && st.Encap != nil {
		if b, out = w.ownEncap(b, &key, &r); out == nil {
			return
		}
		p = header.IPv6(b[vnetHdrLen:])
	}
	if len(p) > out.IPv6MTU() {
		return
	}
	w.queue(out, b, neighbourOf(&r, p), 1)
}
