package nexthop

import (
	"encoding/binary"
	"net/netip"
)

// MaxWeight is the largest weight a member may have (RTNH's hops + 1).
const MaxWeight = 256

// Member is one path of a group: a nexthop and its weight.
type Member struct {
	Nexthop
	// Weight is the member's share of the flows, 1 to 256 as in Linux
	// (iproute2's `weight`, RTNH's hops + 1).
	Weight uint32
	// ID is the member's nexthop object in a group of objects; 0 for a
	// route's inline paths.
	ID uint32
	// Leg is what a route's inline path keeps of its own.
	Leg Leg
}

// Leg is what each path of an IPv6 multipath route keeps of its own:
// Linux makes each a route of its own (an ECMP sibling) with its own
// metrics, protocol and preferred source, and shows a multipath route
// with its first path's. A route's own, for a single path.
type Leg struct {
	MTU     uint32
	Proto   uint8
	PrefSrc netip.Addr
}

// Group spreads flows over its members. A hash-threshold group (RFC 2992,
// Linux's mpath) gives each usable member a range of the 31-bit hash space
// in proportion to its weight; a resilient group maps the hash to one of
// its buckets, and each bucket to a member (see Resilient). A flow keeps
// its member while the group is unchanged. Immutable once made.
type Group struct {
	members []Member
	// upper[i] is the last hash of member i's range, Linux's
	// fib_nh_upper_bound: round(cumulative weight << 31 / total) - 1 over
	// the usable members; -1 for a member that is not usable.
	upper []int32
	res   *resBuckets // nil for hash-threshold
}

// NewGroup returns the hash-threshold group of members, in order. A weight
// of 0 counts as 1.
func NewGroup(members []Member) *Group {
	g := &Group{members: append([]Member(nil), members...), upper: make([]int32, len(members))}
	var total uint64
	for i := range g.members {
		if g.members[i].Weight == 0 {
			g.members[i].Weight = 1
		}
		if g.members[i].Usable() {
			total += uint64(g.members[i].Weight)
		}
	}
	var cum uint64
	for i, m := range g.members {
		if !m.Usable() {
			g.upper[i] = -1
			continue
		}
		cum += uint64(m.Weight)
		g.upper[i] = int32((cum<<31+total/2)/total) - 1 // DIV_ROUND_CLOSEST_ULL
	}
	return g
}

// Len is the number of members.
func (g *Group) Len() int { return len(g.members) }

// Member returns member i.
func (g *Group) Member(i int) Member { return g.members[i] }

// Leg is what member i keeps of its own on a multipath route (zero: its
// route's is its), without copying the member.
func (g *Group) Leg(i int) Leg { return g.members[i].Leg }

// Members returns the members; the caller must not change them.
func (g *Group) Members() []Member { return g.members }

// Resilient reports whether the group selects by buckets.
func (g *Group) Resilient() bool { return g.res != nil }

// Select returns the index of the member a flow with this hash takes, as
// Linux's fib6_select_path and nexthop_select_path do with the flow's
// 31-bit multipath hash. With no usable member it returns 0.
func (g *Group) Select(hash uint32) int {
	h := int32(hash >> 1)
	if r := g.res; r != nil {
		b := uint32(h) % uint32(len(r.member))
		if t := r.clock.Load(); r.used[b].Load() != t {
			r.used[b].Store(t) // only when it changes: a busy bucket's line stays shared
		}
		return int(r.member[b])
	}
	for i, u := range g.upper {
		if h <= u {
			return i
		}
	}
	return 0
}

// Neighbours says whether a gateway may be chosen: Linux's ipv6_good_nh,
// true when its neighbour entry is valid (NUD_VALID) or there is none.
// It is called on the packet path, so it must neither lock nor allocate.
type Neighbours interface {
	Good(link int32, gw netip.Addr) bool
}

// SelectGood is Select for a group of nexthop objects, as Linux's
// nexthop_select_path_hthr: a member whose gateway's neighbour is not
// valid (FAILED, INCOMPLETE) is passed over, so its flows take the next
// good member whose range reaches the hash, or else the first good one;
// with none good, the first usable member. A resilient group hands out
// its bucket's member whatever its neighbour, as nexthop_select_path_res.
func (g *Group) SelectGood(hash uint32, nb Neighbours) int {
	if g.res != nil {
		return g.Select(hash)
	}
	h := int32(hash >> 1)
	first, usable := -1, -1
	for i, u := range g.upper {
		if u < 0 {
			continue // not usable: Linux's group has no such member
		}
		if usable < 0 {
			usable = i
		}
		if m := &g.members[i]; m.Gateway.IsValid() && !nb.Good(m.Link, m.Gateway) {
			continue
		}
		if h <= u {
			return i
		}
		if first < 0 {
			first = i
		}
	}
	if first >= 0 {
		return first
	}
	return max(usable, 0)
}

// SelectOn is Select among the members on link only, for a lookup that
// asks for an egress link; -1 if none is.
func (g *Group) SelectOn(hash uint32, link int32) int {
	if i := g.Select(hash); g.members[i].Link == link {
		return i
	}
	for i, m := range g.members {
		if m.Link == link && m.Usable() {
			return i
		}
	}
	return -1
}

// AppendKey appends an encoding of the group's members that equal groups
// share, for interning.
func (g *Group) AppendKey(b []byte) []byte {
	for _, m := range g.members {
		a := m.Gateway.As16()
		b = append(b, a[:]...)
		b = binary.LittleEndian.AppendUint32(b, uint32(m.Link))
		b = binary.LittleEndian.AppendUint32(b, m.Weight)
		b = binary.LittleEndian.AppendUint32(b, m.ID)
		b = append(b, byte(m.Flags))
		b = binary.LittleEndian.AppendUint32(b, m.Leg.MTU)
		src := m.Leg.PrefSrc.As16()
		b = append(append(b, m.Leg.Proto), src[:]...)
	}
	return b
}

// Equal reports whether g and o have the same members (for hash-threshold
// groups, the same selection).
func (g *Group) Equal(o *Group) bool {
	if g == o {
		return true
	}
	if g == nil || o == nil || len(g.members) != len(o.members) || (g.res == nil) != (o.res == nil) {
		return false
	}
	for i := range g.members {
		if g.members[i] != o.members[i] {
			return false
		}
	}
	return g.res == nil
}

// HasGateway reports whether a member goes through gateway gw on link.
func (g *Group) HasGateway(link int32, gw netip.Addr) bool {
	for _, m := range g.members {
		if m.Link == link && m.Gateway == gw {
			return true
		}
	}
	return false
}

// MarkUnresolved sets or clears Unresolved in f, and MarkLinkDown
// LinkDown; Dead is set while either is.
func MarkUnresolved(f Flags, on bool) Flags { return markDead(f, Unresolved, on) }

func MarkLinkDown(f Flags, on bool) Flags { return markDead(f, LinkDown, on) }

func markDead(f, why Flags, on bool) Flags {
	if on {
		f |= why
	} else {
		f &^= why
	}
	if f&(LinkDown|Unresolved) != 0 {
		return f | Dead
	}
	return f &^ Dead
}

// AnyLink reports whether a member, usable or not, leaves by link.
func (g *Group) AnyLink(link int32) bool {
	for _, m := range g.members {
		if m.Link == link {
			return true
		}
	}
	return false
}
