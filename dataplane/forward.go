package dataplane

import (
	"encoding/binary"

	"urouter/fib6"
	"urouter/nexthop"
)

// What happens to a packet of the batch.
type action uint8

const (
	actDrop    action = iota // counted under reason
	actLookup                // waiting for its route
	actForward               // out of egress
	actLocal                 // for the router itself
	actError                 // answered with an ICMPv6 error
)

// pkt is the packet path's state for one packet of a batch.
type pkt struct {
	b      []byte // virtio_net_hdr and packet, as read
	p      []byte // the IPv6 packet, trimmed to its payload length
	vh     vnetHdr
	l4     l4info
	act    action
	reason DropReason
	egress *Link
	dev    *tunDev // egress's device, loaded once when the route is decided
	// the ICMPv6 error to send, for actError
	icmpType, icmpCode uint8
	icmpParam          uint32
}

// forward routes a batch of n packets read from w.in, top to bottom:
// parse and check each, look their routes up together, decide, then send
// them in order. The rare paths (ICMPv6 errors, local delivery,
// segmentation) are calls out of it.
func (w *worker) forward(n int) {
	in := w.in
	c := w.ctr(in)
	up := in.Up()
	nl, bytes := 0, 0
	for i := 0; i < n; i++ {
		k := &w.pk[i]
		*k = pkt{b: w.bufs[i][:w.sizes[i]]}
		bytes += w.sizes[i] - vnetHdrLen
		if !up {
			k.drop(DropLinkDown)
			continue
		}
		if !w.parse(k) {
			continue
		}
		w.dsts[nl] = [16]byte(k.p[offDst : offDst+16])
		w.srcs[nl] = [16]byte(k.p[offSrc : offSrc+16])
		f := nexthop.Flow{Src: w.srcs[nl], Dst: w.dsts[nl], Label: binary.BigEndian.Uint32(k.p[0:4]) & 0xfffff}
		if k.l4.ports {
			f.Proto, f.SrcPort, f.DstPort = k.l4.proto, k.l4.sport, k.l4.dport
		}
		w.hashes[nl] = f.Hash()
		w.pending[nl] = i
		nl++
	}
	c.RxPackets.add(uint64(n)) // once per batch
	c.RxBytes.add(uint64(bytes))
	w.route(nl)
	for i := 0; i < n; i++ {
		k := &w.pk[i]
		switch k.act {
		case actDrop:
			w.drop(in, k.reason)
		case actForward:
			if j := w.coalescable(i, n); j > i+1 {
				w.sendCoalesced(i, j)
				i = j - 1
			} else {
				w.send(k)
			}
		case actLocal:
			w.local(k)
		case actError:
			w.drop(in, k.reason)
			w.icmpError(k)
		}
	}
}

func (k *pkt) drop(why DropReason) { k.act, k.reason = actDrop, why }

func (k *pkt) error(why DropReason, typ, code uint8, param uint32) {
	k.act, k.reason = actError, why
	k.icmpType, k.icmpCode, k.icmpParam = typ, code, param
}

// parse checks a packet against the bytes actually read, as Linux's
// ipv6_rcv does: a packet longer than its payload length is trimmed, a
// shorter one dropped. Martians are dropped here.
func (w *worker) parse(k *pkt) bool {
	if len(k.b) < vnetHdrLen+ipv6Len {
		k.drop(DropTruncated)
		return false
	}
	k.vh = decodeVnet(k.b)
	p := k.b[vnetHdrLen:]
	if p[0]>>4 != 6 {
		k.drop(DropVersion)
		return false
	}
	total := ipv6Len + int(binary.BigEndian.Uint16(p[offPayloadLen:]))
	switch {
	case total > len(p):
		k.drop(DropLength)
		return false
	case total < len(p):
		if k.vh.gso() {
			k.drop(DropLength) // a super-packet must add up
			return false
		}
		p = p[:total]
		k.b = k.b[:vnetHdrLen+total]
	}
	k.p = p
	if martian(p) {
		k.drop(DropMartian)
		return false
	}
	k.l4 = walk(p)
	k.act = actLookup
	return true
}

// martian: a source that must not appear on a link (unspecified,
// loopback, multicast), or a destination the router does not route
// (unspecified, loopback, multicast, link-local: the router has no
// link-local address, so such a packet could only leave its link).
func martian(p []byte) bool {
	src, dst := p[offSrc:offSrc+16], p[offDst:offDst+16]
	return src[0] == 0xff || dst[0] == 0xff || isUnspecOrLoop(src) || isUnspecOrLoop(dst) || linkLocal(dst)
}

func isUnspecOrLoop(a []byte) bool {
	return binary.BigEndian.Uint64(a[:8]) == 0 && binary.BigEndian.Uint64(a[8:]) <= 1
}

func linkLocal(a []byte) bool { return a[0] == 0xfe && a[1]&0xc0 == 0x80 }

// route looks the routes of the nl pending packets up, rule by rule (the
// rule set in force when the batch started), all of a rule's lookups as
// one batch, and decides what becomes of each.
func (w *worker) route(nl int) {
	for _, rule := range w.dp.Rules.Load().Rules() {
		if nl == 0 {
			return
		}
		t := w.dp.Tables.Get(rule.Table)
		if t == nil {
			continue
		}
		t.LookupKeys(w.dsts[:nl], w.srcs[:nl], w.hashes[:nl], w.res[:nl])
		left := 0
		for j := 0; j < nl; j++ {
			a := w.res[j]
			if a == nil || a.Type == fib6.Throw {
				// on to the next rule
				w.dsts[left], w.srcs[left], w.hashes[left], w.pending[left] = w.dsts[j], w.srcs[j], w.hashes[j], w.pending[j]
				left++
				continue
			}
			w.decide(&w.pk[w.pending[j]], a)
		}
		nl = left
	}
	for j := 0; j < nl; j++ {
		w.pk[w.pending[j]].error(DropNoRoute, icmpDstUnreach, codeNoRoute, 0)
	}
}

// decide acts on a packet's route.
func (w *worker) decide(k *pkt, a *fib6.Attrs) {
	switch a.Type {
	case fib6.Local:
		k.act = actLocal
		return
	case fib6.Blackhole:
		k.drop(DropBlackhole)
		return
	case fib6.Unreachable:
		k.error(DropNoRoute, icmpDstUnreach, codeNoRoute, 0)
		return
	case fib6.Prohibit:
		k.error(DropProhibited, icmpDstUnreach, codeProhibited, 0)
		return
	}
	p := k.p
	if linkLocal(p[offSrc : offSrc+16]) {
		k.drop(DropMartian) // a link-local source must not leave its link
		return
	}
	if p[offHopLimit] <= 1 {
		k.error(DropHopLimit, icmpTimeExceeded, 0, 0)
		return
	}
	out := w.dp.Links.ByIndex(a.Nexthop.Link)
	if out == nil || !out.Up() {
		k.drop(DropLinkDown)
		return
	}
	mtu := out.MTU()
	if a.MTU != 0 && int(a.MTU) < mtu {
		mtu = int(a.MTU)
	}
	if size := k.wireSize(); size > mtu {
		// routers never fragment IPv6: the sender learns the path MTU
		k.error(DropTooBig, icmpPacketTooBig, 0, uint32(mtu))
		return
	}
	p[offHopLimit]--
	k.act, k.egress, k.dev = actForward, out, out.dev.Load()
}

// wireSize is the size of the packets the sender meant: a GSO
// super-packet is judged by its segments, never by its total length.
func (k *pkt) wireSize() int {
	if !k.vh.gso() {
		return len(k.p)
	}
	hdr, ok := k.gsoHeaderLen()
	if !ok {
		return len(k.p)
	}
	return min(hdr+int(k.vh.gsoSize), len(k.p))
}

// send writes a forwarded packet to its egress: whole when the egress
// takes it as it is, else segmented. A dummy link takes everything and
// drops it.
func (w *worker) send(k *pkt) {
	out := k.egress
	if out.Kind != TUN {
		c := w.ctr(out)
		c.TxPackets.add(1)
		c.TxBytes.add(uint64(len(k.p)))
		c.Drops[DropDummy].add(1)
		return
	}
	dev := k.dev
	if dev == nil {
		w.drop(out, DropLinkDown)
		return
	}
	if dev.takesGSO(k.vh.gsoType) && (dev.vnet || k.vh.flags&vnetNeedsCsum == 0) {
		w.write(out, dev, k.b, 1)
		return
	}
	w.segment(k, out, dev)
}
