package nexthop

// Member is one path of a group: a nexthop and its weight.
type Member struct {
	Nexthop
	// Weight is the member's share of the flows, 1 to 256 as in Linux
	// (iproute2's `weight`, RTNH's hops + 1).
	Weight uint32
}

// Group spreads flows over its members by hash-threshold (RFC 2992), as
// Linux's multipath does: each member owns a range of the 31-bit hash
// space in proportion to its weight, and a flow takes the member whose
// range holds its hash. A flow keeps its member while the group is
// unchanged. Immutable once made.
type Group struct {
	members []Member
	// upper[i] is the last hash of member i's range, Linux's
	// fib_nh_upper_bound: round(cumulative weight << 31 / total) - 1.
	upper []uint32
}

// NewGroup returns the group of members, in order. A weight of 0 counts
// as 1.
func NewGroup(members []Member) *Group {
	g := &Group{members: append([]Member(nil), members...), upper: make([]uint32, len(members))}
	var total uint64
	for i := range g.members {
		if g.members[i].Weight == 0 {
			g.members[i].Weight = 1
		}
		total += uint64(g.members[i].Weight)
	}
	var cum uint64
	for i, m := range g.members {
		cum += uint64(m.Weight)
		g.upper[i] = uint32((cum<<31+total/2)/total) - 1 // DIV_ROUND_CLOSEST_ULL
	}
	return g
}

// Len is the number of members.
func (g *Group) Len() int { return len(g.members) }

// Member returns member i.
func (g *Group) Member(i int) Member { return g.members[i] }

// Select returns the index of the member a flow with this hash takes, as
// Linux's fib6_select_path does with the flow's 31-bit multipath hash.
func (g *Group) Select(hash uint32) int {
	h := hash >> 1
	for i, u := range g.upper {
		if h <= u {
			return i
		}
	}
	return len(g.upper) - 1
}
