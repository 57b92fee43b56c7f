package dataplane

import (
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/dataplane/port"
)

// Coalescing, the other way round from segmentation: consecutive UDP
// datagrams of one flow going to one egress that takes UDP super-packets
// (USO) leave in one write, as a super-packet the receiving kernel cuts
// back into the same datagrams. A TUN takes one packet per read, so small
// packets cost a read each; this saves the write each. (wireguard/tun's
// Write does the same, but gets one packet per call.)

// udpChecksumOffset is where UDP's checksum is (gVisor keeps its constant
// unexported).
const udpChecksumOffset = 6

// coalescable returns the end (exclusive) of the run of packets from i
// that can leave as one UDP super-packet; i+1 if none can join it.
func (w *worker) coalescable(i, n int) int {
	k := &w.pk[i]
	if !k.udpCoalescable() || !k.egress.offloads.UDP || k.tr != nil {
		return i + 1 // a traced packet goes alone, its steps its own
	}
	size := len(k.p) - ipv6Len - header.UDPMinimumSize
	total := len(k.p)
	j := i + 1
	for ; j < n; j++ {
		o := &w.pk[j]
		if o.act != actForward || o.egress != k.egress || !o.udpCoalescable() || o.tr != nil {
			break
		}
		osize := len(o.p) - ipv6Len - header.UDPMinimumSize
		if osize > size || total+osize > maxPacket ||
			string(o.p[:header.IPv6PayloadLenOffset]) != string(k.p[:header.IPv6PayloadLenOffset]) || // version, class, flow label
			string(o.p[header.IPv6NextHeaderOffset:ipv6Len+4]) != string(k.p[header.IPv6NextHeaderOffset:ipv6Len+4]) { // hop limit, addresses, ports
			break
		}
		total += osize
		if osize < size {
			j++ // a shorter datagram can only be the last
			break
		}
	}
	return j
}

// udpCoalescable: a plain UDP datagram, no extension headers, not a
// super-packet; its checksum done, or left to do at the UDP header (as a
// local sender's datagrams come: the super-packet's segmentation computes
// every datagram's checksum anyway).
func (k *pkt) udpCoalescable() bool {
	return k.l4.proto == protoUDP && k.l4.off == ipv6Len && !k.vh.GSO() &&
		len(k.p) > ipv6Len+header.UDPMinimumSize &&
		(k.vh.Flags&port.NeedsCsum == 0 || k.vh.CsumStart == ipv6Len && k.vh.CsumOffset == udpChecksumOffset)
}

// sendCoalesced queues packets i..j-1 as one UDP super-packet.
func (w *worker) sendCoalesced(i, j int) {
	first := &w.pk[i]
	out := first.egress
	n := 0
	for x := i; x < j; x++ {
		n += len(w.pk[x].p) - ipv6Len - header.UDPMinimumSize
	}
	b := w.scratch(vnetHdrLen + ipv6Len + header.UDPMinimumSize + n)
	copy(b[vnetHdrLen:], first.p[:ipv6Len+header.UDPMinimumSize])
	at := vnetHdrLen + ipv6Len + header.UDPMinimumSize
	for x := i; x < j; x++ {
		at += copy(b[at:], w.pk[x].p[ipv6Len+header.UDPMinimumSize:])
	}
	p := header.IPv6(b[vnetHdrLen:])
	l := uint16(len(p) - ipv6Len) // UDP header and all payloads
	p.SetPayloadLength(l)
	u := header.UDP(p[ipv6Len:])
	u.SetLength(l)
	// the checksum is left to the receiving kernel (NEEDS_CSUM): the field
	// holds the pseudo-header's sum
	u.SetChecksum(pseudoSum(p, int(l), protoUDP))
	port.EncodeVnet(b, port.VnetHdr{
		Flags: port.NeedsCsum, GSOType: unix.VIRTIO_NET_HDR_GSO_UDP_L4,
		GSOSize:   uint16(len(first.p) - ipv6Len - header.UDPMinimumSize),
		CsumStart: ipv6Len, CsumOffset: udpChecksumOffset,
	}, ipv6Len+header.UDPMinimumSize)
	w.queue(out, b, w.pk[i].via, j-i) // counted as the datagrams it carries
}
