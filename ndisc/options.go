package ndisc

import (
	"encoding/binary"
	"net/netip"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Link-layer address options (RFC 4861 4.6.1).
const (
	optSourceLL = 1
	optTargetLL = 2
)

// TargetLLOption is the option type of a Target Link-Layer Address.
const TargetLLOption = optTargetLL

var allNodes = netip.AddrFrom16(header.IPv6AllNodesMulticastAddress.As16())

// SolicitedNode is address a's solicited-node group: ff02::1:ff00:0/104
// and a's last 24 bits (RFC 4291 2.7.1).
func SolicitedNode(a netip.Addr) netip.Addr {
	b := a.As16()
	return netip.AddrFrom16([16]byte{0xff, 0x02, 10: 0, 11: 1, 12: 0xff, 13: b[13], 14: b[14], 15: b[15]})
}

func isSolicitedNode(a netip.Addr) bool {
	b := a.As16()
	return b[0] == 0xff && b[1] == 0x02 && b[11] == 1 && b[12] == 0xff && binary.BigEndian.Uint64(b[2:10]) == 0
}

// MulticastMAC is the Ethernet group of an IPv6 multicast address
// (RFC 2464: 33:33 and its last 32 bits).
func MulticastMAC(a netip.Addr) MAC {
	b := a.As16()
	return MAC{0x33, 0x33, b[12], b[13], b[14], b[15]}
}

// Groups are the multicast MACs a link with addresses addrs listens to:
// all-nodes, all-routers and the solicited-node group of each address.
func Groups(addrs []netip.Prefix) []MAC {
	gs := []MAC{{0x33, 0x33, 0, 0, 0, 1}, {0x33, 0x33, 0, 0, 0, 2}}
	for _, a := range addrs {
		m := MulticastMAC(SolicitedNode(a.Addr()))
		if !ContainsMAC(gs, m) {
			gs = append(gs, m)
		}
	}
	return gs
}

// ContainsMAC reports whether m is in ms.
func ContainsMAC(ms []MAC, m MAC) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// IsND reports whether p (an IPv6 packet) is a Neighbour Discovery
// message: ICMPv6 types 133 to 137 right after the IPv6 header, as they
// are sent.
func IsND(p []byte) bool {
	return len(p) >= ipv6Len+4 && p[0]>>4 == 6 && p[6] == uint8(header.ICMPv6ProtocolNumber) &&
		p[ipv6Len] >= 133 && p[ipv6Len] <= 137
}

// unicastMAC: neither a group's (the I/G bit), nor all zeros.
func unicastMAC(m []byte) bool { return m[0]&1 == 0 && MAC(m) != MAC{} }

// LinkOption finds a link-layer address option of kind k; ok is false for
// malformed options (a zero length, say, or one longer than a MAC) and for
// an address no unicast neighbour has (a group's, broadcast, all zeros:
// traffic to it would flood or vanish), which void the message.
func LinkOption(opts header.NDPOptions, k uint8) ([]byte, bool) {
	it, err := opts.Iter(true)
	if err != nil {
		return nil, false
	}
	var found []byte
	for {
		o, done, err := it.Next()
		if err != nil {
			return nil, false
		}
		if done {
			return found, found == nil || unicastMAC(found)
		}
		var v []byte
		switch o := o.(type) {
		case header.NDPSourceLinkLayerAddressOption:
			if k == optSourceLL {
				v = []byte(o)
			}
		case header.NDPTargetLinkLayerAddressOption:
			if k == optTargetLL {
				v = []byte(o)
			}
		}
		switch {
		case v == nil || found != nil: // as Linux, the first of two is the one
		case len(v) != 6:
			return nil, false // not an Ethernet address: Linux drops the message
		default:
			found = v
		}
	}
}

// SetSourceLink makes mac the source link-layer address of Router
// Advertisement m (the ICMPv6 message): the option it has is rewritten,
// else one is appended within m's capacity. A kernel's RA passed out of a
// link by the router (zebra's, sent on a mirror that has no MAC of its
// own) then names the router's MAC, as hosts and BGP unnumbered peers
// expect. ok is false for a message too short, malformed options or no
// room.
func SetSourceLink(m []byte, mac MAC) ([]byte, bool) {
	const body = 4 + header.NDPRAMinimumSize
	if len(m) < body {
		return m, false
	}
	for opts := m[body:]; len(opts) > 0; {
		if len(opts) < 2 || opts[1] == 0 || int(opts[1])*8 > len(opts) {
			return m, false
		}
		n := int(opts[1]) * 8
		switch {
		case opts[0] == optSourceLL && n == 8:
			copy(opts[2:8], mac[:])
			return m, true
		case opts[0] == optSourceLL:
			return m, false // not an Ethernet address: hosts drop the RA (as LinkOption)
		}
		opts = opts[n:]
	}
	if cap(m)-len(m) < 8 {
		return m, false
	}
	return append(m, optSourceLL, 1, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]), true
}
