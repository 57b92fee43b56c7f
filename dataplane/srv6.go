package dataplane

import (
	"net/netip"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/dataplane/port"
	"urouter/decide"
	"urouter/seg6"
)

// SRv6 on the packet path: a route's seg6 encapsulation or seg6local
// behaviour (package seg6 does what each does to the bytes), run where
// Linux's lwtunnel input redirect runs it, instead of forwarding; the
// packet is then routed again, and forwarded (or handled) as any other.

// srv6Room is the room a worker's buffer keeps in front of each packet
// for what SRv6 pushes: an outer IPv6 header and the longest SRH Linux
// takes, 127 segments (its length is a byte of 8-byte units). A packet
// with less room left (pushed again in the same router) is dropped
// (seg6).
const srv6Room = ipv6Len + 8 + 127*16

// maxSRv6Steps bounds the behaviours one packet goes through at one
// router, as a list that names the router's own SIDs over and over would
// have it go round.
const maxSRv6Steps = 8

// SetTunnelSource sets the source of the outer headers SRv6 pushes
// (`sr tunsrc set`); :: is none: each is then selected for its first
// segment on the route's link, as Linux's set_tun_src.
func (dp *Dataplane) SetTunnelSource(a netip.Addr) {
	if a.IsUnspecified() || !a.IsValid() {
		dp.tunSrc.Store(nil)
		return
	}
	dp.tunSrc.Store(&a)
}

// TunnelSource is what SetTunnelSource set, :: for none.
func (dp *Dataplane) TunnelSource() netip.Addr {
	if a := dp.tunSrc.Load(); a != nil {
		return *a
	}
	return netip.IPv6Unspecified()
}

// srv6 runs the encapsulation or behaviour of the path r chose for the
// packet k of buffer i, routes it again and acts on that as on any
// decision; again while the route found has one of its own.
func (w *worker) srv6(i int, k *pkt, key *decide.Key, r *decide.Result, links *linkSnap, in *Link, forwarding bool) {
	for n := 0; k.act == actSRv6; n++ {
		st := r.Nexthop().Encap
		if n == maxSRv6Steps {
			k.drop(DropSRv6)
			return
		}
		if st.Local != nil {
			w.seg6local(i, k, key, r, st.Local, links, in, forwarding)
			continue
		}
		if !w.seg6encap(i, k, key, r, st.Encap, links) {
			if k.tr != nil {
				k.tr.add(StageSRv6, "encap seg6 mode %s: %s", st.Encap.Mode, k.reason)
			}
			return
		}
		act(k, r, links, in.Index, forwarding)
		if k.act == actLookup {
			w.viaVRF(k, key, r, links, in.Index, forwarding)
		}
		if k.tr != nil {
			k.traceSRv6("encap seg6 mode "+st.Encap.Mode.String(), key, r)
		}
	}
}

// seg6encap is H.Encaps (H.Encaps.Red, H.Insert) of a packet coming in:
// the outer header's source is the tunnel source or the selection for
// the first segment on the route's link; the outer packet is decided as
// the inner was (its key's way in). A packet whose outer packet would not fit its egress
// earns its sender a Packet Too Big of the egress MTU less what the
// encapsulation adds (Linux sends it to the outer source, itself: the
// sender would never learn). False: k was dropped or answered.
func (w *worker) seg6encap(i int, k *pkt, key *decide.Key, r *decide.Result, e *seg6.Encap, links *linkSnap) bool {
	base, at := w.room(i, k)
	grow := e.Len()
	if at < grow || !k.vh.GSO() && len(k.p)-ipv6Len+grow > 0xffff {
		k.drop(DropSRv6)
		return false
	}
	first := e.Dst()
	src := netip.AddrFrom16([16]byte(k.p.SourceAddressSlice())) // inline keeps the packet's
	if e.Mode != seg6.ModeInline {
		src = w.outerSource(first, r.Nexthop().Link)
	}
	outer := *key
	outer.Dst, outer.Src, outer.Oif = first.As16(), src.As16(), 0
	outerFlow(&outer, e)
	*r = w.dp.Decider.Decide(&outer)
	if r.Verdict == decide.Forward {
		if out := links.at(r.Nexthop().Link); out != nil && !out.IsVRF() && out.carries() {
			mtu := out.IPv6MTU()
			if m := int(r.PathMTU()); m != 0 && m < mtu {
				mtu = m
			}
			if k.wireSize()+grow > mtu {
				k.error(DropTooBig, header.ICMPv6PacketTooBig, 0, uint32(max(mtu-grow, header.IPv6MinimumMTU)))
				return false
			}
		}
	}
	var vh [vnetHdrLen]byte
	copy(vh[:], k.b)
	start := e.Apply(base, at+vnetHdrLen, src.As16())
	w.reframe(k, base, vh, start, len(k.p)+grow, grow)
	*key = outer
	return true
}

// seg6local runs a SID's behaviour on a packet coming in, and decides
// for what it made of it; the behaviour's counters count it.
func (w *worker) seg6local(i int, k *pkt, key *decide.Key, r *decide.Result, l *seg6.Local, links *linkSnap, in *Link, forwarding bool) {
	base, at := w.room(i, k)
	if at < 0 {
		l.Count(len(k.p), true)
		k.drop(DropSRv6)
		return
	}
	size := len(k.p)
	var vh [vnetHdrLen]byte
	copy(vh[:], k.b)
	sid := netip.AddrFrom16([16]byte(k.p.DestinationAddressSlice()))
	end := at + vnetHdrLen + size
	s := l.Process(base[:end], at+vnetHdrLen) // the packet's end: the buffer goes on with what an earlier read left
	if s.Next == seg6.Drop {
		l.Count(size, true)
		k.drop(DropSRv6)
		if k.tr != nil {
			k.tr.add(StageSRv6, "action %s sid %s: refused (no SRH, none left, or a bad one)", l.Action, sid)
		}
		return
	}
	if s.Encap != nil { // End.B6.Encaps: the packet as End left it, encapsulated
		grow := s.Encap.Len()
		if s.Start-vnetHdrLen < grow || !k.vh.GSO() && end-s.Start-ipv6Len+grow > 0xffff {
			l.Count(size, true)
			k.drop(DropSRv6)
			return
		}
		s.Start = s.Encap.Apply(base, s.Start, w.outerSource(s.Encap.Dst(), r.Nexthop().Link).As16())
	}
	w.reframe(k, base, vh, s.Start, end-s.Start, at+vnetHdrLen-s.Start)
	k.keyInto(key, in.flowIif())
	switch {
	case s.Via.IsValid():
		key.Dst, key.Oif = s.Via.As16(), s.Oif
	case s.VRF != 0:
		vrf := links.vrfByTable(s.VRF)
		if vrf == nil {
			l.Count(size, true)
			k.drop(DropSRv6)
			return
		}
		key.Iif, key.L3Table = vrf.Index, s.VRF
	}
	if s.Table != 0 {
		*r = w.dp.Decider.DecideIn(key, s.Table)
	} else {
		*r = w.dp.Decider.Decide(key)
	}
	if r.Verdict == decide.Local && !s.Local {
		r.Verdict = decide.Blackhole // seg6_lookup_any_nexthop: no local delivery
	}
	act(k, r, links, in.Index, forwarding)
	if k.act == actLookup {
		w.viaVRF(k, key, r, links, in.Index, forwarding)
	}
	if k.act == actForward && s.Via.IsValid() && !r.Nexthop().Gateway.IsValid() {
		k.via = s.Via // FLOWI_FLAG_KNOWN_NH: nh6 is the neighbour, whatever the destination
	}
	if k.tr != nil {
		k.traceSRv6("action "+l.Action.String()+" sid "+sid.String(), key, r)
	}
	l.Count(size, k.act == actDrop && k.reason != DropBlackhole || k.act == actError && k.reason != DropNoRoute && k.reason != DropProhibited)
}

// ownEncap is the seg6 encapsulation of a packet the router made, in b
// behind its virtio_net_hdr, for the path r chose (Linux's seg6_output,
// the output redirect; again while the outer packet's route has one):
// the packet is copied behind the encapsulation's room in the worker's
// area, and the outer packet decided, key and r becoming its. The link
// it leaves by, nil if none takes it.
func (w *worker) ownEncap(b []byte, key *decide.Key, r *decide.Result) ([]byte, *Link) {
	for n := 0; n < maxSRv6Steps; n++ {
		e := r.Nexthop().Encap.Encap
		size, grow := len(b)-vnetHdrLen, e.Len()
		if size+grow > maxPacket {
			return nil, nil
		}
		first := e.Dst()
		src := netip.AddrFrom16([16]byte(b[vnetHdrLen+8 : vnetHdrLen+24]))
		if e.Mode != seg6.ModeInline {
			src = w.outerSource(first, r.Nexthop().Link)
		}
		nb := w.scratch(vnetHdrLen + grow + size)
		copy(nb[vnetHdrLen+grow:], b[vnetHdrLen:]) // b may be in the area scratch just flushed: copy first
		clear(nb[:vnetHdrLen])
		e.Apply(nb, vnetHdrLen+grow, src.As16())
		b = nb
		key.Dst, key.Src, key.Oif = first.As16(), src.As16(), 0
		outerFlow(key, e)
		*r = w.dp.Decider.Decide(key)
		if r.Verdict != decide.Forward {
			return nil, nil
		}
		if st := r.Nexthop().Encap; st == nil || st.Encap == nil {
			if out := w.dp.Links.ByIndex(r.Nexthop().Link); out != nil && out.carries() {
				return b, out
			}
			return nil, nil
		}
	}
	return nil, nil
}

// outerFlow gives the key of a packet e encapsulates the protocol and
// ports its rules see, as the walk of the packet made would (Linux's
// flow dissector, for rules with ipproto or ports: past the SRH, and
// stopping at an encapsulation): IPv6 and none for the encap modes; the
// packet's own for inline.
func outerFlow(key *decide.Key, e *seg6.Encap) {
	if e.Mode != seg6.ModeInline {
		key.Proto, key.Sport, key.Dport = seg6.ProtoIPv6, 0, 0
	}
}

// outerSource is the source of an outer header to first, pushed for a
// route out of link: the tunnel source, else the selection
// (set_tun_src). The selection walks the router's addresses: it is
// made once a batch for each first segment and link (addresses change
// between batches, as the tables do), not once a packet.
func (w *worker) outerSource(first netip.Addr, link int32) netip.Addr {
	if src := w.dp.TunnelSource(); !src.IsUnspecified() {
		return src
	}
	m := &w.outerSrc
	if m.batch != w.batchSeq || m.first != first || m.link != link {
		src, _ := w.dp.Decider.SourceFor(first, link)
		*m = outerSrcMemo{batch: w.batchSeq, first: first, link: link, src: src}
	}
	return m.src
}

// outerSrcMemo is a selection outerSource made, for a batch.
type outerSrcMemo struct {
	batch uint64
	first netip.Addr
	link  int32
	src   netip.Addr
}

// room is the buffer packet k is in and where k.b starts in it: the room
// in front of the packet; -1 if k.b is in none of the worker's buffers (a
// test's buffers of their own). It is buffer i, unless a port moved the
// buffers read around (an Ethernet reader keeps a batch's frames
// together when it takes some for ND), which the others are then
// searched for.
func (w *worker) room(i int, k *pkt) ([]byte, int) {
	if base, at := inBuffer(w.base[i], k.b); at >= 0 {
		return base, at
	}
	for _, base := range w.base {
		if b, at := inBuffer(base, k.b); at >= 0 {
			return b, at
		}
	}
	return nil, -1
}

// inBuffer is base and where b starts in it, -1 if b is not in it.
func inBuffer(base, b []byte) ([]byte, int) {
	at := cap(base) - cap(b)
	if len(b) == 0 || at < 0 || at >= len(base) || &base[at] != &b[0] {
		return nil, -1
	}
	return base, at
}

// reframe makes k the packet of size bytes at base[start:] after SRv6
// grew it by grow bytes (negative: shrank it): its virtio_net_hdr, vh as
// it was, goes in front of it with its offsets moved, and its headers
// are walked again.
func (w *worker) reframe(k *pkt, base []byte, vh [vnetHdrLen]byte, start, size, grow int) {
	k.b = base[start-vnetHdrLen : start+size]
	copy(k.b, vh[:])
	port.ShiftVnet(k.b, grow)
	k.vh = port.DecodeVnet(k.b)
	k.p = header.IPv6(k.b[vnetHdrLen:])
	k.l4 = walk(k.p)
}
