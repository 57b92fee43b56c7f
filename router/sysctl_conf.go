package router

import (
	"math"

	"urouter/dataplane"
)

// net.ipv6.conf.{all,default,LINK}.*: a link's IPv6 settings.

// ipv6Conf are the values of one net.ipv6.conf directory.
type ipv6Conf struct {
	forwarding, keepAddrOnDown, ignoreLinkdown int64
	acceptDAD, dadTransmits, hopLimit          int64
	acceptRA, disableIPv6, mtu                 int64
	acceptUntrackedNA                          int64
}

// A confKnob is one knob, with the range the kernel's handler takes and
// what it does to a link.
type confKnob struct {
	name   string
	lo, hi int64
	field  func(c *ipv6Conf) *int64
	// everywhere: writing all's copies it to default and every link, as
	// Linux does for some; else all keeps its own, read where Linux reads it
	everywhere bool
	apply      func(r *Router, l *dataplane.Link, c ipv6Conf) // its effect on l; nil: it has none of its own
	applyAll   func(r *Router)                                // its effect when all's changes
}

const anyInt = math.MaxInt32

// confKnobs are the knobs, by name; what the router does with each:
//   - forwarding: all's turns forwarding on or off for the router (Linux's
//     ip6_forward reads all's); a link's is its advertisements' router
//     flag (ndisc_recv_ns).
//   - keep_addr_on_down: a link going down keeps its global addresses if
//     all's is positive, or, all's being 0, its own is (addrconf_ifdown).
//   - ignore_routes_with_linkdown: read back only: a link here has no
//     carrier apart from being up, and for a link set down Linux marks
//     its paths dead whatever this says.
//   - accept_dad, dad_transmits: DAD on an Ethernet link sends
//     dad_transmits solicitations, none when all's and the link's
//     accept_dad are both below 1.
//   - hop_limit: of the packets the router makes and sends out of the link.
//   - accept_ra: read back only: a router does not learn from RAs (0).
//   - disable_ipv6: on, the link's addresses and routes go and no IPv6 goes
//     in or out of it; all's is copied to every link.
//   - mtu: the link's IPv6 MTU, 1280 up to the link's MTU.
//   - accept_untracked_na: 1, a Neighbour Advertisement for an address
//     without an entry makes one, STALE (RFC 9131); 2, if its source is on
//     one of the link's prefixes; the link's own only, as Linux reads it.
var confKnobs = []*confKnob{
	{name: "accept_dad", lo: math.MinInt32, hi: anyInt, field: func(c *ipv6Conf) *int64 { return &c.acceptDAD },
		apply: applyDAD, applyAll: func(r *Router) { r.eachLink(applyDAD) }},
	{name: "accept_untracked_na", lo: 0, hi: 2, field: func(c *ipv6Conf) *int64 { return &c.acceptUntrackedNA },
		apply: func(_ *Router, l *dataplane.Link, c ipv6Conf) { l.SetUntrackedNA(int(c.acceptUntrackedNA)) }},
	{name: "accept_ra", lo: math.MinInt32, hi: anyInt, field: func(c *ipv6Conf) *int64 { return &c.acceptRA }},
	{name: "dad_transmits", lo: math.MinInt32, hi: anyInt, field: func(c *ipv6Conf) *int64 { return &c.dadTransmits },
		apply: applyDAD},
	{name: "disable_ipv6", lo: math.MinInt32, hi: anyInt, field: func(c *ipv6Conf) *int64 { return &c.disableIPv6 },
		everywhere: true, apply: func(r *Router, l *dataplane.Link, c ipv6Conf) { r.setIPv6(l, c.disableIPv6 == 0) }},
	{name: "forwarding", lo: math.MinInt32, hi: anyInt, field: func(c *ipv6Conf) *int64 { return &c.forwarding },
		everywhere: true, applyAll: func(r *Router) { r.DP.SetForwarding(r.sys.all.forwarding != 0) },
		apply: func(_ *Router, l *dataplane.Link, c ipv6Conf) { l.SetRouterFlag(c.forwarding != 0) }},
	{name: "hop_limit", lo: 1, hi: 255, field: func(c *ipv6Conf) *int64 { return &c.hopLimit },
		apply: func(_ *Router, l *dataplane.Link, c ipv6Conf) { l.SetHopLimit(uint8(c.hopLimit)) }},
	{name: "ignore_routes_with_linkdown", lo: math.MinInt32, hi: anyInt, field: func(c *ipv6Conf) *int64 { return &c.ignoreLinkdown },
		everywhere: true},
	{name: "keep_addr_on_down", lo: math.MinInt32, hi: anyInt, field: func(c *ipv6Conf) *int64 { return &c.keepAddrOnDown }},
	{name: "mtu", lo: dataplane.MinMTU, hi: anyInt, field: func(c *ipv6Conf) *int64 { return &c.mtu }},
}

func confKnobNamed(name string) *confKnob {
	for _, k := range confKnobs {
		if k.name == name {
			return k
		}
	}
	return nil
}

// confOf is a conf knob of a link, of default (nil link), or of all.
type confOf struct {
	k   *confKnob
	all bool
}

func (c confOf) get(r *Router, l *dataplane.Link) string {
	switch {
	case c.all:
		return itoa64(*c.k.field(&r.sys.all))
	case l == nil:
		return itoa64(*c.k.field(&r.sys.dflt))
	case c.k.name == "mtu":
		return itoa64(int64(l.IPv6MTU()))
	}
	return itoa64(*c.k.field(&r.linkSys(l).conf))
}

func (c confOf) set(r *Router, l *dataplane.Link, v string) error {
	n, ok := parseProcInt(v)
	hi := c.k.hi
	if c.k.name == "mtu" && l != nil {
		hi = int64(l.MTU()) // at most the link's, as addrconf_sysctl_mtu
	}
	if !ok || n < c.k.lo || n > hi {
		return ErrBadValue
	}
	switch {
	case c.all:
		*c.k.field(&r.sys.all) = n
		if c.k.everywhere {
			*c.k.field(&r.sys.dflt) = n
			r.eachLink(func(r *Router, l *dataplane.Link, _ ipv6Conf) { r.setConf(c.k, l, n) })
		}
		if c.k.applyAll != nil {
			c.k.applyAll(r)
		}
	case l == nil:
		*c.k.field(&r.sys.dflt) = n // for links made from now on
	case c.k.name == "mtu":
		return l.SetIPv6MTU(int(n))
	default:
		r.setConf(c.k, l, n)
	}
	return nil
}

// setConf sets knob k of link l to n, and does what it does.
func (r *Router) setConf(k *confKnob, l *dataplane.Link, n int64) {
	s := r.linkSys(l)
	*k.field(&s.conf) = n
	if k.apply != nil {
		k.apply(r, l, s.conf)
	}
}

// eachLink runs fn for each link with its knobs.
func (r *Router) eachLink(fn func(r *Router, l *dataplane.Link, c ipv6Conf)) {
	for _, l := range r.Links.All() {
		fn(r, l, r.linkSys(l).conf)
	}
}

// applyDAD gives the link's DAD its number of solicitations: none unless
// all's or its own accept_dad is at least 1 (addrconf_dad_begin).
func applyDAD(r *Router, l *dataplane.Link, c ipv6Conf) {
	n := c.dadTransmits
	if r.sys.all.acceptDAD < 1 && c.acceptDAD < 1 {
		n = 0
	}
	l.SetDADTransmits(int(max(n, 0)))
}

// keepAddrs reports whether link l keeps its global addresses going down:
// all's keep_addr_on_down if it is not 0, else the link's (and never
// with IPv6 disabled), as addrconf_ifdown.
func (r *Router) keepAddrs(l *dataplane.Link) bool {
	c := r.linkSys(l).conf
	keep := r.sys.all.keepAddrOnDown
	if keep == 0 {
		keep = c.keepAddrOnDown
	}
	return keep > 0 && l.IPv6Enabled()
}
