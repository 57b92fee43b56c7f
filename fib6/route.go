package fib6

import (
	"fmt"
	"net/netip"
	"slices"
	"syscall"

	"urouter/nexthop"
)

// Well-known table ids, as in Linux.
const (
	TableDefault uint32 = 253
	TableMain    uint32 = 254
	TableLocal   uint32 = 255
)

// DefaultMetric is the metric of a route a user adds without one (Linux's
// IP6_RT_PRIO_USER; the command language applies it). Routes the router
// derives from its addresses have 256 (connected) and 0 (local).
const DefaultMetric = 1024

// Type is a route's type (RTN_* in Linux).
type Type uint8

const (
	Unicast     Type = 1
	Local       Type = 2
	Blackhole   Type = 6
	Unreachable Type = 7
	Prohibit    Type = 8
	Throw       Type = 9
)

var typeNames = map[Type]string{
	Unicast: "unicast", Local: "local", Blackhole: "blackhole",
	Unreachable: "unreachable", Prohibit: "prohibit", Throw: "throw",
}

func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type%d", uint8(t))
}

// Valid reports whether t is one of the route types fib6 knows.
func (t Type) Valid() bool {
	switch t {
	case Unicast, Local, Blackhole, Unreachable, Prohibit, Throw:
		return true
	}
	return false
}

// IsReject reports whether packets matching a route of this type are
// refused rather than forwarded or delivered.
func (t Type) IsReject() bool {
	return t == Blackhole || t == Unreachable || t == Prohibit
}

// ViaLoopback reports whether a route of this type goes by lo: a reject
// or a throw, the routes Linux marks RTF_REJECT.
func (t Type) ViaLoopback() bool { return t.IsReject() || t == Throw }

// Proto says who installed a route (RTPROT_* numbers: 2 kernel, 3 boot,
// 4 static, 9 ra, ...). Names live with the command language.
type Proto uint8

const (
	ProtoKernel Proto = 2
	ProtoBoot   Proto = 3
	ProtoStatic Proto = 4
)

// Attrs is everything a route says except its destination. It is a
// comparable value: equal Attrs of one table are stored once and shared by
// every prefix that uses them, which is what keeps a full table small.
type Attrs struct {
	// Src restricts the route to packets from this source prefix
	// (source-specific routing, Linux's IPv6 subtrees). The zero Prefix
	// means any source.
	Src    netip.Prefix
	Metric uint32
	Type   Type
	Proto  Proto
	// Nexthop is a single-path route's path; zero when Group or Object
	// says where the route goes.
	Nexthop nexthop.Nexthop
	// Group is a multipath route's paths (`nexthop via A ... nexthop via
	// B ...`, or gateway routes of one metric coalesced by append); the
	// table keeps one copy of each distinct group.
	Group *nexthop.Group
	// Object is the nexthop object the route points at (`nhid N`): a
	// replace of it reaches the route without touching it.
	Object *nexthop.Object
	// PrefSrc is the source address the router prefers for packets it
	// sends along the route (iproute2's "src"); zero for none.
	PrefSrc netip.Addr
	// MTU of the path, 0 for the link's own.
	MTU uint32
	// Expires is when the route goes away, in Unix nanoseconds; 0 never.
	Expires int64
}

// Route is one route: a destination and what it says.
type Route struct {
	Dst netip.Prefix
	Attrs
}

// Error is a rejected request. It carries the errno Linux returns for the
// same request, so the command language can word it the way iproute2 does;
// it is the nexthop registry's error type, so one check words both.
type Error = nexthop.Error

var (
	// ErrExists: a route with the same destination, source and metric is
	// already there ("File exists").
	ErrExists = &Error{Errno: syscall.EEXIST}
	// ErrNoRoute: nothing matched a delete ("No such process").
	ErrNoRoute = &Error{Errno: syscall.ESRCH}
)

func invalid(format string, args ...any) error {
	return &Error{Errno: syscall.EINVAL, Msg: fmt.Sprintf(format, args...)}
}

// checkPrefix validates a destination or source prefix: IPv6, length at
// most 128, no host bits. Linux masks host bits of IPv6 routes silently; we
// refuse them, so a typo is not turned into a different route.
func checkPrefix(what string, p netip.Prefix) error {
	if !p.IsValid() {
		return invalid("%s: invalid prefix", what)
	}
	if !p.Addr().Is6() {
		return invalid("%s %s: not an IPv6 prefix", what, p)
	}
	if p.Addr().Zone() != "" {
		return invalid("%s %s: a prefix has no zone", what, p)
	}
	if p.Masked() != p {
		return invalid("Invalid prefix for given prefix length.")
	}
	return nil
}

// normalize validates r and fills in what Linux fills in.
func (r *Route) normalize() error {
	if err := checkPrefix("destination", r.Dst); err != nil {
		return err
	}
	if r.Src.IsValid() {
		if err := checkPrefix("source", r.Src); err != nil {
			return err
		}
		if r.Src.Bits() == 0 {
			r.Src = netip.Prefix{} // "from ::/0" is no source restriction
		}
	}
	if r.Type == 0 {
		r.Type = Unicast
	}
	if !r.Type.Valid() {
		return invalid("unknown route type %d", r.Type)
	}
	if o := r.Object; o != nil {
		switch {
		case !o.Alive():
			return invalid("Nexthop id does not exist.")
		case r.Src.IsValid():
			return invalid("Nexthops can not be used with source routing.")
		case !r.Nexthop.IsZero() || r.Group != nil:
			return invalid("Nexthop specification and nexthop id are mutually exclusive.")
		case o.Load().Family == nexthop.FamilyInet:
			return invalid("IPv6 routes can not use an IPv4 nexthop.")
		}
		if r.Type != Unicast {
			r.Type = Unicast
		}
		return nil
	}
	if g := r.Group; g != nil {
		if g.Len() == 0 {
			return invalid("multipath route without paths")
		}
		for _, m := range g.Members() {
			if err := checkPath(m.Nexthop, r.Type); err != nil {
				return err
			}
		}
		if g.Len() == 1 { // one path is a plain route, as Linux keeps it
			r.Nexthop, r.Group = g.Member(0).Nexthop, nil
		} else if r.Type != Unicast {
			return invalid("multipath routes are unicast")
		}
		return nil
	}
	switch r.Type {
	case Unicast, Local:
		return checkPath(r.Nexthop, r.Type)
	default:
		if !r.Nexthop.IsZero() && r.Type != Throw {
			r.Nexthop = nexthop.Nexthop{} // reject routes ignore a nexthop, as Linux does
		}
	}
	return nil
}

func checkPath(nh nexthop.Nexthop, t Type) error {
	gw := nh.Gateway
	if gw.IsValid() && (!gw.Is6() || gw.Is4In6() || gw.Zone() != "") {
		return invalid("Invalid gateway address %s", gw)
	}
	if nh.Link == 0 && !gw.IsValid() && (t == Unicast || t == Local) {
		return &Error{Errno: syscall.ENODEV, Msg: "Nexthop device required"}
	}
	return nil
}

// Paths returns the route's paths as a group's members, a single path as
// one member of weight 1; nil for a route without a path (reject routes,
// and a blackhole nexthop object).
func (a *Attrs) Paths() []nexthop.Member {
	switch {
	case a.Object != nil:
		v := a.Object.Load()
		if v.Paths != nil {
			return v.Paths.Members()
		}
		if v.Flags&nexthop.Blackhole != 0 {
			return nil
		}
		return []nexthop.Member{{Nexthop: v.Nexthop, Weight: 1, ID: v.ID}}
	case a.Group != nil:
		return a.Group.Members()
	case a.Nexthop.IsZero():
		return nil
	}
	return []nexthop.Member{{Nexthop: a.Nexthop, Weight: 1}}
}

// Leg is what a path of the route keeps of it once the route is one of
// several paths (nexthop.Leg).
func (a *Attrs) Leg() nexthop.Leg {
	return nexthop.Leg{MTU: a.MTU, Proto: uint8(a.Proto), PrefSrc: a.PrefSrc}
}

// showLeg makes the route show what path leg keeps: a multipath route
// shows its first path's, as Linux its first sibling's.
func (a *Attrs) showLeg(l nexthop.Leg) {
	if l != (nexthop.Leg{}) {
		a.MTU, a.Proto, a.PrefSrc = l.MTU, Proto(l.Proto), l.PrefSrc
	}
}

// legs are the route's paths, each with what it keeps of its own: a
// path that keeps nothing yet (a route made with it, in one command)
// keeps the route's.
func (a *Attrs) legs() []nexthop.Member {
	ms := slices.Clone(a.Paths())
	for i := range ms {
		ms[i].Leg = a.LegOf(ms[i].Leg)
	}
	return ms
}

// LegOf is what a path of the route whose member keeps l has: l, or
// the route's if it keeps nothing of its own.
func (a *Attrs) LegOf(l nexthop.Leg) nexthop.Leg {
	if l == (nexthop.Leg{}) {
		return a.Leg()
	}
	return l
}

// multipath reports whether appends of gateway routes coalesce into this
// route: Linux's rt6_qualify_for_ecmp (a unicast route with a gateway,
// not through a nexthop object).
func (a *Attrs) multipath() bool {
	if a.Type != Unicast || a.Object != nil {
		return false
	}
	if a.Group != nil {
		return true
	}
	return a.Nexthop.Gateway.IsValid()
}

// Match selects routes of one destination for deletion, as `ip route del`
// does: fields left zero match anything.
type Match struct {
	Dst     netip.Prefix
	Src     netip.Prefix
	Metric  uint32 // 0: any
	Proto   Proto  // 0: any
	Type    Type   // 0: any
	Gateway netip.Addr
	Link    int32
	// NhID: only a route through nexthop object NhID (`nhid N`).
	NhID uint32
	// Object: only routes through one of these nexthop objects (all
	// sources); for the routes of removed objects.
	Object func(*nexthop.Object) bool
}

// matches reports whether m selects a, and which path of a multipath
// route its gateway names (-1: the whole route). A route through a
// nexthop object matches whatever gateway and link are asked, as Linux's
// does.
func (m *Match) matches(a *Attrs) (bool, int) {
	if m.Object != nil {
		return a.Object != nil && m.Object(a.Object), -1
	}
	if a.Src != m.Src || m.Metric != 0 && m.Metric != a.Metric || m.Proto != 0 && m.Proto != a.Proto ||
		m.Type != 0 && m.Type != a.Type || m.NhID != 0 && (a.Object == nil || a.Object.ID() != m.NhID) {
		return false, -1
	}
	if a.Object != nil || m.Link == 0 && !m.Gateway.IsValid() {
		return true, -1
	}
	if a.Group == nil {
		return (!m.Gateway.IsValid() || m.Gateway == a.Nexthop.Gateway) && (m.Link == 0 || m.Link == a.Nexthop.Link), -1
	}
	for i, p := range a.Group.Members() {
		if (!m.Gateway.IsValid() || m.Gateway == p.Gateway) && (m.Link == 0 || m.Link == p.Link) {
			if m.Gateway.IsValid() {
				return true, i
			}
			return true, -1
		}
	}
	return false, -1
}
