package control

import (
	"net/netip"

	"urouter/fib6"
	"urouter/nexthop"
	"urouter/rules"
)

// A multipath route's paths (`nexthop via A dev D weight W onlink encap
// ...`, iproute2's parse_nexthops): parsed, each checked as a route of its
// own as Linux's ip6_route_multipath_add checks it, and made a group.

// leg is one `nexthop [encap ...] via A dev D weight W onlink` of a
// multipath route.
type leg struct {
	gw     netip.Addr
	dev    []byte
	weight uint32
	onlink bool
	encap  *encapReq
}

// parseLegs parses the `nexthop ...` paths that end a route command, as
// iproute2's parse_nexthops and parse_one_nh do.
func parseLegs(q *routeReq, args [][]byte, pm *parseMemo) *cmdErr {
	q.legs = pm.legs[:0]
	for i := 0; i < len(args); {
		if !is(args[i], "nexthop") {
			return parseErr("Error: \"nexthop\" or end of line is expected instead of \"%s\"", args[i])
		}
		if i+1 >= len(args) {
			return parseErr("Error: unexpected end of line after \"nexthop\"")
		}
		n := len(q.legs)
		q.legs = append(q.legs, leg{weight: 1})
		l := &q.legs[n]
		for i++; i < len(args); i++ {
			w := args[i]
			switch {
			case is(w, "via"):
				ws := argv{args: args, i: i}
				v, err := ws.nextVia()
				if err != nil {
					return err
				}
				i = ws.i
				for len(pm.legGw) <= n {
					pm.legGw = append(pm.legGw, addrMemo{})
				}
				if l.gw, err = pm.legGw[n].parse(v); err != nil {
					return err
				}
			case is(w, "dev"):
				if i+1 >= len(args) {
					return incomplete()
				}
				i++
				l.dev = args[i]
			case is(w, "weight"):
				if i+1 >= len(args) {
					return incomplete()
				}
				i++
				n, ok := parseUint32(args[i])
				if !ok || n == 0 || n > nexthop.MaxWeight {
					return invarg("\"weight\" is invalid\n", args[i])
				}
				l.weight = n
			case is(w, "onlink"):
				l.onlink = true
			case is(w, "encap"):
				ws := argv{args: args, i: i}
				e, err := parseEncap(&ws)
				if err != nil {
					return err
				}
				i, l.encap = ws.i, e
			case matches(w, "realms"), is(w, "as"):
				return unsupported(w)
			default:
				goto next
			}
		}
	next:
	}
	pm.legs = q.legs
	return nil
}

// legGroup validates the paths of a multipath route, each as a route of
// its own (its link, its gateway), and returns them as a group. A batch
// repeats the same paths on every line: the group checked last is reused
// while the tables it was checked in are unchanged.
func (s *Session) legGroup(q *routeReq, tid uint32, t *fib6.Table) (*nexthop.Group, *cmdErr) {
	c := &s.routes.legs
	rs, gen := s.r.Rules.Load(), s.r.Tables.Generation()
	if c.g != nil && c.tid == tid && c.rules == rs && c.gen == gen && (t == nil || c.tidGen == t.Generation()) &&
		sameLegs(c.legs, q.legs) {
		return c.g, nil
	}
	c.g = nil
	ms := make([]nexthop.Member, len(q.legs))
	for i, lg := range q.legs {
		rt := fib6.Route{}
		rt.Nexthop.Gateway = lg.gw
		if lg.onlink {
			rt.Nexthop.Flags |= nexthop.OnLink
		}
		if lg.dev != nil {
			l, err := s.routeLink(lg.dev)
			if err != nil {
				return nil, err
			}
			rt.Nexthop.Link = l.Index
		}
		if err := s.checkGateway(&rt, tid, t); err != nil {
			return nil, err
		}
		if lg.encap != nil { // ip6_route_info_create builds it before the ECMP check
			st, err := s.buildEncap(lg.encap)
			if err != nil {
				return nil, err
			}
			rt.Nexthop.Encap = st
		}
		if !lg.gw.IsValid() { // Linux's rt6_qualify_for_ecmp, after the path's own checks
			return nil, extack("Device only routes can not be added for IPv6 using the multipath API.")
		}
		ms[i] = nexthop.Member{Nexthop: rt.Nexthop, Weight: lg.weight}
	}
	g := nexthop.NewGroup(ms)
	*c = legCheck{g: g, tid: tid, rules: rs, gen: gen, legs: c.legs[:0]}
	if t != nil {
		c.tidGen = t.Generation()
	}
	for _, lg := range q.legs {
		c.legs = append(c.legs, leg{gw: lg.gw, dev: append([]byte(nil), lg.dev...), weight: lg.weight, onlink: lg.onlink})
	}
	return g, nil
}

func sameLegs(a, b []leg) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].encap != nil || b[i].encap != nil { // each builds a state of its own (its counters)
			return false
		}
		if a[i].gw != b[i].gw || string(a[i].dev) != string(b[i].dev) || a[i].weight != b[i].weight || a[i].onlink != b[i].onlink {
			return false
		}
	}
	return true
}

// legCheck remembers the paths legGroup accepted last; none while g is nil.
type legCheck struct {
	g           *nexthop.Group
	legs        []leg
	tid         uint32
	rules       *rules.Set
	gen, tidGen uint64 // the tables' publishes, table tid's
}

// changed forgets the paths when the session's open transaction changes
// a prefix that holds one of their gateways.
func (c *legCheck) changed(p netip.Prefix) {
	if c.g == nil {
		return
	}
	for _, lg := range c.legs {
		if p.Contains(lg.gw) {
			c.g = nil
			return
		}
	}
}
