package feed

import (
	"errors"
	"strconv"
	"syscall"

	"github.com/vishvananda/netlink/nl"

	"urouter/nexthop"
	"urouter/seg6"
)

// zebra's SRv6 over FPM: a path's RTA_ENCAP (or a nexthop object's
// NHA_ENCAP) of type seg6 or seg6local, as zebra's rt_netlink.c encodes
// it (fill_seg6ipt_encap, _netlink_route_build_singlepath,
// netlink_nexthop_msg_encode; the flavors nest since FRR 9.1), read into
// the state the path carries and checked as Linux's seg6_build_state and
// seg6_local_build_state check it.

// SEG6_IPTUNNEL_* and SEG6_LOCAL_* attributes.
const (
	seg6IptunnelSRH   = 1
	seg6LocalAction   = 1
	seg6LocalSRH      = 2
	seg6LocalTable    = 3
	seg6LocalNH6      = 5
	seg6LocalOIF      = 7
	seg6LocalVRFTable = 9
	seg6LocalCounters = 10
	seg6LocalFlavors  = 11
	seg6FlvOperation  = 1
	seg6FlvLCBlock    = 2
	seg6FlvLCNodeFn   = 3
)

// errSeg6 is a seg6 or seg6local encapsulation the kernel would refuse
// (EINVAL, as seg6_build_state and seg6_local_build_state return it).
func errSeg6(why string) error {
	return &encapError{&nexthop.Error{Errno: syscall.EINVAL, Msg: "invalid SRv6 encapsulation: " + why}}
}

// encapState is the state of a path's encapsulation of type typ, raw
// its attribute's payload; linkOf maps End.X's kernel oif.
func encapState(typ uint16, raw []byte, linkOf func(int32) int32) (*seg6.State, error) {
	var err error
	var st *seg6.State
	switch typ {
	case seg6.EncapTypeSeg6:
		st, err = seg6Encap(raw)
	case seg6.EncapTypeSeg6Local:
		st, err = seg6Local(raw, linkOf)
	default:
		return nil, errEncap(typ)
	}
	if err != nil && !isEncap(err) {
		err = errSeg6(err.Error()) // a malformed attribute
	}
	return st, err
}

// seg6Encap reads SEG6_IPTUNNEL_SRH: the mode (an int, host order) and
// the SRH.
func seg6Encap(raw []byte) (*seg6.State, error) {
	as := attrsOf(raw)
	for as.next() {
		if as.typ != seg6IptunnelSRH {
			continue
		}
		v := as.val
		if len(v) < 4+seg6.SRHFixed+16 {
			return nil, errSeg6("SEG6_IPTUNNEL_SRH of " + strconv.Itoa(len(v)) + " bytes")
		}
		e, err := seg6.NewEncap(seg6.Mode(nl.NativeEndian().Uint32(v)), seg6.SRH(v[4:]))
		if err != nil {
			return nil, seg6Refusal(err)
		}
		return &seg6.State{Encap: e}, nil
	}
	if as.err != nil {
		return nil, as.err
	}
	return nil, errSeg6("no SEG6_IPTUNNEL_SRH")
}

// seg6Local reads a seg6local behaviour's attributes.
func seg6Local(raw []byte, linkOf func(int32) int32) (*seg6.State, error) {
	l := &seg6.Local{}
	var err error
	for as := attrsOf(raw); as.next() || as.err != nil; {
		if as.err != nil {
			return nil, as.err
		}
		v := as.val
		var n uint32
		switch as.typ {
		case seg6LocalAction:
			n, err = u32(v, "SEG6_LOCAL_ACTION")
			l.Action = seg6.Action(min(n, 255))
		case seg6LocalTable:
			l.Table, err = u32(v, "SEG6_LOCAL_TABLE")
		case seg6LocalVRFTable:
			l.VRFTable, err = u32(v, "SEG6_LOCAL_VRFTABLE")
		case seg6LocalNH6:
			l.NH6, err = addr16(v, "SEG6_LOCAL_NH6")
		case seg6LocalOIF:
			if n, err = u32(v, "SEG6_LOCAL_OIF"); err == nil && linkOf != nil {
				l.OIF = linkOf(int32(n))
			}
		case seg6LocalSRH:
			l.SRH = append(seg6.SRH(nil), v...)
		case seg6LocalCounters:
			l.Counted = true
		case seg6LocalFlavors:
			err = seg6Flavors(v, &l.Flavors)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := l.Check(); err != nil {
		return nil, seg6Refusal(err)
	}
	return &seg6.State{Local: l}, nil
}

// seg6Flavors reads SEG6_LOCAL_FLAVORS (parse_nla_flavors): the
// operation is required, the NEXT-C-SID lengths default to 32 and 16.
func seg6Flavors(b []byte, f *seg6.Flavors) error {
	op := false
	f.LBLen, f.NFLen = seg6.DefaultLBLen, seg6.DefaultNFLen
	for as := attrsOf(b); as.next() || as.err != nil; {
		if as.err != nil {
			return as.err
		}
		var err error
		switch as.typ {
		case seg6FlvOperation:
			f.Ops, err = u32(as.val, "SEG6_LOCAL_FLV_OPERATION")
			op = true
		case seg6FlvLCBlock, seg6FlvLCNodeFn:
			if len(as.val) != 1 {
				return malformed("flavor length of %d bytes", len(as.val))
			}
			if as.typ == seg6FlvLCBlock {
				f.LBLen = as.val[0]
			} else {
				f.NFLen = as.val[0]
			}
		}
		if err != nil {
			return err
		}
	}
	if !op {
		return errSeg6("SEG6_LOCAL_FLAVORS without an operation")
	}
	return nil
}

// seg6Refusal is package seg6's refusal as the kernel's: its errno and
// extack message.
func seg6Refusal(err error) error {
	var e *seg6.Error
	if errors.As(err, &e) {
		msg := e.Msg
		if msg == "" {
			msg = "invalid SRv6 encapsulation"
		}
		return &encapError{&nexthop.Error{Errno: syscall.Errno(e.Errno), Msg: msg}}
	}
	return errSeg6(err.Error())
}
