package dataplane

import (
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/dataplane/port"
)

// local delivers a packet addressed to the router. A packet that came in
// by a link (not the kernel's own) first passes its class's limit on that
// link (copp.go). What the router does not answer itself goes to the
// kernel through a mirror, if there is one (mirror.go); else it is
// answered as Linux answers when nothing listens:
// an echo request gets its reply; UDP a Port Unreachable and TCP a reset,
// when their checksums are right; other ICMPv6 messages are taken and
// dropped; any other protocol earns a Parameter Problem pointing at its
// Next Header.
func (w *worker) local(k *pkt) {
	in := w.in
	m := w.toKernel(k)
	if now := w.now; w.own == nil && !w.police(in, w.dp.peers.coppClass(k.p, &k.l4, m != nil, now), now) {
		w.dropped(in, DirIn, k.b, k.tr, DropPoliced) // counted by police
		return
	}
	if m != nil {
		m.give(k.b, len(k.p))
		return
	}
	l4 := k.l4.off
	switch {
	case k.l4.proto == protoICMPv6:
		if k.l4.icmpTy == uint8(header.ICMPv6EchoRequest) && l4 == ipv6Len {
			w.echoReply(k)
			return
		}
		w.dropPacket(k, DropLocal) // errors and other messages: nothing to do
	case k.l4.proto == protoUDP && l4 >= 0:
		if l4+header.UDPMinimumSize > len(k.p) {
			w.dropPacket(k, DropTruncated)
			return
		}
		n := int(header.UDP(k.p[l4:]).Length())
		if n < header.UDPMinimumSize || l4+n > len(k.p) {
			w.dropPacket(k, DropLength)
			return
		}
		if !k.checksumOK(l4, n, protoUDP) {
			w.dropPacket(k, DropChecksum)
			return
		}
		w.portUnreachable(k)
	case k.l4.proto == protoTCP && l4 >= 0:
		if l4+header.TCPMinimumSize > len(k.p) {
			w.dropPacket(k, DropTruncated)
			return
		}
		if off := int(header.TCP(k.p[l4:]).DataOffset()); off < header.TCPMinimumSize || l4+off > len(k.p) {
			w.dropPacket(k, DropLength)
			return
		}
		if !k.checksumOK(l4, len(k.p)-l4, protoTCP) {
			w.dropPacket(k, DropChecksum)
			return
		}
		w.dropPacket(k, DropLocal)
		w.tcpReset(k)
	case l4 >= 0 && hasPorts(k.l4.proto): // SCTP and UDP-Lite, not checked
		w.portUnreachable(k)
	default:
		k.error(DropLocal, header.ICMPv6ParamProblem, header.ICMPv6UnknownHeader, uint32(k.l4.nhOff))
		w.dropPacket(k, DropLocal)
		w.icmpError(k)
	}
}

func (w *worker) portUnreachable(k *pkt) {
	k.error(DropLocal, header.ICMPv6DstUnreachable, header.ICMPv6PortUnreachable, 0)
	w.dropPacket(k, DropLocal)
	w.icmpError(k)
}

// checksumOK verifies the transport checksum of the n bytes at l4; one the
// sender left to offload (NEEDS_CSUM, Linux's CHECKSUM_PARTIAL) is good.
// A UDP checksum of 0 is not allowed over IPv6 (RFC 8200 8.1).
func (k *pkt) checksumOK(l4, n int, proto uint8) bool {
	if k.vh.Flags&port.NeedsCsum != 0 {
		return true
	}
	if proto == protoUDP && header.UDP(k.p[l4:]).Checksum() == 0 {
		return false
	}
	return checksum.Checksum(k.p[l4:l4+n], pseudoSum(k.p, n, proto)) == 0xffff
}

// echoReply turns an echo request into its reply in place and sends it,
// from the address asked, with the request's traffic class (as Linux's
// icmpv6_echo_reply).
func (w *worker) echoReply(k *pkt) {
	p := k.p
	if len(p) < ipv6Len+header.ICMPv6EchoMinimumSize || header.ICMPv6(p[ipv6Len:]).Code() != 0 ||
		k.vh.GSO() || !k.checksumOK(ipv6Len, len(p)-ipv6Len, protoICMPv6) {
		w.dropPacket(k, DropLocal)
		return
	}
	tc, _ := p.TOS()
	src, dst := [16]byte(p.DestinationAddressSlice()), [16]byte(p.SourceAddressSlice())
	header.ICMPv6(p[ipv6Len:]).SetType(header.ICMPv6EchoReply)
	b := k.b[:vnetHdrLen+len(p)]
	clear(b[:vnetHdrLen])
	w.originate(b, src, dst, tc, protoICMPv6, 0, 0)
}

// tcpReset answers a TCP segment to the router with a reset, as Linux's
// tcp_v6_send_reset does for a closed port: never to a reset; to an ACK,
// a RST with its acknowledgment number as sequence; else a RST+ACK
// acknowledging the segment (SYN and FIN count one each). Window 0, no
// options, the segment's DSCP without its ECN bits; not rate-limited.
func (w *worker) tcpReset(k *pkt) {
	t := header.TCP(k.p[k.l4.off:])
	if t.Flags().Contains(header.TCPFlagRst) {
		return
	}
	b := w.scratch(vnetHdrLen + ipv6Len + header.TCPMinimumSize)
	clear(b)
	p := header.IPv6(b[vnetHdrLen:])
	r := header.TCP(p[ipv6Len:])
	r.SetSourcePort(t.DestinationPort())
	r.SetDestinationPort(t.SourcePort())
	if t.Flags().Contains(header.TCPFlagAck) {
		r.SetSequenceNumber(t.AckNumber())
		r.SetFlags(uint8(header.TCPFlagRst))
	} else {
		ack := t.SequenceNumber() + uint32(len(k.p)-k.l4.off-int(t.DataOffset()))
		if t.Flags().Contains(header.TCPFlagSyn) {
			ack++
		}
		if t.Flags().Contains(header.TCPFlagFin) {
			ack++
		}
		r.SetAckNumber(ack)
		r.SetFlags(uint8(header.TCPFlagRst | header.TCPFlagAck))
	}
	r.SetDataOffset(header.TCPMinimumSize)
	src, dst := [16]byte(k.p.DestinationAddressSlice()), [16]byte(k.p.SourceAddressSlice())
	copy(p.SourceAddressSlice(), src[:])
	copy(p.DestinationAddressSlice(), dst[:])
	r.SetChecksum(^transportSum(p, ipv6Len, protoTCP))
	tc, _ := k.p.TOS()
	w.originate(b, src, dst, tc&^3, protoTCP, r.SourcePort(), r.DestinationPort())
}
