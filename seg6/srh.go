package seg6

import (
	"encoding/binary"
	"net/netip"
)

// The Segment Routing Header, RFC 8754 (Linux's struct ipv6_sr_hdr):
// next header, length in 8-octet units not counting the first 8, routing
// type 4, Segments Left, Last Entry (Linux's first_segment), flags, tag,
// then the segment list, the last segment first, and TLVs.
const (
	SRHFixed     = 8
	RoutingType  = 4
	ProtoRouting = 43
	ProtoIPv6    = 41
	ipv6Len      = 40
	// FlagHMAC is the SRH flag of an HMAC TLV (SR6_FLAG1_HMAC).
	FlagHMAC = 1 << 3
)

// SRH is a Segment Routing Header's bytes.
type SRH []byte

func (h SRH) NextHeader() uint8       { return h[0] }
func (h SRH) Len() int                { return (int(h[1]) + 1) * 8 }
func (h SRH) SegmentsLeft() uint8     { return h[3] }
func (h SRH) LastEntry() uint8        { return h[4] }
func (h SRH) Flags() uint8            { return h[5] }
func (h SRH) Tag() uint16             { return binary.BigEndian.Uint16(h[6:]) }
func (h SRH) setSegmentsLeft(n uint8) { h[3] = n }

// Segment is entry i of the list (0 is the last segment).
func (h SRH) Segment(i int) []byte { return h[SRHFixed+16*i : SRHFixed+16*i+16] }

// Segments is the list in the order the packet visits it (the first
// segment first), as iproute2 prints it.
func (h SRH) Segments() []netip.Addr {
	n := int(h.LastEntry()) + 1
	s := make([]netip.Addr, 0, n)
	for i := n - 1; i >= 0; i-- {
		s = append(s, netip.AddrFrom16([16]byte(h.Segment(i))))
	}
	return s
}

// BuildSRH is the SRH iproute2's parse_srh makes of segs (in visiting
// order): the list reversed, Segments Left and Last Entry the last
// index, no flags, no TLVs. Its next header is left to be filled in.
func BuildSRH(segs []netip.Addr) SRH {
	n := len(segs)
	h := make(SRH, SRHFixed+16*n)
	h[1] = uint8(2 * n)
	h[2] = RoutingType
	h[3], h[4] = uint8(n-1), uint8(n-1)
	for i, s := range segs {
		a := s.As16()
		copy(h.Segment(n-1-i), a[:])
	}
	return h
}

// Valid is Linux's seg6_validate_srh of h, len(h) bytes long: type 4,
// its length what the header says, Segments Left within the list (one
// past it for a reduced SRH, whose first segment is only in the
// destination), Last Entry within the length, and TLVs that fill the rest
// exactly.
func (h SRH) Valid(reduced bool) bool {
	if len(h) < SRHFixed || h[2] != RoutingType || h.Len() != len(h) {
		return false
	}
	if !reduced && h.SegmentsLeft() > h.LastEntry() {
		return false
	}
	if int(h.LastEntry()) > int(h[1])/2-1 || int(h.SegmentsLeft()) > int(h.LastEntry())+1 {
		return false
	}
	off := SRHFixed + (int(h.LastEntry())+1)*16
	for off < len(h) {
		if len(h)-off < 2 {
			return false
		}
		off += 2 + int(h[off+1])
	}
	return off == len(h)
}

// Find is Linux's ipv6_find_hdr for the routing header of packet p (an
// IPv6 header and what follows): the offset of the first routing header,
// passing over those whose Segments Left is 0 when skipZero
// (IP6_FH_F_SKIP_RH); -1 if there is none, a later fragment hides it or
// the chain is cut short. As Linux, it walks only the headers
// ipv6_ext_hdr knows: hop-by-hop, routing, fragment, AH, destination.
func Find(p []byte, skipZero bool) int {
	if len(p) < ipv6Len {
		return -1
	}
	next, off := p[6], ipv6Len
	for {
		if off+8 > len(p) {
			return -1
		}
		switch next {
		case ProtoRouting:
			if !skipZero || p[off+3] != 0 {
				return off
			}
			next, off = p[off], off+(int(p[off+1])+1)*8
		case 0, 60: // hop-by-hop, destination options
			next, off = p[off], off+(int(p[off+1])+1)*8
		case 44: // fragment: a later one carries no headers
			if binary.BigEndian.Uint16(p[off+2:])&^7 != 0 {
				return -1
			}
			next, off = p[off], off+8
		case 51: // AH
			next, off = p[off], off+(int(p[off+1])+2)*4
		default:
			return -1
		}
	}
}

// SRHAt is the SRH at off in p if it is one and valid (Linux's get_srh:
// validated as possibly reduced), else nil.
func SRHAt(p []byte, off int) SRH {
	if off < 0 || off+SRHFixed > len(p) {
		return nil
	}
	n := (int(p[off+1]) + 1) * 8
	if off+n > len(p) {
		return nil
	}
	h := SRH(p[off : off+n])
	if !h.Valid(true) {
		return nil
	}
	return h
}
