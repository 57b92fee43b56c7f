// Package nexthop owns what a route points at: an inline nexthop (a
// gateway and/or an egress link), groups that spread flows over several
// (hash-threshold over weights and resilient buckets, as Linux), the flow
// hash they select by, and the registry of nexthop objects (`ip nexthop`)
// that routes refer to by id. A route that points at an object sees every
// replace of it at once: the object's current version is an immutable value
// behind an atomic pointer, so readers never lock.
//
// nexthop never imports fib6, rules, decide, dataplane or control.
package nexthop

import (
	"fmt"
	"net/netip"
	"urouter/seg6"
)

// Flags qualify a nexthop the way RTNH_F_* flags do in Linux.
type Flags uint8

const (
	// OnLink says the gateway is reachable on the link even though no
	// connected prefix covers it (iproute2's "onlink").
	OnLink Flags = 1 << iota
	// Dead: the path carries no flows (RTNH_F_DEAD): its link is down.
	Dead
	// LinkDown: the path's link is down (RTNH_F_LINKDOWN).
	LinkDown
	// Blackhole: a nexthop object that drops what it is given.
	Blackhole
	// Unresolved: the gateway's neighbour entry is FAILED, so an inline
	// multipath path is dead for selection until it answers again (a
	// group of objects asks Neighbours as it selects instead).
	Unresolved
)

// Nexthop is one path: the link a packet leaves by and, for a gateway
// route, the neighbour it is handed to. It is a comparable value, so
// routes with equal nexthops can share one copy.
type Nexthop struct {
	// Gateway is the next router; the zero Addr means the destination is
	// directly on Link.
	Gateway netip.Addr
	// Link is the egress link's index; 0 means none (reject routes).
	Link  int32
	Flags Flags
	// Encap is the path's SRv6 encapsulation or behaviour (`encap seg6`,
	// `encap seg6local`); nil for none. Paths compare it by identity.
	Encap *seg6.State
}

// IsZero reports whether n names neither a gateway nor a link.
func (n Nexthop) IsZero() bool { return !n.Gateway.IsValid() && n.Link == 0 && n.Flags&Blackhole == 0 }

// Usable reports whether the path may carry flows.
func (n Nexthop) Usable() bool { return n.Flags&Dead == 0 }

func (n Nexthop) String() string {
	s := ""
	if n.Flags&Blackhole != 0 {
		return "blackhole"
	}
	if n.Gateway.IsValid() {
		s = "via " + n.Gateway.String()
	}
	if n.Link != 0 {
		if s != "" {
			s += " "
		}
		s += fmt.Sprintf("link %d", n.Link)
	}
	if n.Flags&OnLink != 0 {
		s += " onlink"
	}
	return s
}
