package dataplane

import (
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/dataplane/port"
	"urouter/seg6"
)

// Segmentation, for an egress that does not take a super-packet whole:
// what the sending kernel would have done had it known. Also completes
// checksums left to offload (NEEDS_CSUM) for an egress without a
// virtio_net_hdr.

// gsoHeaderLen is the length of the headers every segment repeats: up to
// the transport header's end. The header's own hdr_len is not trusted
// (the kernel may set it to the whole first segment when forwarding).
func (k *pkt) gsoHeaderLen() (int, bool) {
	start := int(k.vh.CsumStart)
	if start < ipv6Len || start+header.UDPMinimumSize > len(k.p) {
		return 0, false
	}
	switch k.vh.GSOType {
	case unix.VIRTIO_NET_HDR_GSO_TCPV6:
		if start+header.TCPMinimumSize > len(k.p) {
			return 0, false
		}
		n := int(header.TCP(k.p[start:]).DataOffset())
		if n < header.TCPMinimumSize || start+n > len(k.p) {
			return 0, false
		}
		return start + n, true
	case unix.VIRTIO_NET_HDR_GSO_UDP_L4:
		return start + header.UDPMinimumSize, true
	}
	return 0, false
}

// segment cuts k into packets that out takes and queues them, or only
// completes its checksum when that is all out cannot take.
func (w *worker) segment(k *pkt, out *Link) {
	if !k.vh.GSO() {
		if k.vh.Flags&port.NeedsCsum != 0 && !completeChecksum(k.p, int(k.vh.CsumStart), int(k.vh.CsumOffset)) {
			w.dropPacket(k, DropLength)
			return
		}
		k.b[0] &^= port.NeedsCsum // done
		w.queue(out, k.b, k.via, 1)
		return
	}
	hdr, ok := k.gsoHeaderLen()
	size := int(k.vh.GSOSize)
	if !ok || size == 0 {
		w.dropPacket(k, DropLength)
		return
	}
	tcp := k.vh.GSOType == unix.VIRTIO_NET_HDR_GSO_TCPV6
	l4 := int(k.vh.CsumStart)
	ips, nips, ok := nestedIPv6(k.p, l4)
	if !ok {
		w.dropPacket(k, DropLength)
		return
	}
	inner := ips[nips-1] // the IPv6 header the transport's pseudo-header is of
	dst := finalDst(k.p, inner, l4)
	payload := k.p[hdr:]
	var seq uint32
	var flags header.TCPFlags
	if tcp {
		t := header.TCP(k.p[l4:])
		seq, flags = t.SequenceNumber(), t.Flags()
	}
	for off, i := 0, 0; off < len(payload); off, i = off+size, i+1 {
		n := min(size, len(payload)-off)
		b := w.scratch(vnetHdrLen + hdr + n)
		clear(b[:vnetHdrLen])
		s := header.IPv6(b[vnetHdrLen:])
		copy(s, k.p[:hdr])
		copy(s[hdr:], payload[off:off+n])
		for _, at := range ips[:nips] {
			header.IPv6(s[at:]).SetPayloadLength(uint16(hdr + n - at - ipv6Len))
		}
		in := header.IPv6(s[inner:])
		if tcp {
			t := header.TCP(s[l4:])
			t.SetSequenceNumber(seq + uint32(off))
			f := flags
			if off+n < len(payload) {
				f &^= header.TCPFlagFin | header.TCPFlagPsh // only on the last segment
			}
			if i > 0 {
				f &^= header.TCPFlagCwr // only on the first
			}
			t.SetFlags(uint8(f))
			t.SetChecksum(0)
			t.SetChecksum(^checksum.Checksum(s[l4:], segmentPseudoSum(in, dst, len(s)-l4, protoTCP)))
		} else {
			u := header.UDP(s[l4:])
			u.SetLength(uint16(hdr - l4 + n))
			u.SetChecksum(0)
			c := ^checksum.Checksum(s[l4:], segmentPseudoSum(in, dst, len(s)-l4, protoUDP))
			if c == 0 {
				c = 0xffff
			}
			u.SetChecksum(c)
		}
		w.queue(out, b, k.via, 1)
	}
}

// nestedIPv6 are the offsets of the IPv6 headers in front of packet p's
// transport header at l4, the outer first and one an SRv6 encapsulation
// put inside after it (four at most), and how many; false if the
// extension headers do not lead to l4.
func nestedIPv6(p []byte, l4 int) (at [4]int, n int, ok bool) {
	next, off := p[6], ipv6Len
	n = 1
	for off < l4 {
		switch next {
		case protoIPv6:
			if n == len(at) || off+ipv6Len > l4 {
				return at, n, false
			}
			at[n], next, off = off, p[off+6], off+ipv6Len
			n++
		case protoHopByHop, protoRouting, protoDstOpts:
			if off+8 > l4 {
				return at, n, false
			}
			next, off = p[off], off+(int(p[off+1])+1)*8
		default:
			return at, n, false
		}
	}
	return at, n, off == l4
}

// segmentsAlone reports whether super-packet k must be segmented here
// whatever its egress takes: an encapsulated packet (IPv6 in IPv6, an
// SRv6 encapsulation's) in front of its transport header, or headers
// that do not lead to it. The kernel cannot segment IPv6 in IPv6 that a
// virtio_net_hdr could not mark as such (SKB_GSO_IPXIP6): it drops it at
// the write (measured on 6.18: sendto fails, ENOMEM). Extension headers
// alone (an SRH inserted inline) it takes whole, and forwards whole.
func (k *pkt) segmentsAlone() bool {
	if !k.vh.GSO() || int(k.vh.CsumStart) == ipv6Len {
		return false
	}
	_, n, ok := nestedIPv6(k.p, int(k.vh.CsumStart))
	return !ok || n > 1
}

// finalDst is the destination of the transport's pseudo-header in packet
// p whose innermost IPv6 header is at inner and transport header at l4:
// that header's, or behind an SRH the final destination, its first
// segment (RFC 8200 8.1, RFC 8754 2).
func finalDst(p []byte, inner, l4 int) []byte {
	next, off := p[inner+6], inner+ipv6Len
	for off+2 <= l4 {
		if next == protoRouting {
			if h := seg6.SRHAt(p[:l4], off); h != nil {
				return h.Segment(0)
			}
		}
		next, off = p[off], off+(int(p[off+1])+1)*8
	}
	return p[inner+24 : inner+40]
}

// segmentPseudoSum sums the pseudo-header of a transport segment of n
// bytes under IPv6 header in, to destination dst.
func segmentPseudoSum(in header.IPv6, dst []byte, n int, proto byte) uint16 {
	return header.PseudoHeaderChecksum(tcpipProto(proto), in.SourceAddress(), tcpip.AddrFrom16Slice(dst), uint16(n))
}

// transportSum sums a transport segment (at p[l4:]) with its IPv6
// pseudo-header; 0xffff over a segment with a valid checksum.
func transportSum(p header.IPv6, l4 int, proto byte) uint16 {
	return checksum.Checksum(p[l4:], pseudoSum(p, len(p)-l4, proto))
}

// pseudoSum sums the IPv6 pseudo-header of packet p for a transport
// segment of n bytes.
func pseudoSum(p header.IPv6, n int, proto byte) uint16 {
	return header.PseudoHeaderChecksum(tcpipProto(proto), p.SourceAddress(), p.DestinationAddress(), uint16(n))
}

// completeChecksum finishes a checksum the sender left partial: the field
// at start+off holds the pseudo-header's sum, the rest is summed from
// start on (CHECKSUM_PARTIAL).
func completeChecksum(p []byte, start, off int) bool {
	at := start + off
	if start < ipv6Len || at+2 > len(p) {
		return false
	}
	initial := uint16(p[at])<<8 | uint16(p[at+1])
	p[at], p[at+1] = 0, 0
	c := ^checksum.Checksum(p[start:], initial)
	p[at], p[at+1] = byte(c>>8), byte(c)
	return true
}
