package seg6

import (
	"encoding/binary"
	"net/netip"
)

// Next is what the caller does with a packet after its behaviour.
type Next uint8

const (
	// Drop: the packet is dropped, an error of the behaviour's
	Drop Next = iota
	// Route: decide again for the packet's destination (Step.Via's if
	// set), in Step.Table (0: through the rules, as it came in) or as
	// coming in by Step.VRF's VRF
	Route
)

// Step is what a behaviour did to a packet and asks of the caller.
type Step struct {
	Next Next
	// Start is where the packet starts in the buffer now
	Start int
	// Table is the table to look up in (End.T, End.DT6's legacy mode);
	// 0 goes through the rules
	Table uint32
	// VRF is the table of the VRF the packet comes in by (End.DT6's
	// vrftable); 0 for none
	VRF uint32
	// Via is the neighbour the lookup is for (End.X, End.DX6), the
	// packet's destination left as it is; zero for the destination
	Via netip.Addr
	// Oif is the link Via is looked up on (End.X's oif), 0 for any
	Oif int32
	// Local: the lookup may deliver to the router (End.DT6 legacy);
	// else a local route drops it (seg6_lookup_any_nexthop)
	Local bool
	// Encap is pushed on the packet before its lookup (End.B6.Encaps),
	// by the caller, who chooses its source
	Encap *Encap
}

// Process runs l's behaviour on the IPv6 packet at buf[at:], which ends
// where buf does (Linux's seg6_local_input_core and the actions' input
// functions), in place; what is in front of it is room.
func (l *Local) Process(buf []byte, at int) Step {
	p := buf[at:]
	switch l.Action {
	case ActionEnd:
		if l.Flavors.Ops&FlavorNextCSID != 0 && csidNext(p, &l.Flavors) {
			return Step{Next: Route, Start: at}
		}
		return l.end(buf, at, Step{Next: Route})
	case ActionEndX:
		if l.Flavors.Ops&FlavorNextCSID != 0 && csidNext(p, &l.Flavors) {
			return Step{Next: Route, Start: at, Via: l.NH6, Oif: l.OIF}
		}
		return l.end(buf, at, Step{Next: Route, Via: l.NH6, Oif: l.OIF})
	case ActionEndT:
		return l.end(buf, at, Step{Next: Route, Table: l.Table})
	case ActionEndB6Encaps:
		return l.end(buf, at, Step{Next: Route, Encap: l.push})
	case ActionEndDX6:
		s := decap(buf, at)
		if s.Next == Route && !l.NH6.IsUnspecified() {
			s.Via = l.NH6
		}
		return s
	case ActionEndDT6:
		s := decap(buf, at)
		if l.VRFTable != 0 {
			s.VRF = l.VRFTable
		} else {
			s.Table, s.Local = l.Table, true
		}
		return s
	}
	return Step{}
}

// end is the End behaviour's SRH processing (input_action_end_core):
// the first routing header with segments left must be a valid SRH
// without an HMAC (urouter holds no keys: Linux without the key drops
// it too); Segments Left goes down by one and the destination becomes
// that segment (advance_nextseg). With PSP (end_flv8986_core) the first
// routing header is taken as it is: none, or none left, drops; one left
// is advanced and the SRH popped; more is the plain End.
func (l *Local) end(buf []byte, at int, s Step) Step {
	p := buf[at:]
	psp := l.Flavors.Ops&FlavorPSP != 0 && l.Flavors.Ops&FlavorNextCSID == 0
	off := Find(p, !psp)
	srh := SRHAt(p, off)
	if srh == nil || srh.SegmentsLeft() == 0 || srh.Flags()&FlagHMAC != 0 {
		return Step{}
	}
	sl := srh.SegmentsLeft() - 1
	srh.setSegmentsLeft(sl)
	copy(p[24:40], srh.Segment(int(sl)))
	s.Start = at
	if psp && sl == 0 {
		if s.Start = pop(buf, at, off); s.Start < 0 {
			return Step{}
		}
	}
	return s
}

// pop takes the SRH at off out of the packet at buf[at:] (Linux's
// seg6_pop_srh): what comes before it moves up to it, the header that
// named it names what it named, and the payload length shrinks. It
// returns the new start, or -1 if a fragment or AH header comes before
// the SRH (Linux will not pop across them).
func pop(buf []byte, at, off int) int {
	p := buf[at:]
	n := SRH(p[off:]).Len()
	prev := 6 // the Next Header field naming the SRH
	for o, next := ipv6Len, p[6]; o < off; {
		if next == 44 || next == 51 {
			return -1
		}
		prev = o
		next, o = p[o], o+(int(p[o+1])+1)*8
	}
	p[prev] = p[off]
	binary.BigEndian.PutUint16(p[4:], binary.BigEndian.Uint16(p[4:])-uint16(n))
	copy(buf[at+n:at+n+off], p[:off])
	return at + n
}

// decap is the decapsulation of End.DX6 and End.DT6 (decap_and_validate):
// an SRH, if the packet has a valid one, must have no segments left; the
// inner IPv6 packet is found through the extension headers and all that
// is in front of it goes.
func decap(buf []byte, at int) Step {
	p := buf[at:]
	if srh := SRHAt(p, Find(p, false)); srh != nil && (srh.SegmentsLeft() > 0 || srh.Flags()&FlagHMAC != 0) {
		return Step{}
	}
	off := findIPv6(p)
	if off < 0 || len(p)-off < ipv6Len || p[off]>>4 != 6 {
		return Step{}
	}
	return Step{Next: Route, Start: at + off}
}

// findIPv6 is ipv6_find_hdr for an inner IPv6 header: its offset, or -1.
func findIPv6(p []byte) int {
	next, off := p[6], ipv6Len
	for {
		switch next {
		case ProtoIPv6:
			return off
		case 0, 60, ProtoRouting, 51, 44:
			if off+8 > len(p) {
				return -1
			}
			switch next {
			case 51:
				next, off = p[off], off+(int(p[off+1])+2)*4
			case 44:
				if binary.BigEndian.Uint16(p[off+2:])&^7 != 0 {
					return -1
				}
				next, off = p[off], off+8
			default:
				next, off = p[off], off+(int(p[off+1])+1)*8
			}
		default:
			return -1
		}
	}
}

// csidNext is NEXT-C-SID's step (RFC 9800, Linux's
// seg6_next_csid_advance_arg): if the destination's argument (what
// follows the locator block and node function) is not zero, it shifts
// left by the node function's length into the node function's place,
// zeros coming in, and true; else false, for the classic End.
func csidNext(p []byte, f *Flavors) bool {
	dst := p[24:40]
	lb, nf := int(f.LBLen)/8, int(f.NFLen)/8
	arg := dst[lb+nf:]
	zero := true
	for _, b := range arg {
		if b != 0 {
			zero = false
			break
		}
	}
	if zero {
		return false
	}
	copy(dst[lb:], arg)
	clear(dst[16-nf:])
	return true
}
