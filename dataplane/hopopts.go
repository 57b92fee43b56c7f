package dataplane

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Hop-by-Hop options, processed as Linux's ipv6_parse_hopopts and
// ip6_parse_tlv do on every packet that has them, before its route is
// looked up (checked against a Linux 6.18 router: see hopopts_test.go).
// The options are read by hand: gVisor's options iterator allocates a
// buffer per header, and its semantics are gVisor's, not Linux's.

// Option types Linux knows in a Hop-by-Hop header.
const (
	optPad1        = 0
	optPadN        = 1
	optRouterAlert = 5
	optCALIPSO     = 7
	optIOAM        = 0x31
	optJumbo       = 0xc2
)

// maxHopOpts is Linux's net.ipv6.max_hbh_opts_number: more options than
// this (padding aside) and the packet is dropped.
const maxHopOpts = 8

// hopByHop processes the options of k's Hop-by-Hop header and reports
// whether the packet goes on; if not, k says why (a drop, or the
// Parameter Problem it earned). jumbo: the payload length is 0, so only a
// Jumbo Payload option can say how long the packet is.
func hopByHop(k *pkt, jumbo bool) bool {
	p := k.p
	if len(p) < ipv6Len+8 {
		k.drop(DropTruncated)
		return false
	}
	end := ipv6Len + (int(p[ipv6Len+1])+1)*8
	if end > len(p) {
		k.drop(DropTruncated)
		return false
	}
	sawJumbo := false
	opts, pad := 0, 0 // options seen; padding bytes in a row
	for off := ipv6Len + 2; off < end; {
		typ := p[off]
		if typ == optPad1 {
			if pad++; pad > 7 {
				k.drop(DropOption)
				return false
			}
			off++
			continue
		}
		if off+2 > end || off+2+int(p[off+1]) > end {
			k.drop(DropOption)
			return false
		}
		n := 2 + int(p[off+1])
		if typ == optPadN {
			// RFC 4942 2.1.9.5: padding never needs more than 7 bytes, and
			// carries zeros
			if pad += n; pad > 7 || !zeros(p[off+2:off+n]) {
				k.drop(DropOption)
				return false
			}
			off += n
			continue
		}
		pad = 0
		if opts++; opts > maxHopOpts {
			k.drop(DropOption)
			return false
		}
		switch typ {
		case optRouterAlert:
			if n != 4 {
				k.drop(DropOption)
				return false
			}
		case optIOAM:
			if off&3 != 0 { // misaligned; else ignored, as IOAM is off
				k.drop(DropOption)
				return false
			}
		case optCALIPSO:
			// Linux accepts it only for a CALIPSO domain it is configured
			// with; the router has none
			k.drop(DropOption)
			return false
		case optJumbo:
			if !jumboPayload(k, off, n) {
				return false
			}
			sawJumbo = true
		default:
			if !unknownOption(k, off) {
				return false
			}
		}
		off += n
	}
	if jumbo && !sawJumbo {
		k.drop(DropLength) // a payload length of 0 that nothing explains
		return false
	}
	return true
}

func zeros(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// unknownOption acts on an option the router does not know by the two
// high bits of its type (RFC 8200 4.2): skip it, drop the packet, or drop
// it with a Parameter Problem pointing at the option (for 11, only when
// the destination is not multicast).
func unknownOption(k *pkt, off int) bool {
	switch header.IPv6OptionUnknownAction(k.p[off] >> 6) {
	case header.IPv6OptionUnknownActionSkip:
		return true
	case header.IPv6OptionUnknownActionDiscard:
		k.drop(DropOption)
	case header.IPv6OptionUnknownActionDiscardSendICMPNoMulticastDest:
		if k.p.DestinationAddressSlice()[0] == 0xff {
			k.drop(DropOption)
			break
		}
		fallthrough
	case header.IPv6OptionUnknownActionDiscardSendICMP:
		k.error(DropOption, header.ICMPv6ParamProblem, header.ICMPv6UnknownOption, uint32(off))
	}
	return false
}

// jumboPayload checks a Jumbo Payload option as RFC 2675 section 3 and
// Linux's ipv6_hop_jumbo: 4 bytes long at 4n+2; a length above 65535
// (else Parameter Problem at the length field); a payload length of 0
// (else Parameter Problem at the option). A jumbogram that passes could
// never fit in what a port reads: it is dropped as too short.
func jumboPayload(k *pkt, off, n int) bool {
	if n != 6 || off&3 != 2 {
		k.drop(DropOption)
		return false
	}
	size := binary.BigEndian.Uint32(k.p[off+2:])
	switch {
	case size <= header.IPv6MaximumPayloadSize:
		k.error(DropOption, header.ICMPv6ParamProblem, header.ICMPv6ErroneousHeader, uint32(off+2))
	case k.p.PayloadLength() != 0:
		k.error(DropOption, header.ICMPv6ParamProblem, header.ICMPv6ErroneousHeader, uint32(off))
	default:
		k.drop(DropLength)
	}
	return false
}
