package dataplane

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/dataplane/port"
	"urouter/ndisc"
)

// tapMirror is an Ethernet link's TAP mirror: the kernel's side is an
// Ethernet interface with the link's MAC, so isisd and lldpd can speak on
// it. Its worker gets the IPv6 frames the kernel sends (routed as the
// router's own, as a TUN mirror's packets); every other frame goes out of
// the link as the kernel made it. The kernel's side is NOARP
// (port.OpenMirrorTAP): it sends unicast to the router's MAC and keeps no
// neighbours, and it is given no Neighbour Discovery but Router
// Advertisements and Solicitations, so its ND neither answers for the
// router nor learns anything.
type tapMirror struct {
	*port.TAP
	e *ether
	m *Mirror
	// the batch's headers, and the frame on its way out (the worker's own)
	hdrs [batchSize]port.EthHdr
	outB [1][]byte
	// others reads an interface's frames of other ethertypes (its link's
	// socket takes IPv6 alone); done closes when its reader has ended
	others *port.HostOthers
	done   chan struct{}
}

func openTAPMirror(kname string, mtu int, e *ether) (*tapMirror, int32, error) {
	t, kidx, err := port.OpenMirrorTAP(kname, mtu, net.HardwareAddr(e.mac[:]))
	if err != nil {
		return nil, 0, err
	}
	m := &tapMirror{TAP: t, e: e}
	if h, ok := e.io.(*port.Host); ok {
		if m.others, err = h.OpenOthers(net.HardwareAddr(e.mac[:])); err != nil {
			return nil, 0, errors.Join(err, t.Close())
		}
		m.done = make(chan struct{})
		go m.readOthers()
	}
	return m, kidx, nil
}

// readOthers gives the TAP the frames of other ethertypes the interface
// receives, until the mirror closes.
func (t *tapMirror) readOthers() {
	defer close(t.done)
	// a frame is read at buf[4:], so that its payload has room for the
	// virtio_net_hdr giveFrame expects before it (all zero: no offload)
	buf := make([]byte, 4+port.EthHdrLen+65536)
	var h port.EthHdr
	for {
		n, err := t.others.Read(buf[4:])
		if errors.Is(err, os.ErrClosed) {
			return
		}
		if err != nil || n < port.EthHdrLen {
			continue
		}
		copy(h[:], buf[4:4+port.EthHdrLen])
		b := buf[4+port.EthHdrLen-vnetHdrLen : 4+n]
		clear(b[:vnetHdrLen])
		if !t.e.toTAP(&h, b) { // what its socket reads is untagged (port.Others)
			t.e.stats.NotForUs.Add(1)
		}
	}
}

// Close closes the socket of other ethertypes, waits for its reader, then
// closes the TAP, whose descriptor the reader writes to.
func (t *tapMirror) Close() error {
	var err error
	if t.others != nil {
		err = t.others.Close()
		<-t.done
	}
	return errors.Join(err, t.TAP.Close())
}

// ReadBatch reads what the kernel sends and keeps its IPv6 packets, their
// header's offsets made the packet path's; the other frames leave by the
// link here. It returns once it has a packet.
func (t *tapMirror) ReadBatch(q int, bufs [][]byte, sizes []int) (int, error) {
	for {
		n, err := t.ReadFrames(q, bufs, t.hdrs[:len(bufs)], nil, sizes) // a tagged frame leaves as it came
		keep := 0
		for i := 0; i < n; i++ {
			if sizes[i] == 0 {
				continue
			}
			if binary.BigEndian.Uint16(t.hdrs[i][12:]) != port.EtherTypeIPv6 {
				t.out(t.hdrs[i:i+1], bufs[i][:sizes[i]])
				continue
			}
			port.ShiftVnet(bufs[i], -port.EthHdrLen)
			keep = kept(bufs, sizes, i, keep)
		}
		if keep > 0 || err != nil {
			return keep, err
		}
	}
}

// out sends a frame the kernel made (IS-IS, LLDP) out of the link, as it
// is: its source is the TAP's MAC, the link's.
func (t *tapMirror) out(h []port.EthHdr, b []byte) {
	m := t.m
	m.DownPackets.Add(1)
	m.DownBytes.Add(uint64(len(b) - vnetHdrLen))
	l := t.e.link.Load()
	if l == nil || !l.Up() {
		m.Dropped.Add(1)
		return
	}
	t.outB[0] = b
	if _, err := t.e.io.WriteFrames(h, t.outB[:]); err != nil {
		m.Dropped.Add(1)
	}
	t.outB[0] = nil
}

// give frames an IPv6 packet for the kernel: to the TAP's MAC (the
// link's) or the group's, from its sender's MAC if the link's cache has
// it (else the link's own).
func (t *tapMirror) give(b []byte) error {
	var h [1]port.EthHdr
	p := header.IPv6(b[vnetHdrLen:])
	dst := netip.AddrFrom16([16]byte(p.DestinationAddressSlice()))
	to := t.e.mac
	if dst.IsMulticast() {
		to = ndisc.MulticastMAC(dst)
	}
	from := t.e.mac
	if ent := t.e.neigh.Lookup(netip.AddrFrom16([16]byte(p.SourceAddressSlice()))); ent != nil {
		if mac := ent.MAC(); mac != (ndisc.MAC{}) {
			from = mac
		}
	}
	copy(h[0][0:6], to[:])
	copy(h[0][6:12], from[:])
	binary.BigEndian.PutUint16(h[0][12:], port.EtherTypeIPv6)
	port.ShiftVnet(b, port.EthHdrLen)
	_, err := t.WriteFrames(h[:], [][]byte{b})
	return err
}

// giveFrame writes a frame the link read, as it came.
func (t *tapMirror) giveFrame(h *port.EthHdr, b []byte) error {
	_, err := t.WriteFrames([]port.EthHdr{*h}, [][]byte{b})
	return err
}

// WriteBatch gives the kernel packets, as give.
func (t *tapMirror) WriteBatch(_ int, pkts [][]byte, _ []netip.Addr) (int, error) {
	for i, p := range pkts {
		if err := t.give(p); err != nil {
			return i, err
		}
	}
	return len(pkts), nil
}

// frameClass is the CoPP class of a frame that is not IPv6, given up a TAP
// mirror: LLDP's group is lldp, IS-IS's groups isis, each a class of its
// own (any LAN host may send to them, so they are not routing, which BGP's
// and BFD's sessions share); anything else (the other IEEE 802.1 groups'
// STP, LACP, pause frames; unicast) is other.
func frameClass(h *port.EthHdr) CoPPClass {
	switch ndisc.MAC(h[:6]) {
	case ndisc.MAC{0x01, 0x80, 0xc2, 0, 0, 0x0e}: // LLDP
		return CoPPLLDP
	case ndisc.MAC{0x01, 0x80, 0xc2, 0, 0, 0x14}, ndisc.MAC{0x01, 0x80, 0xc2, 0, 0, 0x15}, // IS-IS AllL1ISs, AllL2ISs
		ndisc.MAC{0x09, 0x00, 0x2b, 0, 0, 0x04}, ndisc.MAC{0x09, 0x00, 0x2b, 0, 0, 0x05}: // AllESs, AllISs
		return CoPPISIS
	}
	return CoPPOther
}

// toTAP gives a frame that is not IPv6 up the link's TAP mirror, if it has
// one and the frame is for the router's MAC or a group (within its class's
// limit); it reports whether the frame went up.
func (e *ether) toTAP(h *port.EthHdr, b []byte) bool {
	m := e.mirror()
	if m == nil || m.Kind != MirrorTAP || h[0]&1 == 0 && ndisc.MAC(h[:6]) != e.mac || len(b) <= vnetHdrLen {
		return false // a frame with nothing after its header says nothing
	}
	if e.police(frameClass(h), len(b)-vnetHdrLen, true) {
		m.giveFrame(h, b)
	}
	return true
}

// ndUp gives the mirror the Neighbour Discovery the kernel's daemons need:
// every Router Advertisement (zebra learns a BGP unnumbered peer's
// link-local address from them; the router itself ignores them), and the
// Router Solicitations when the link's advertisements are the kernel's
// (the router's own sender is off).
func (e *ether) ndUp(h *port.EthHdr, b []byte) {
	m := e.mirror()
	if m == nil {
		return
	}
	switch header.ICMPv6Type(b[vnetHdrLen+ipv6Len]) {
	case header.ICMPv6RouterAdvert:
	case header.ICMPv6RouterSolicit:
		if e.nd.RA().Enabled {
			return
		}
	default:
		return
	}
	m.giveFrame(h, b)
}

// kernelRA passes a Router Advertisement the kernel sent down a mirror
// (zebra's) out of an Ethernet link with the link's MAC as its source
// link-layer address, unless the link's advertisements are the router's
// own; it reports whether the RA goes.
func (w *worker) kernelRA(k *pkt) bool {
	e, ok := w.in.hw.(*ether)
	if !ok {
		return true
	}
	if e.nd.RA().Enabled {
		w.own.RAsHeld.Add(1)
		return false
	}
	off := k.l4.off
	if off < 0 {
		return false
	}
	msg, ok := ndisc.SetSourceLink(k.p[off:], e.mac)
	if !ok {
		return false
	}
	if grew := len(msg) - (len(k.p) - off); grew > 0 {
		k.p = k.p[:len(k.p)+grew]
		k.b = k.b[:len(k.b)+grew]
		k.p.SetPayloadLength(k.p.PayloadLength() + uint16(grew))
	}
	m := header.ICMPv6(k.p[off:])
	m.SetChecksum(0)
	m.SetChecksum(^transportSum(k.p, off, protoICMPv6))
	return true
}
