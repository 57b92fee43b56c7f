package dataplane

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Packet layout in a worker's buffer: the 10-byte virtio_net_hdr the TUN
// reads and writes in front of every packet (zeros for links without
// one), then the IPv6 packet.
const (
	vnetHdrLen = 10
	ipv6Len    = 40
	// maxPacket is the largest read: a 64 KiB GSO super-packet.
	maxPacket = 65535 + ipv6Len
)

// IPv6 header fields (RFC 8200), by offset.
const (
	offPayloadLen = 4
	offNextHeader = 6
	offHopLimit   = 7
	offSrc        = 8
	offDst        = 24
)

// Protocol numbers the packet path looks at.
const (
	protoHopByHop = 0
	protoTCP      = 6
	protoUDP      = 17
	protoRouting  = 43
	protoFragment = 44
	protoAH       = 51
	protoICMPv6   = 58
	protoDstOpts  = 60
	protoSCTP     = 132
	protoUDPLite  = 136
	protoMobility = 135
	protoHIP      = 139
	protoShim6    = 140
)

// hasPorts: the transport protocol starts with source and destination
// ports.
func hasPorts(proto uint8) bool {
	switch proto {
	case protoTCP, protoUDP, protoSCTP, protoUDPLite:
		return true
	}
	return false
}

// maxExtHeaders bounds the extension-header walk. A longer chain is still
// forwarded, hashed on its L3 fields only (RFC 7045).
const maxExtHeaders = 8

// vnetHdr is struct virtio_net_hdr, little-endian as the TUN writes it.
type vnetHdr struct {
	flags      uint8
	gsoType    uint8
	gsoSize    uint16
	csumStart  uint16
	csumOffset uint16
}

func decodeVnet(b []byte) vnetHdr {
	return vnetHdr{
		flags:      b[0],
		gsoType:    b[1] &^ unix.VIRTIO_NET_HDR_GSO_ECN,
		gsoSize:    binary.LittleEndian.Uint16(b[4:]),
		csumStart:  binary.LittleEndian.Uint16(b[6:]),
		csumOffset: binary.LittleEndian.Uint16(b[8:]),
	}
}

func (h *vnetHdr) gso() bool { return h.gsoType != unix.VIRTIO_NET_HDR_GSO_NONE }

// l4info is what the extension-header walk found.
type l4info struct {
	proto  uint8 // transport protocol, or the header the walk stopped at
	nhOff  int   // offset of the Next Header field that names proto
	off    int   // offset of the transport header; -1 if not reached
	sport  uint16
	dport  uint16
	ports  bool // sport and dport are valid
	icmpTy uint8
	icmp   bool // icmpTy is valid
}

// walk follows the extension headers of packet p (already checked to be
// at least ipv6Len long and trimmed to its payload length) to the
// transport header, at most maxExtHeaders deep, never reading past p.
func walk(p []byte) l4info {
	r := l4info{proto: p[offNextHeader], nhOff: offNextHeader, off: -1}
	off := ipv6Len
	for i := 0; ; i++ {
		switch r.proto {
		case protoHopByHop, protoRouting, protoDstOpts, protoMobility, protoHIP, protoShim6, 253, 254:
			if i == maxExtHeaders || off+8 > len(p) {
				return r
			}
			r.proto, r.nhOff, off = p[off], off, off+(int(p[off+1])+1)*8
		case protoFragment:
			if i == maxExtHeaders || off+8 > len(p) {
				return r
			}
			if binary.BigEndian.Uint16(p[off+2:])&0xfff8 != 0 {
				r.proto, r.nhOff = p[off], off
				return r // a later fragment: no transport header in it
			}
			r.proto, r.nhOff, off = p[off], off, off+8
		case protoAH:
			if i == maxExtHeaders || off+8 > len(p) {
				return r
			}
			r.proto, r.nhOff, off = p[off], off, off+(int(p[off+1])+2)*4
		case protoTCP, protoUDP, protoSCTP, protoUDPLite:
			if off <= len(p) {
				r.off = off
			}
			if off+4 <= len(p) {
				r.sport = binary.BigEndian.Uint16(p[off:])
				r.dport = binary.BigEndian.Uint16(p[off+2:])
				r.ports = true
			}
			return r
		case protoICMPv6:
			if off <= len(p) {
				r.off = off
			}
			if off+1 <= len(p) {
				r.icmpTy, r.icmp = p[off], true
			}
			return r
		default: // ESP, no next header, or not known: nothing more to see
			if off <= len(p) {
				r.off = off
			}
			return r
		}
		if off > len(p) {
			return r
		}
	}
}

// isICMPError: RFC 4443 forbids answering an ICMPv6 error (types below
// 128) or a redirect with an error.
func (r *l4info) isICMPError() bool { return r.icmp && (r.icmpTy < 128 || r.icmpTy == 137) }
