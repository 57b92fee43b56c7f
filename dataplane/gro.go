package dataplane

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Coalescing, the other way round from segmentation: consecutive UDP
// datagrams of one flow going to one egress that takes UDP super-packets
// (USO) leave in one write, as a super-packet the receiving kernel cuts
// back into the same datagrams. A TUN takes one packet per read, so small
// packets cost a read each; this saves the write each. (wireguard/tun's
// Write does the same, but gets one packet per call.)

const udpHdrLen = 8

// coalescable returns the end (exclusive) of the run of packets from i
// that can leave as one UDP super-packet; i+1 if none can join it.
func (w *worker) coalescable(i, n int) int {
	k := &w.pk[i]
	if !k.udpCoalescable() {
		return i + 1
	}
	if k.dev == nil || !k.dev.takesGSO(unix.VIRTIO_NET_HDR_GSO_UDP_L4) {
		return i + 1
	}
	size := len(k.p) - ipv6Len - udpHdrLen
	total := len(k.p)
	j := i + 1
	for ; j < n; j++ {
		o := &w.pk[j]
		if o.act != actForward || o.egress != k.egress || !o.udpCoalescable() {
			break
		}
		osize := len(o.p) - ipv6Len - udpHdrLen
		if osize > size || total+osize > 65535 ||
			string(o.p[:offPayloadLen]) != string(k.p[:offPayloadLen]) || // version, class, flow label
			string(o.p[offNextHeader:ipv6Len+4]) != string(k.p[offNextHeader:ipv6Len+4]) { // hop limit, addresses, ports
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

// udpCoalescable: a plain UDP datagram, no extension headers, no offload.
func (k *pkt) udpCoalescable() bool {
	return k.l4.proto == protoUDP && k.l4.off == ipv6Len && !k.vh.gso() &&
		len(k.p) > ipv6Len+udpHdrLen && k.vh.flags&vnetNeedsCsum == 0
}

// sendCoalesced writes packets i..j-1 as one UDP super-packet.
func (w *worker) sendCoalesced(i, j int) {
	first := &w.pk[i]
	out, dev := first.egress, first.dev
	if dev == nil {
		for ; i < j; i++ {
			w.drop(out, DropLinkDown)
		}
		return
	}
	b := w.segments[:vnetHdrLen+ipv6Len+udpHdrLen]
	copy(b[vnetHdrLen:], first.p[:ipv6Len+udpHdrLen])
	for x := i; x < j; x++ {
		b = append(b, w.pk[x].p[ipv6Len+udpHdrLen:]...)
	}
	p := b[vnetHdrLen:]
	n := len(p) - ipv6Len // UDP header and all payloads
	binary.BigEndian.PutUint16(p[offPayloadLen:], uint16(n))
	binary.BigEndian.PutUint16(p[ipv6Len+4:], uint16(n))
	// the checksum is left to the receiving kernel (NEEDS_CSUM): the field
	// holds the pseudo-header's sum
	binary.BigEndian.PutUint16(p[ipv6Len+6:], pseudoSum(p, n, protoUDP))
	h := b[:vnetHdrLen]
	h[0], h[1] = vnetNeedsCsum, unix.VIRTIO_NET_HDR_GSO_UDP_L4
	binary.LittleEndian.PutUint16(h[2:], ipv6Len+udpHdrLen)
	binary.LittleEndian.PutUint16(h[4:], uint16(len(first.p)-ipv6Len-udpHdrLen))
	binary.LittleEndian.PutUint16(h[6:], ipv6Len)
	binary.LittleEndian.PutUint16(h[8:], 6)
	w.write(out, dev, b, j-i) // counted as the datagrams it carries
}
