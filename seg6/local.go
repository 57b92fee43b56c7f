package seg6

import (
	"net/netip"
	"sync/atomic"
)

// Action is a seg6local route's SEG6_LOCAL_ACTION_*.
type Action uint8

const (
	ActionEnd Action = iota + 1
	ActionEndX
	ActionEndT
	ActionEndDX2
	ActionEndDX6
	ActionEndDX4
	ActionEndDT6
	ActionEndDT4
	ActionEndB6
	ActionEndB6Encaps
	ActionEndBM
	ActionEndS
	ActionEndAS
	ActionEndAM
	ActionEndBPF
	ActionEndDT46
)

// ActionNames are iproute2's names of the actions (seg6_action_names).
var ActionNames = [...]string{ActionEnd: "End", ActionEndX: "End.X", ActionEndT: "End.T",
	ActionEndDX2: "End.DX2", ActionEndDX6: "End.DX6", ActionEndDX4: "End.DX4", ActionEndDT6: "End.DT6",
	ActionEndDT4: "End.DT4", ActionEndB6: "End.B6", ActionEndB6Encaps: "End.B6.Encaps", ActionEndBM: "End.BM",
	ActionEndS: "End.S", ActionEndAS: "End.AS", ActionEndAM: "End.AM", ActionEndBPF: "End.BPF",
	ActionEndDT46: "End.DT46"}

func (a Action) String() string {
	if int(a) < len(ActionNames) && ActionNames[a] != "" {
		return ActionNames[a]
	}
	return "<unknown>"
}

// Flavor operations (SEG6_LOCAL_FLV_OP_*), bits of Flavors.Ops.
const (
	FlavorPSP      = 1 << 1
	FlavorUSP      = 1 << 2
	FlavorUSD      = 1 << 3
	FlavorNextCSID = 1 << 4
)

// The NEXT-C-SID container's default lengths in bits (Linux's
// SEG6_LOCAL_LCBLOCK_DBITS and SEG6_LOCAL_LCNODE_FN_DBITS).
const (
	DefaultLBLen = 32
	DefaultNFLen = 16
)

// Flavors are a behaviour's flavors: the operations and, for
// NEXT-C-SID, the locator block's and node function's lengths in bits
// (whoever fills them in gives DefaultLBLen and DefaultNFLen where the
// route gave none).
type Flavors struct {
	Ops          uint32
	LBLen, NFLen uint8
}

// Local is a seg6local route's state (Linux's seg6_local_lwt): the
// behaviour of the SID the route's prefix is, and its parameters.
type Local struct {
	Action   Action
	Table    uint32     // End.T; End.DT6 in its legacy mode
	VRFTable uint32     // End.DT6 into a VRF
	NH6      netip.Addr // End.X, End.DX6
	OIF      int32      // End.X's link for NH6 (a link-local one), 0 for none
	SRH      SRH        // End.B6.Encaps's, as given
	Flavors  Flavors
	// Counted: the route keeps counters (iproute2's count)
	Counted bool
	counters
	push *Encap // End.B6.Encaps: the encapsulation it pushes
}

// counters are a counted behaviour's (Linux's pcpu_seg6_local_counters).
type counters struct {
	packets, bytes, errors atomic.Uint64
}

// Counters reads a behaviour's counters.
func (l *Local) Counters() (packets, bytes, errs uint64) {
	return l.packets.Load(), l.bytes.Load(), l.errors.Load()
}

// Count adds one packet of n bytes the behaviour handled, or, if failed,
// one error (seg6_local_update_counters).
func (l *Local) Count(n int, failed bool) {
	if !l.Counted {
		return
	}
	if failed {
		l.errors.Add(1)
		return
	}
	l.packets.Add(1)
	l.bytes.Add(uint64(n))
}

// Refusals of a seg6local route, as Linux's seg6_local_build_state
// and the actions' builders give them: the errno, and the extack
// message where Linux sets one.
var (
	ErrActionHere = &Error{Errno: 95, Msg: "SRv6 behaviour not supported by this router"} // EOPNOTSUPP
	ErrInvalid    = &Error{Errno: 22, Msg: ""}                                            // EINVAL: a missing attribute, an action Linux lacks
	ErrFlavorOps  = &Error{Errno: 95, Msg: "Unsupported Flavor operation(s)"}
	ErrCSIDLens   = &Error{Errno: 22, Msg: "Invalid Locator Block/Node Function lengths"}
	ErrDT6Table   = &Error{Errno: 22, Msg: "table or vrftable must be specified"}
)

// Error is a refused seg6 or seg6local route: the errno Linux returns
// and its extack message ("" for none).
type Error struct {
	Errno int
	Msg   string
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return "invalid argument"
	}
	return e.Msg
}

// Check is what seg6local's builder checks of l before it is installed:
// an action urouter performs, its attribute there, flavors only those
// Linux takes (PSP and NEXT-C-SID on End, NEXT-C-SID on End.X) with
// lengths of whole bytes that fit an address. It also builds End.B6.Encaps's
// encapsulation. End.DT6's VRF is the caller's to check.
func (l *Local) Check() error {
	switch l.Action {
	case ActionEnd:
	case ActionEndX, ActionEndDX6:
		if !l.NH6.IsValid() {
			return ErrInvalid
		}
	case ActionEndT:
		if l.Table == 0 {
			return ErrInvalid
		}
	case ActionEndDT6:
		if (l.Table == 0) == (l.VRFTable == 0) {
			return ErrDT6Table
		}
	case ActionEndB6Encaps:
		if l.SRH == nil {
			return ErrInvalid
		}
		e, err := NewEncap(ModeEncap, l.SRH)
		if err != nil {
			return err
		}
		l.push = e
	case ActionEndDX2, ActionEndDX4, ActionEndDT4, ActionEndDT46, ActionEndB6, ActionEndBPF:
		return ErrActionHere
	default:
		return ErrInvalid
	}
	return l.checkFlavors()
}

// checkFlavors is parse_nla_flavors: the operations the action supports,
// and NEXT-C-SID's lengths (defaults 32 and 16 bits; 0 given is none).
func (l *Local) checkFlavors() error {
	f := &l.Flavors
	supported := uint32(0)
	switch l.Action {
	case ActionEnd:
		supported = FlavorPSP | FlavorNextCSID
	case ActionEndX:
		supported = FlavorNextCSID
	default:
		*f = Flavors{} // not an attribute of the action: ignored
		return nil
	}
	if f.Ops&^supported != 0 {
		return ErrFlavorOps
	}
	if f.Ops&FlavorNextCSID == 0 {
		f.LBLen, f.NFLen = 0, 0
		return nil
	}
	bad := func(n uint8) bool { return n == 0 || n > 120 || n%8 != 0 }
	if bad(f.LBLen) || bad(f.NFLen) || int(f.LBLen)+int(f.NFLen) > 128 {
		return ErrCSIDLens
	}
	return nil
}
