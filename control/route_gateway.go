package control

import (
	"net/netip"
	"syscall"

	"urouter/decide"
	"urouter/fib6"
	"urouter/nexthop"
	"urouter/rules"
)

// A route's gateway, checked as Linux checks it when the route is added.

// checkGateway does what Linux's ip6_validate_gw does: a gateway must be
// link-local on a given link, or not the router's own and reachable
// through a connected route (one without a gateway of its own), which
// also picks the link when none is given: first in the route's table
// (strictly out of the link, if one is given), then through the rules,
// as the router's own lookup out of the link (Linux's fib6_lookup in
// ip6_route_check_nh). An onlink gateway is checked against the main
// table instead (checkOnlink). t is table tid, nil if it does not exist.
func (s *Session) checkGateway(rt *fib6.Route, tid uint32, t *fib6.Table) *cmdErr {
	nh := &rt.Nexthop
	gw := nh.Gateway
	if !gw.IsValid() {
		if nh.Link == 0 {
			return answers(syscall.ENODEV)
		}
		return nil
	}
	if gw.IsLinkLocalUnicast() {
		if nh.Link == 0 {
			return answers(syscall.ENODEV)
		}
		return nil
	}
	if gw.IsMulticast() || gw.IsUnspecified() || gw.IsLoopback() {
		return extack("Invalid gateway address")
	}
	if s.restoring && nh.Link != 0 {
		// a saved configuration: the gateway was checked when the route
		// was made, against the routes and rules then (the order of a save
		// is not the order they came in)
		return nil
	}
	if nh.Flags&nexthop.OnLink != 0 {
		if nh.Link == 0 {
			return answers(syscall.ENODEV)
		}
		if s.r.Decider.IsLocal(gw, nh.Link) {
			return extack("Gateway can not be a local address.")
		}
		return s.checkOnlink(rt)
	}
	// A batch names the same gateway again and again: what was checked
	// holds while the tables and rules it was checked in are unchanged.
	c := &s.routes.gw
	rs, gen := s.r.Rules.Load(), s.r.Tables.Generation()
	if c.gw == gw && c.tid == tid && (nh.Link == 0 || nh.Link == c.link) &&
		c.rules == rs && c.gen == gen && (t == nil || c.tidGen == t.Generation()) {
		nh.Link = c.link
		return nil
	}
	c.gw = netip.Addr{}
	if s.r.Decider.IsLocal(gw, nh.Link) {
		return extack("Gateway can not be a local address.")
	}
	ok := false
	if t != nil {
		var score fib6.Score
		if nh.Link != 0 {
			score = decide.Prefer(nh.Link, true, rs.Loopback())
		}
		if _, a := s.lookupSeen(t, gw, rt.PrefSrc, score); a != nil && !a.Type.ViaLoopback() {
			if p := pathOf(a, nh.Link); !p.Gateway.IsValid() && (nh.Link == 0 || p.Link == nh.Link) {
				nh.Link, ok = p.Link, true
			}
		}
	}
	if !ok {
		k := decide.KeyOf(gw, netip.Addr{})
		k.Iif, k.Oif = rules.NoIif, nh.Link
		r := s.r.Decider.Decide(&k)
		if r.Verdict != decide.Forward || r.Path.Gateway.IsValid() || nh.Link != 0 && r.Path.Link != nh.Link {
			return answers(syscall.EHOSTUNREACH)
		}
		nh.Link = r.Path.Link
	}
	*c = gwCheck{gw: gw, tid: tid, link: nh.Link, rules: rs, gen: gen}
	if t != nil {
		c.tidGen = t.Generation()
	}
	return nil
}

// checkOnlink is Linux's ip6_route_check_nh_onlink: an onlink gateway
// may not be reached through the main table by a route (other than a
// reject or default one) that is not a unicast route out of its link;
// the lookup prefers that link, but is not strict.
func (s *Session) checkOnlink(rt *fib6.Route) *cmdErr {
	link := rt.Nexthop.Link
	score := decide.Prefer(link, false, s.r.Rules.Load().Loopback())
	t := s.r.Tables.Main()
	if _, id := s.r.Links.L3(link); id != 0 {
		t = s.r.Tables.Ensure(id) // l3mdev_fib_table_rcu(dev) ?: main
	}
	pfx, a := s.lookupSeen(t, rt.Nexthop.Gateway, rt.PrefSrc, score)
	if a != nil && !a.Type.ViaLoopback() && !pfx.Addr().IsUnspecified() && (a.Type != fib6.Unicast || pathOf(a, link).Link != link) {
		return extack("Nexthop has invalid gateway or device mismatch.")
	}
	return nil
}

// pathOf is the path of route a a lookup that prefers link finds, as
// Linux's rt6_select takes a sibling: the first usable one out of link,
// else the first usable one.
func pathOf(a *fib6.Attrs, link int32) nexthop.Nexthop {
	ps := a.Paths()
	for _, p := range ps {
		if p.Link == link && p.Usable() {
			return p.Nexthop
		}
	}
	for _, p := range ps {
		if p.Usable() {
			return p.Nexthop
		}
	}
	return nexthop.Nexthop{}
}

// gwCheck remembers the last gateway checkGateway accepted; none while gw
// is not valid.
type gwCheck struct {
	gw          netip.Addr
	tid         uint32
	link        int32
	rules       *rules.Set
	gen, tidGen uint64 // the tables' publishes, table tid's
}

// changed forgets the gateway when the session's open transaction changes
// a prefix that holds it (the generations above move only on publish).
func (c *gwCheck) changed(p netip.Prefix) {
	if c.gw.IsValid() && p.Contains(c.gw) {
		c.gw = netip.Addr{}
	}
}

// lookupSeen is table t's route to dst from src (none: the invalid
// address) as this session sees it: through its open transaction when
// that is t's, so a batch's gateway may be reached by a route an earlier
// line of it added (as Linux applies each line before the next).
func (s *Session) lookupSeen(t *fib6.Table, dst, src netip.Addr, score fib6.Score) (netip.Prefix, *fib6.Attrs) {
	var pfx netip.Prefix
	var a *fib6.Attrs
	if s.txn != nil && s.txn.Table() == t {
		pfx, a, _ = s.txn.Get(dst, src, score)
	} else {
		pfx, a, _ = t.Get(dst, src, score)
	}
	return pfx, a
}
