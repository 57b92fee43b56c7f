package dataplane

import (
	"urouter/dataplane/port"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Packet layout in a worker's buffer: the 10-byte virtio_net_hdr a port
// reads and writes in front of every packet (zeros for ports without one),
// then the IPv6 packet, read and written through gVisor's header views.
const (
	vnetHdrLen = port.VnetHdrLen
	ipv6Len    = header.IPv6MinimumSize
	// maxPacket is the largest read: a 64 KiB GSO super-packet.
	maxPacket = header.IPv6MaximumPayloadSize + ipv6Len
)

// Protocol numbers the packet path looks at.
const (
	protoHopByHop = uint8(header.IPv6HopByHopOptionsExtHdrIdentifier)
	protoTCP      = uint8(header.TCPProtocolNumber)
	protoUDP      = uint8(header.UDPProtocolNumber)
	protoRouting  = uint8(header.IPv6RoutingExtHdrIdentifier)
	protoFragment = uint8(header.IPv6FragmentExtHdrIdentifier)
	protoICMPv6   = uint8(header.ICMPv6ProtocolNumber)
	protoDstOpts  = uint8(header.IPv6DestinationOptionsExtHdrIdentifier)
	protoExp1     = uint8(header.IPv6ExperimentExtHdrIdentifier)
	protoExp2     = uint8(header.IPv6UnknownExtHdrIdentifier)
	protoIPv6     = 41 // IPv6 in IPv6 (SRv6's encapsulation)
	// not in gVisor's header package
	protoAH       = 51
	protoSCTP     = 132
	protoMobility = 135
	protoUDPLite  = 136
	protoHIP      = 139
	protoShim6    = 140
)

func tcpipProto(p uint8) tcpip.TransportProtocolNumber { return tcpip.TransportProtocolNumber(p) }

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
// The next-header and length bytes are read by hand: gVisor's
// IPv6PayloadIterator works on a buffer.Buffer it allocates.
func walk(p header.IPv6) l4info {
	r := l4info{proto: p.NextHeader(), nhOff: header.IPv6NextHeaderOffset, off: -1}
	off := ipv6Len
	for i := 0; ; i++ {
		switch r.proto {
		case protoHopByHop, protoRouting, protoDstOpts, protoMobility, protoHIP, protoShim6, protoExp1, protoExp2:
			if i == maxExtHeaders || off+8 > len(p) {
				return r
			}
			r.proto, r.nhOff, off = p[off], off, off+(int(p[off+1])+1)*8
		case protoFragment:
			if i == maxExtHeaders || off+header.IPv6FragmentExtHdrLength > len(p) {
				return r
			}
			if header.IPv6FragmentExtHdr(p[off+2:off+8]).FragmentOffset() != 0 {
				r.proto, r.nhOff = p[off], off
				return r // a later fragment: no transport header in it
			}
			r.proto, r.nhOff, off = p[off], off, off+header.IPv6FragmentExtHdrLength
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
				u := header.UDP(p[off:]) // every one of them starts with the two ports
				r.sport, r.dport, r.ports = u.SourcePort(), u.DestinationPort(), true
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
func (r *l4info) isICMPError() bool {
	t := header.ICMPv6Type(r.icmpTy)
	return r.icmp && (t.IsErrorType() || t == header.ICMPv6RedirectMsg)
}
