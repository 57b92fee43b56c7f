package dataplane

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
)

// Segmentation, for an egress that does not take a super-packet whole:
// what the sending kernel would have done had it known. Also completes
// checksums left to offload (NEEDS_CSUM) for an egress without a
// virtio_net_hdr.

const vnetNeedsCsum = unix.VIRTIO_NET_HDR_F_NEEDS_CSUM

// gsoHeaderLen is the length of the headers every segment repeats: up to
// the transport header's end. The header's own hdr_len is not trusted
// (the kernel may set it to the whole first segment when forwarding).
func (k *pkt) gsoHeaderLen() (int, bool) {
	start := int(k.vh.csumStart)
	if start < ipv6Len || start+8 > len(k.p) {
		return 0, false
	}
	switch k.vh.gsoType {
	case unix.VIRTIO_NET_HDR_GSO_TCPV6:
		n := int(k.p[start+12]>>4) * 4
		if start+20 > len(k.p) || n < 20 || start+n > len(k.p) {
			return 0, false
		}
		return start + n, true
	case unix.VIRTIO_NET_HDR_GSO_UDP_L4:
		return start + 8, true
	}
	return 0, false
}

// segment sends k to an egress that cannot take it as it is.
func (w *worker) segment(k *pkt, out *Link, dev *tunDev) {
	if !k.vh.gso() {
		// only a checksum left to do
		if k.vh.flags&vnetNeedsCsum != 0 && !completeChecksum(k.p, int(k.vh.csumStart), int(k.vh.csumOffset)) {
			w.drop(out, DropWrite)
			return
		}
		w.write(out, dev, k.b, 1) // to an egress without the header (see send)
		return
	}
	hdr, ok := k.gsoHeaderLen()
	size := int(k.vh.gsoSize)
	if !ok || size == 0 {
		w.drop(out, DropLength)
		return
	}
	tcp := k.vh.gsoType == unix.VIRTIO_NET_HDR_GSO_TCPV6
	l4 := int(k.vh.csumStart)
	payload := k.p[hdr:]
	var seq uint32
	var flags byte
	if tcp {
		seq = binary.BigEndian.Uint32(k.p[l4+4:])
		flags = k.p[l4+13]
	}
	for off, i := 0, 0; off < len(payload); off, i = off+size, i+1 {
		n := min(size, len(payload)-off)
		b := w.segments[:vnetHdrLen+hdr+n]
		clear(b[:vnetHdrLen])
		s := b[vnetHdrLen:]
		copy(s, k.p[:hdr])
		copy(s[hdr:], payload[off:off+n])
		binary.BigEndian.PutUint16(s[offPayloadLen:], uint16(hdr+n-ipv6Len))
		if tcp {
			binary.BigEndian.PutUint32(s[l4+4:], seq+uint32(off))
			f := flags
			if off+n < len(payload) {
				f &^= 0x01 | 0x08 // FIN and PSH only on the last segment
			}
			if i > 0 {
				f &^= 0x80 // CWR only on the first
			}
			s[l4+13] = f
			s[l4+16], s[l4+17] = 0, 0
			binary.BigEndian.PutUint16(s[l4+16:], ^transportSum(s, l4, protoTCP))
		} else {
			binary.BigEndian.PutUint16(s[l4+4:], uint16(hdr-l4+n))
			s[l4+6], s[l4+7] = 0, 0
			c := ^transportSum(s, l4, protoUDP)
			if c == 0 {
				c = 0xffff
			}
			binary.BigEndian.PutUint16(s[l4+6:], c)
		}
		w.write(out, dev, b, 1)
	}
}

// transportSum sums a transport segment (at p[l4:]) with its IPv6
// pseudo-header.
func transportSum(p []byte, l4 int, proto byte) uint16 {
	return checksum.Checksum(p[l4:], pseudoSum(p, len(p)-l4, proto))
}

// pseudoSum sums the IPv6 pseudo-header of packet p for a transport
// segment of n bytes.
func pseudoSum(p []byte, n int, proto byte) uint16 {
	var ph [8]byte
	binary.BigEndian.PutUint32(ph[:4], uint32(n))
	ph[7] = proto
	return checksum.Checksum(ph[:], checksum.Checksum(p[offSrc:ipv6Len], 0))
}

// completeChecksum finishes a checksum the sender left partial: the field
// at start+off holds the pseudo-header's sum, the rest is summed from
// start on (CHECKSUM_PARTIAL).
func completeChecksum(p []byte, start, off int) bool {
	at := start + off
	if start < ipv6Len || at+2 > len(p) {
		return false
	}
	initial := binary.BigEndian.Uint16(p[at:])
	p[at], p[at+1] = 0, 0
	binary.BigEndian.PutUint16(p[at:], ^checksum.Checksum(p[start:], initial))
	return true
}
