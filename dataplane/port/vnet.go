package port

import (
	"encoding/binary"
	"strconv"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// VnetHdrLen is the size of the virtio_net_hdr in front of every packet
// in a port's buffers.
const VnetHdrLen = header.VirtioNetHeaderSize

// VnetHdr is struct virtio_net_hdr, the header a port reads and writes
// in front of every packet (zeros from a port without one). Its fields are in host byte order
// (little-endian here) as the TUN and packet sockets read and write them,
// so gVisor's header.VirtioNetHeader, which reads them big-endian, does
// not serve.
type VnetHdr struct {
	Flags      uint8
	GSOType    uint8
	GSOSize    uint16
	CsumStart  uint16
	CsumOffset uint16
}

// NeedsCsum: the transport checksum is left to be done (from CsumStart,
// stored at CsumStart+CsumOffset).
const NeedsCsum = unix.VIRTIO_NET_HDR_F_NEEDS_CSUM

// DecodeVnet reads the header at b[:VnetHdrLen].
func DecodeVnet(b []byte) VnetHdr {
	return VnetHdr{
		Flags:      b[0],
		GSOType:    b[1] &^ unix.VIRTIO_NET_HDR_GSO_ECN,
		GSOSize:    binary.LittleEndian.Uint16(b[4:]),
		CsumStart:  binary.LittleEndian.Uint16(b[6:]),
		CsumOffset: binary.LittleEndian.Uint16(b[8:]),
	}
}

// EncodeVnet writes h (with hdr_len) in front of a packet.
func EncodeVnet(b []byte, h VnetHdr, hdrLen uint16) {
	b[0], b[1] = h.Flags, h.GSOType
	binary.LittleEndian.PutUint16(b[2:], hdrLen)
	binary.LittleEndian.PutUint16(b[4:], h.GSOSize)
	binary.LittleEndian.PutUint16(b[6:], h.CsumStart)
	binary.LittleEndian.PutUint16(b[8:], h.CsumOffset)
}

// GSO reports whether the packet is a super-packet.
func (h *VnetHdr) GSO() bool { return h.GSOType != unix.VIRTIO_NET_HDR_GSO_NONE }

// ShiftVnet moves a virtio_net_hdr's offsets (csum_start, hdr_len) by d:
// on an Ethernet link they count from the frame's start, in the packet
// path from the IPv6 header's.
func ShiftVnet(b []byte, d int) {
	if b[0]&NeedsCsum != 0 {
		binary.LittleEndian.PutUint16(b[6:], uint16(int(binary.LittleEndian.Uint16(b[6:]))+d))
	}
	if h := binary.LittleEndian.Uint16(b[2:]); h != 0 {
		binary.LittleEndian.PutUint16(b[2:], uint16(max(int(h)+d, 0)))
	}
}

// GSOName is a virtio_net_hdr's gso_type as Linux's ethtool words it.
func GSOName(t uint8) string {
	switch t &^ unix.VIRTIO_NET_HDR_GSO_ECN {
	case unix.VIRTIO_NET_HDR_GSO_NONE:
		return "none"
	case unix.VIRTIO_NET_HDR_GSO_TCPV4:
		return "tcpv4"
	case unix.VIRTIO_NET_HDR_GSO_TCPV6:
		return "tcpv6"
	case unix.VIRTIO_NET_HDR_GSO_UDP_L4:
		return "udp_l4"
	case unix.VIRTIO_NET_HDR_GSO_UDP:
		return "udp"
	}
	return "type " + strconv.Itoa(int(t))
}
