package dataplane

import (
	"encoding/binary"
	"net/netip"
	"urouter/dataplane/port"
	"urouter/rules"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/decide"
)

// The packet path, in the order a packet meets it:
//
//  1. read: the worker reads a batch from its link's port (worker.go)
//  2. parse: length, version, martians, Hop-by-Hop options (hopopts.go),
//     the extension-header walk to the transport ports (packet.go)
//  3. decide: one decision for the whole batch, rules -> table -> route ->
//     nexthop member (package decide)
//  4. act: forward (hop limit, link-local source, egress MTU), deliver
//     locally (local.go), or drop, with the ICMPv6 error it earned
//     (icmp.go)
//  5. send: whole, coalesced (gro.go) or segmented (gso.go) as the egress
//     takes it; then every egress's packets go out as one batch.
//
// The rare paths are calls out of it.

// What happens to a packet of the batch.
type action uint8

const (
	actDrop    action = iota // counted under reason
	actLookup                // waiting for its decision
	actForward               // out of egress
	actLocal                 // for the router itself
	actError                 // answered with an ICMPv6 error
	actSRv6                  // its path's SRv6 encapsulation or behaviour first (srv6.go)
)

// pkt is the packet path's state for one packet of a batch.
type pkt struct {
	b      []byte      // virtio_net_hdr and packet, as read
	p      header.IPv6 // the IPv6 packet, trimmed to its payload length
	vh     port.VnetHdr
	l4     l4info
	act    action
	reason DropReason
	egress *Link      // for actForward
	via    netip.Addr // the neighbour it goes to, for actForward
	// redirect: forwarded back out of the link it came in by, so its
	// sender earns a Redirect (redirect.go)
	redirect bool
	// the ICMPv6 error to send, for actError
	icmpType, icmpCode uint8
	icmpParam          uint32
	tr                 *TraceRecord // its trace, if it is traced (trace.go)
}

// forward routes a batch of n packets read from w.in, top to bottom.
func (w *worker) forward(n int) {
	in := w.in
	w.now = w.dp.now()
	w.batchSeq++
	c := w.ctr(in)
	up := in.carries()
	w.loadTaps(true) // one atomic load: nil when nothing watches
	if w.caps != nil {
		w.captureBatch(n)
	}
	nk, bytes := 0, 0
	iif := in.flowIif()
	for i := 0; i < n; i++ {
		k := &w.pk[i]
		*k = pkt{b: w.bufs[i][:w.sizes[i]]}
		bytes += w.sizes[i] - vnetHdrLen
		if w.tr != nil {
			w.traceRead(k)
		}
		if !up {
			k.drop(DropLinkDown)
			continue
		}
		ok := w.parse(k)
		if k.tr != nil {
			k.traceParse()
		}
		if !ok || k.act == actLocal {
			continue
		}
		k.keyInto(&w.keys[nk], iif)
		w.pending[nk] = i
		nk++
	}
	c.RxPackets.add(uint64(n)) // once per batch
	c.RxBytes.add(uint64(bytes))
	w.dp.Decider.DecideBatch(&w.batch, w.keys[:nk], w.res[:nk])
	links := w.dp.Links.snap.Load() // the links as of this batch
	forwarding := !w.dp.noForward.Load()
	for j := 0; j < nk; j++ {
		k := &w.pk[w.pending[j]]
		act(k, &w.res[j], links, in.Index, forwarding)
		if k.act == actLookup {
			w.viaVRF(k, &w.keys[j], &w.res[j], links, in.Index, forwarding)
		}
		if k.tr != nil {
			w.traceDecision(k, &w.keys[j]) // the first decision; SRv6's record their own
		}
		if k.act == actSRv6 {
			w.srv6(w.pending[j], k, &w.keys[j], &w.res[j], links, in, forwarding)
		}
	}
	for i := 0; i < n; i++ {
		k := &w.pk[i]
		if k.tr != nil {
			w.traceAct(k)
		}
		w.cur = k.tr
		switch k.act {
		case actDrop:
			w.dropPacket(k, k.reason)
		case actForward:
			if k.redirect {
				w.redirect(k)
			}
			if j := w.coalescable(i, n); j > i+1 {
				w.sendCoalesced(i, j)
				i = j - 1
			} else {
				w.send(k)
			}
		case actLocal:
			w.local(k)
		case actError:
			w.dropPacket(k, k.reason)
			w.icmpError(k)
		}
	}
	w.cur = nil
	w.flush()
	if len(w.traced) > 0 {
		w.traceDone()
	}
	w.dropTaps()
}

func (k *pkt) drop(why DropReason) { k.act, k.reason = actDrop, why }

func (k *pkt) error(why DropReason, typ header.ICMPv6Type, code header.ICMPv6Code, param uint32) {
	k.act, k.reason = actError, why
	k.icmpType, k.icmpCode, k.icmpParam = uint8(typ), uint8(code), param
}

// parse checks a packet against the bytes actually read, as Linux's
// ipv6_rcv does: a packet longer than its payload length is trimmed, a
// shorter one dropped; a payload length of 0 before a Hop-by-Hop header
// is left for the Jumbo Payload option to explain. Martians are dropped,
// Hop-by-Hop options processed, and the transport ports found.
func (w *worker) parse(k *pkt) bool {
	if len(k.b) < vnetHdrLen+ipv6Len {
		k.drop(DropTruncated)
		return false
	}
	k.vh = port.DecodeVnet(k.b)
	p := header.IPv6(k.b[vnetHdrLen:])
	if header.IPVersion(p) != header.IPv6Version {
		k.drop(DropVersion)
		return false
	}
	jumbo := p.PayloadLength() == 0 && p.NextHeader() == protoHopByHop
	total := ipv6Len + int(p.PayloadLength())
	switch {
	case jumbo:
	case total > len(p):
		k.drop(DropLength)
		return false
	case total < len(p):
		if k.vh.GSO() {
			k.drop(DropLength) // a super-packet must add up
			return false
		}
		p = p[:total]
		k.b = k.b[:vnetHdrLen+total]
	}
	k.p = p
	if w.own == nil && martian(p) || w.own != nil && ownMartian(p) {
		if w.own == nil && w.forLinkLocal(p) {
			k.l4 = walk(k.p)
			k.act, k.egress = actLocal, w.in
			return true
		}
		if w.own == nil && linkScopeGroup(p) {
			// the link's own multicast, for the router (a TUN's kernel
			// side sends its Router Solicitations and MLD reports as it
			// comes up): nothing to do, as Linux takes them, no martian
			k.drop(DropLocal)
			return false
		}
		k.drop(DropMartian)
		return false
	}
	if p.NextHeader() == protoHopByHop && !hopByHop(k, jumbo) {
		return false
	}
	k.l4 = walk(k.p)
	k.act = actLookup
	return true
}

// martian: a source that must not appear on a link (unspecified,
// loopback, multicast), or a destination the router does not route
// (unspecified, loopback, multicast, link-local: such a packet could only
// leave its link).
func martian(p header.IPv6) bool {
	src, dst := p.SourceAddressSlice(), p.DestinationAddressSlice()
	return src[0] == 0xff || dst[0] == 0xff || isUnspecOrLoop(src) || isUnspecOrLoop(dst) || linkLocal(dst)
}

// forLinkLocal: a packet to the router's own link-local address on the
// link it came in by, which no route decides (Linux delivers it, as its
// link-local addresses are its own on that link only).
func (w *worker) forLinkLocal(p header.IPv6) bool {
	src, dst := p.SourceAddressSlice(), p.DestinationAddressSlice()
	if !linkLocal(dst) || src[0] == 0xff || isUnspecOrLoop(src) {
		return false
	}
	for _, a := range w.in.Addrs() {
		if a.Addr().As16() == [16]byte(dst) {
			return true
		}
	}
	return false
}

// linkScopeGroup: a packet to a link-local scope group (ff02::/16) from
// a source that may appear on a link.
func linkScopeGroup(p header.IPv6) bool {
	src, dst := p.SourceAddressSlice(), p.DestinationAddressSlice()
	return dst[0] == 0xff && dst[1]&0x0f == 2 && src[0] != 0xff &&
		!(binary.BigEndian.Uint64(src[:8]) == 0 && binary.BigEndian.Uint64(src[8:]) == 1)
}

func isUnspecOrLoop(a []byte) bool {
	return binary.BigEndian.Uint64(a[:8]) == 0 && binary.BigEndian.Uint64(a[8:]) <= 1
}

func linkLocal(a []byte) bool { return a[0] == 0xfe && a[1]&0xc0 == 0x80 }

// keyInto fills in the decision's key of a parsed packet that came in by
// link iif.
func (k *pkt) keyInto(key *decide.Key, iif int32) {
	p := k.p
	tc, label := p.TOS()
	*key = decide.Key{Packet: rules.Packet{
		Dst: [16]byte(p.DestinationAddressSlice()), Src: [16]byte(p.SourceAddressSlice()),
		Iif: iif, Proto: k.l4.proto, DSField: tc,
	}, FlowLabel: label}
	if k.l4.ports {
		key.Sport, key.Dport = k.l4.sport, k.l4.dport
	}
}

// act does what the decision says, for a packet coming in: Linux's
// ip6_forward checks, in its order, for what is forwarded.
func act(k *pkt, r *decide.Result, links *linkSnap, in int32, forwarding bool) {
	switch r.Verdict {
	case decide.Local:
		k.act, k.egress = actLocal, links.at(r.Nexthop().Link) // the address's link
		return
	case decide.Blackhole:
		k.drop(DropBlackhole)
		return
	case decide.Unreachable, decide.NoRoute:
		k.error(DropNoRoute, header.ICMPv6DstUnreachable, header.ICMPv6NetworkUnreachable, 0)
		return
	case decide.Prohibit:
		k.error(DropProhibited, header.ICMPv6DstUnreachable, header.ICMPv6Prohibited, 0)
		return
	}
	if r.Path.Encap != nil {
		k.act = actSRv6 // instead of forwarding, as Linux's lwtunnel input
		return
	}
	if !forwarding {
		k.drop(DropNotForwarding)
		return
	}
	p := k.p
	if p.HopLimit() <= 1 {
		k.error(DropHopLimit, header.ICMPv6TimeExceeded, header.ICMPv6HopLimitExceeded, 0)
		return
	}
	if linkLocal(p.SourceAddressSlice()) {
		k.drop(DropMartian) // a link-local source must not leave its link
		return
	}
	out := links.at(r.Nexthop().Link)
	if out != nil && out.IsVRF() {
		k.act, k.egress = actLookup, out // routed again in its table (viaVRF)
		return
	}
	if out == nil || !out.carries() {
		k.drop(DropLinkDown)
		return
	}
	mtu := out.IPv6MTU()
	if m := int(r.PathMTU()); m != 0 && m < mtu {
		mtu = m
	}
	if size := k.wireSize(); size > mtu {
		// routers never fragment IPv6: the sender learns the path MTU
		k.error(DropTooBig, header.ICMPv6PacketTooBig, 0, uint32(mtu))
		return
	}
	p.SetHopLimit(p.HopLimit() - 1)
	k.act, k.egress, k.via = actForward, out, neighbourOf(r, p)
	k.redirect = out.Index == in // back out of the link it came by
}

// neighbourOf is who a forwarded packet is handed to: the path's gateway,
// or the destination itself on the link.
func neighbourOf(r *decide.Result, p header.IPv6) netip.Addr {
	if gw := r.Nexthop().Gateway; gw.IsValid() {
		return gw
	}
	return netip.AddrFrom16([16]byte(p.DestinationAddressSlice()))
}

// wireSize is the size of the packets the sender meant: a GSO
// super-packet is judged by its segments, never by its total length.
func (k *pkt) wireSize() int {
	if !k.vh.GSO() {
		return len(k.p)
	}
	hdr, ok := k.gsoHeaderLen()
	if !ok {
		return len(k.p)
	}
	return min(hdr+int(k.vh.GSOSize), len(k.p))
}

// send queues a forwarded packet for its egress: whole when the egress
// takes it as it is, else segmented (or its checksum completed).
func (w *worker) send(k *pkt) {
	if k.egress.offloads.Takes(&k.vh) && !k.segmentsAlone() {
		w.queue(k.egress, k.b, k.via, 1)
		return
	}
	w.segment(k, k.egress)
}
