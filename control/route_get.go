package control

import (
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"urouter/dataplane"
	"urouter/decide"
	"urouter/fib6"
	"urouter/nexthop"
)

// Protocols a route get may name (what the kernel accepts).
const (
	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
)

// `route get ADDRESS [ from ADDRESS ] [ iif DEV ] [ oif DEV ] [ tos TOS ]
// [ ipproto PROTO ] [ sport N ] [ dport N ] [ mark N ] [ uid N ]
// [ fibmatch ] [ connected ] [ notify ]`: the decision a packet of that
// flow gets, from the same code that decides for forwarded packets and
// the router's own, printed as `ip -6 route get` prints it.

type getReq struct {
	key                 decide.Key
	dst, src            netip.Addr
	iif, oif            []byte
	oifVRF              bool // oif is `vrf NAME`'s
	fibmatch, connected bool
	protoGiven          bool
}

const (
	gkTos = iota + 1
	gkFrom
	gkIif
	gkMark
	gkOif
	gkNotify
	gkConnected
	gkVrf
	gkUID
	gkFibmatch
	gkAs
	gkSport
	gkDport
	gkIPProto
)

// getWords() are iproute_get's keywords, in its order.
var getWords = sync.OnceValue(func() keywords {
	return newKeywords([]kw{
		{"tos", false, gkTos}, {"dsfield", true, gkTos}, {"from", true, gkFrom}, {"iif", true, gkIif},
		{"mark", true, gkMark}, {"oif", true, gkOif}, {"dev", false, gkOif}, {"notify", true, gkNotify},
		{"connected", true, gkConnected}, {"vrf", true, gkVrf}, {"uid", true, gkUID},
		{"fibmatch", true, gkFibmatch}, {"as", false, gkAs}, {"sport", true, gkSport},
		{"dport", true, gkDport}, {"ipproto", true, gkIPProto},
	})
})

// parseGet reads iproute_get's words; the warning is for a destination
// given as a prefix.
func parseGet(args [][]byte) (*getReq, *cmdErr, string) {
	q := &getReq{}
	warn := ""
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		k := 0
		if mayBeKeyword(w) {
			k = getWords().of(w)
		}
		var err *cmdErr
		switch k {
		case 0:
			warn, err = q.parseDst(&ws, w)
		case gkNotify:
		case gkConnected:
			q.connected = true
		case gkFibmatch:
			q.fibmatch = true
		default:
			var v []byte
			if v, err = ws.next(); err == nil {
				err = q.parseWord(k, w, v)
			}
		}
		if err != nil {
			return nil, err, ""
		}
	}
	if !q.dst.IsValid() {
		return nil, &cmdErr{msg: "need at least a destination address", code: 1}, ""
	}
	switch q.key.Proto {
	case protoTCP, protoUDP, protoICMPv6:
	default:
		if q.protoGiven { // the kernel's rtm_getroute_parse_ip_proto takes these three
			return nil, extack("Unsupported ip proto."), warn
		}
	}
	return q, nil, warn
}

// parseWord reads keyword k's value v.
func (q *getReq) parseWord(k int, w, v []byte) *cmdErr {
	switch k {
	case gkTos:
		ds, ok := parseDSField(v)
		if !ok {
			return invarg("TOS value is invalid\n", v)
		}
		q.key.DSField = ds
	case gkFrom:
		p, err := parsePrefix(v)
		if err != nil {
			return err
		}
		if p.Bits() != 128 {
			return extack("ipv6: Invalid values in header for get route request.")
		}
		q.src = p.Addr()
	case gkIif:
		q.iif = v
	case gkMark:
		if _, ok := parseUint32(v); !ok {
			return invarg("invalid mark value", v) // the router has no marks to match
		}
	case gkOif:
		q.oif, q.oifVRF = v, false
	case gkVrf:
		q.oif, q.oifVRF = v, true // checked to be a VRF once the links are at hand
	case gkUID:
		if _, ok := parseUint32(v); !ok {
			return invarg("invalid UID\n", v)
		}
	case gkAs:
		return unsupported(w)
	case gkSport, gkDport:
		n, err := strconv.ParseUint(str(v), 0, 16)
		if err != nil {
			return invarg("invalid "+[]string{"sport", "dport"}[k-gkSport]+"\n", v)
		}
		if k == gkSport {
			q.key.Sport = uint16(n)
		} else {
			q.key.Dport = uint16(n)
		}
	case gkIPProto:
		p, ok := parseIPProto(v)
		if !ok {
			return invarg("Invalid \"ipproto\" value\n", v)
		}
		q.key.Proto, q.protoGiven = p, true
	}
	return nil
}

// parseDst reads `[to] ADDRESS`; the last one given counts, as with ip.
// A prefix other than /128 is taken with a warning.
func (q *getReq) parseDst(ws *argv, w []byte) (string, *cmdErr) {
	w, err := ws.valueAfter(w, "to")
	if err != nil {
		return "", err
	}
	if matches(w, "help") {
		return "", routeUsage()
	}
	p, err := parsePrefix(w)
	if err != nil {
		return "", err
	}
	q.dst = p.Addr()
	if p.Bits() != 128 {
		return "Warning: /" + strconv.Itoa(p.Bits()) + " as prefix is invalid, only /128 (or none) is supported.", nil
	}
	return "", nil
}

func (s *Session) routeGet(args [][]byte) *cmdErr {
	q, err, warn := parseGet(args)
	if warn != "" {
		s.flush()
		s.errOut(warn)
	}
	if err != nil {
		return err
	}
	q.key.Dst = q.dst.As16()
	if q.src.IsValid() {
		q.key.Src = q.src.As16()
	}
	var iif *dataplane.Link
	if q.iif != nil {
		if iif, err = s.routeLink(q.iif); err != nil {
			return err
		}
		// an input lookup, by lo too (which the rules see as the
		// router's own packets)
		q.key.Iif = iif.Index
	}
	if q.oif != nil {
		l, err := s.routeLink(q.oif)
		if q.oifVRF {
			l, err = s.vrfNamed(q.oif, "Invalid VRF\n")
		}
		if err != nil {
			return err
		}
		if iif == nil { // an input lookup has its incoming link, not an outgoing one
			q.key.Oif = l.Index
		}
	}
	s.commit()
	var r decide.Result
	if s.opt.Details {
		r = s.explain(q)
	} else {
		r = s.r.Decider.Decide(&q.key)
	}
	switch r.Verdict {
	case decide.NoRoute:
		return answers(syscall.ENETUNREACH)
	case decide.Unreachable:
		return answers(syscall.EHOSTUNREACH)
	case decide.Prohibit:
		return answers(syscall.EACCES)
	case decide.Blackhole:
		return answers(syscall.EINVAL)
	}
	if q.fibmatch {
		s.printFibmatch(q, &r)
		if q.connected {
			s.flush()
			return &cmdErr{msg: "Failed to connect the route", code: 1}
		}
		return nil
	}
	s.printGet(q, &r)
	if q.connected && !q.src.IsValid() {
		// ip asks again from the source the answer gave, and prints that
		s.printGet(q, &r)
	}
	return nil
}

// printGet prints the decision the way ip prints the route the kernel
// resolved for the flow: the chosen path only.
func (s *Session) printGet(q *getReq, res *decide.Result) {
	r := res.Route
	from := q.src
	if !from.IsValid() {
		from = netip.IPv6Unspecified()
	}
	dev := "lo"
	if l := s.r.Links.ByIndex(res.Path.Link); l != nil {
		switch {
		case r.Type != fib6.Local:
			dev = l.Name
		case l.IsVRF():
			dev = l.Name
		case l.Master() != 0 && !q.dst.IsLinkLocalUnicast():
			// a local route's copy leaves by its VRF (ip6_rt_get_dev_rcu)
			if m := s.r.Links.ByIndex(l.Master()); m != nil {
				dev = m.Name
			}
		}
	}
	// the source the router would use: shown for an output lookup, and
	// for any lookup of a route with a preferred source (rt6_fill_node)
	leg := res.Leg() // of a multipath route, the path's own, as Linux its sibling's
	pref := leg.PrefSrc
	if q.iif == nil {
		pref, _ = s.r.Decider.RouteSource(res, q.dst)
	}
	w := s.newPrinter()
	w.begin()
	w.openObject("")
	if r.Type != fib6.Unicast {
		w.str("type", "%s ", r.Type.String())
	}
	w.addr("dst", "%s", q.dst)
	w.addr("from", " from %s", from)
	if res.Path.Encap != nil {
		printEncap(&w, s, res.Path.Encap, "  encap %s")
	}
	if res.Path.Gateway.IsValid() {
		w.addr("gateway", " via %s", res.Path.Gateway)
	}
	w.str("dev", " dev %s", dev)
	if res.Table != fib6.TableMain {
		w.str("table", " table %s", tableString(res.Table))
	}
	if p := fib6.Proto(leg.Proto); p != fib6.ProtoBoot {
		w.str("protocol", " proto %s", protoString(p))
	}
	if pref.IsValid() {
		w.addr("prefsrc", " src %s", pref)
	}
	w.uint("metric", " metric %d", uint64(r.Metric))
	w.strings("flags", "", pathFlags(res.Path)) // text names onlink alone
	if res.Path.Flags&nexthop.OnLink != 0 {
		w.text(" onlink")
	}
	w.metrics(leg.MTU)
	if q.iif != nil {
		w.bytes("iif", " iif %s", q.iif)
	}
	w.str("pref", " pref %s", "medium")
	w.text("\n")
	w.closeObject()
	w.end()
}

// printFibmatch prints the whole route that decided, as `route show`
// would, a multipath route with the member the flow takes first and the
// others after it in their order, as Linux does.
func (s *Session) printFibmatch(q *getReq, res *decide.Result) {
	p := s.printer(&showFilter{})
	p.get, p.table = true, res.Table
	if q.iif != nil {
		p.iif = string(q.iif)
	}
	p.begin()
	if res.Route.Group != nil {
		p.rotate = res.Member
	}
	p.add(fib6.Route{Dst: res.Prefix, Attrs: *res.Route})
	p.end()
}

// ipProtos() are the names of /etc/protocols that the transport protocols
// of a route get go by (iproute2's inet_proto_a2n reads that file).
var ipProtos = sync.OnceValue(func() map[string]uint8 {
	return map[string]uint8{
		"icmp": 1, "ICMP": 1, "tcp": 6, "TCP": 6, "udp": 17, "UDP": 17, "ipv6-icmp": 58, "IPv6-ICMP": 58,
		"sctp": 132, "SCTP": 132, "udplite": 136, "UDPLite": 136, "esp": 50, "ESP": 50, "ah": 51, "AH": 51,
		"gre": 47, "GRE": 47,
	}
})

func parseIPProto(v []byte) (uint8, bool) {
	if n, err := strconv.ParseUint(str(v), 10, 8); err == nil {
		return uint8(n), true
	}
	p, ok := ipProtos()[str(v)]
	return p, ok
}

// dsfields() are iproute2's /etc/iproute2/rt_dsfield names.
var dsfields = sync.OnceValue(func() map[string]uint8 {
	return func() map[string]uint8 {
		m := map[string]uint8{"default": 0, "lowdelay": 0x10, "throughput": 0x08, "reliability": 0x04,
			"mincost": 0x02, "priority": 0x20, "immediate": 0x40, "flash": 0x60, "flash-override": 0x80,
			"critical": 0xa0, "internet": 0xc0, "network": 0xe0, "EF": 0xb8}
		for c := 1; c <= 4; c++ {
			for d := 1; d <= 3; d++ {
				m["AF"+strconv.Itoa(c)+strconv.Itoa(d)] = uint8(c<<5 | d<<3)
			}
		}
		for c := 0; c <= 7; c++ {
			m["CS"+strconv.Itoa(c)] = uint8(c << 5)
		}
		return m
	}()
})

// parseDSField reads a traffic class as rtnl_dsfield_a2n does: a name, or
// a number in hex (with or without 0x).
func parseDSField(v []byte) (uint8, bool) {
	if d, ok := dsfields()[str(v)]; ok {
		return d, true
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(str(v), "0x"), 16, 8)
	return uint8(n), err == nil
}
