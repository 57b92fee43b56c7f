package seg6

import (
	"encoding/binary"
	"net/netip"
)

// Mode is a seg6 route's SEG6_IPTUN_MODE_*.
type Mode uint8

const (
	ModeInline Mode = iota
	ModeEncap
	ModeL2Encap
	ModeEncapRed
	ModeL2EncapRed
)

// ModeNames are iproute2's names of the modes, by value.
var ModeNames = [...]string{"inline", "encap", "l2encap", "encap.red", "l2encap.red"}

func (m Mode) String() string {
	if int(m) < len(ModeNames) {
		return ModeNames[m]
	}
	return "<unknown>"
}

// Encap is a seg6 route's state (Linux's seg6_lwt): its mode and its
// SRH as the route gives it (netlink's SEG6_IPTUNNEL_SRH; for inline the
// last entry is the room the destination goes in).
type Encap struct {
	Mode Mode
	SRH  SRH
	// push is the outer header and SRH written in front of each packet
	// (encap modes; inline: the SRH alone), all but the fields each packet
	// fills; dst is the destination the packet leaves with.
	push []byte
	dst  [16]byte
}

// Refusals of a seg6 route. Linux's seg6_build_state gives EINVAL
// without a message for a bad mode or SRH; urouter says what it lacks.
var (
	ErrBadSRH  = &Error{Errno: 22}
	ErrHMAC    = &Error{Errno: 95, Msg: "SRv6 HMAC is not supported by this router"}
	ErrL2Encap = &Error{Errno: 95, Msg: "SRv6 l2encap is not supported by this router"}
)

// NewEncap checks a seg6 route's SRH as seg6_build_state does and builds
// what its packets are given.
func NewEncap(mode Mode, srh SRH) (*Encap, error) {
	switch mode {
	case ModeInline, ModeEncap, ModeEncapRed:
	case ModeL2Encap, ModeL2EncapRed:
		return nil, ErrL2Encap
	default:
		return nil, ErrBadSRH
	}
	if !srh.Valid(false) {
		return nil, ErrBadSRH
	}
	if srh.Flags()&FlagHMAC != 0 {
		return nil, ErrHMAC
	}
	e := &Encap{Mode: mode, SRH: append(SRH(nil), srh...)}
	first := int(srh.LastEntry())
	copy(e.dst[:], srh.Segment(first))
	switch mode {
	case ModeInline:
		e.push = append([]byte(nil), srh...)
	case ModeEncap:
		e.push = make([]byte, ipv6Len+len(srh))
		copy(e.push[ipv6Len:], srh)
		e.push[6] = ProtoRouting
	case ModeEncapRed:
		e.push = e.reduced()
	}
	return e, nil
}

// reduced is H.Encaps.Red's headers (Linux's seg6_do_srh_encap_red):
// the SRH without its first segment, which only the destination
// carries, Segments Left unchanged; with a single segment, no SRH at all
// (unless it has TLVs).
func (e *Encap) reduced() []byte {
	srh := e.SRH
	first := int(srh.LastEntry())
	tlvs := srh[SRHFixed+16*(first+1):]
	if first == 0 && len(tlvs) == 0 {
		return make([]byte, ipv6Len) // next header: the inner's
	}
	b := make([]byte, ipv6Len+len(srh)-16)
	b[6] = ProtoRouting
	r := SRH(b[ipv6Len:])
	copy(r, srh[:SRHFixed])
	r[1] -= 2
	r[4] = uint8(first - 1)
	copy(r[SRHFixed:], srh[SRHFixed:SRHFixed+16*first])
	copy(r[SRHFixed+16*first:], tlvs)
	return b
}

// Len is how many bytes the encapsulation adds to a packet.
func (e *Encap) Len() int { return len(e.push) }

// Dst is the destination a packet leaves with: the first segment.
func (e *Encap) Dst() netip.Addr { return netip.AddrFrom16(e.dst) }

// Segments are the route's segments in visiting order, as iproute2 prints
// them (inline's last is the room for the destination, ::).
func (e *Encap) Segments() []netip.Addr { return e.SRH.Segments() }

// Apply writes the encapsulation of the IPv6 packet at buf[at:] into the
// e.Len() bytes in front of it, and returns where the packet starts now
// (Linux's seg6_do_srh_encap, seg6_do_srh_encap_red, seg6_do_srh_inline).
// An outer header inherits the inner's traffic class, flow label and hop
// limit (the forwarding after decrements the outer one); src is its
// source. An outer payload length past 65535 (a GSO super-packet's, which
// is cut into segments of their own lengths) is written 65535. Inline moves the IPv6 header to the front and inserts the SRH
// after it, the destination saved as its last segment.
func (e *Encap) Apply(buf []byte, at int, src [16]byte) int {
	n := len(e.push)
	start := at - n
	inner := buf[at:]
	if e.Mode == ModeInline {
		copy(buf[start:start+ipv6Len], inner[:ipv6Len]) // the header moves to the front
		h := buf[start:]
		srh := SRH(h[ipv6Len : ipv6Len+n])
		copy(srh, e.push)
		srh[0] = h[6]
		copy(srh.Segment(0), h[24:40])
		h[6] = ProtoRouting
		copy(h[24:40], e.dst[:])
		binary.BigEndian.PutUint16(h[4:], uint16(min(int(binary.BigEndian.Uint16(h[4:]))+n, 0xffff)))
		return start
	}
	h := buf[start:at]
	copy(h, e.push)
	copy(h[:4], inner[:4]) // version, traffic class, flow label
	binary.BigEndian.PutUint16(h[4:], uint16(min(n+int(binary.BigEndian.Uint16(inner[4:6])), 0xffff)))
	h[7] = inner[7]
	copy(h[8:24], src[:])
	copy(h[24:40], e.dst[:])
	if n > ipv6Len {
		h[ipv6Len] = ProtoIPv6 // the SRH's next header
	} else {
		h[6] = ProtoIPv6
	}
	return start
}
