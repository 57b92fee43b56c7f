package decide

import (
	"urouter/fib6"
	"urouter/nexthop"
	"urouter/rules"
)

// How a lookup chooses among the routes of one prefix when it has a link
// to prefer: Linux's rt6_select and rt6_score_route, for route get's oif
// and iif, the router's own packets to link-local destinations, and the
// packets it forwards.

// how is how a lookup chooses among the routes of a prefix, as Linux's
// ip6_pol_route: by the link it prefers (0 for none) and whether it takes
// routes out of that link only (strict: RT6_LOOKUP_F_IFACE).
type how struct {
	link   int32
	strict bool
	lo     int32 // the loopback: where Linux puts reject and throw routes
}

// howOf is how k's lookup chooses. An output lookup (the router's own
// packets, route get without iif) prefers its oif, strictly without a
// source (ip6_route_output_flags); an input lookup (an iif, lo included)
// prefers the link it came in by (ip6_pol_route_input); a gateway's
// check takes its link only (ip6_route_check_nh). A link-local,
// multicast or loopback destination is always strict (rt6_need_strict).
func howOf(k *Key, lo int32) how {
	h := how{link: k.Oif, lo: lo, strict: strictDst(&k.Dst)}
	switch {
	case k.Iif > 0:
		h.link = k.Iif
	case k.Iif == rules.NoIif:
		h.strict = true
	case k.Src == [16]byte{}:
		h.strict = h.strict || k.Oif != 0
	}
	return h
}

// score ranks route a for the lookup, as Linux's rt6_score_route: 2 out
// of the link the lookup prefers, 0 out of another (-1 if the lookup is
// strict), -1 for a dead path. A multipath route scores as its best path
// (Linux scores each sibling). A blackhole nexthop object wins where it
// is met, as in __find_rr_leaf.
func (h *how) score(a *fib6.Attrs) int {
	switch {
	case a.Type.ViaLoopback():
		return h.on(h.lo)
	case a.Object != nil:
		v := a.Object.Load()
		switch {
		case v.Paths != nil:
			return h.group(v.Paths)
		case v.Flags&nexthop.Blackhole != 0:
			return 3
		}
		return h.path(v.Nexthop)
	case a.Group != nil:
		return h.group(a.Group)
	}
	return h.path(a.Nexthop)
}

func (h *how) on(link int32) int {
	switch {
	case link == h.link:
		return 2
	case h.strict:
		return -1
	}
	return 0
}

func (h *how) path(p nexthop.Nexthop) int {
	if !p.Usable() {
		return -1
	}
	return h.on(p.Link)
}

func (h *how) group(g *nexthop.Group) int {
	best := -1
	for _, m := range g.Members() {
		best = max(best, h.path(m.Nexthop))
	}
	return best
}

// strictDst reports whether a is a link-local, multicast or loopback
// address, which Linux looks up strictly (rt6_need_strict).
func strictDst(a *[16]byte) bool {
	return a[0] == 0xff || a[0] == 0xfe && a[1]&0xc0 == 0x80 || *a == [16]byte{15: 1}
}

// Prefer is the Score of a lookup that prefers link (strict: takes
// routes out of it only), for lookups outside a decision, such as a
// gateway's check; lo is the loopback's index.
func Prefer(link int32, strict bool, lo int32) fib6.Score {
	h := &how{link: link, strict: strict, lo: lo}
	return h.score
}
