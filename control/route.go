package control

import (
	"net/netip"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/nexthop"
)

// The route object: ip route { add | del | change | append | replace |
// prepend | show | get | flush | save | restore }.

type routeOp uint8

const (
	opAdd routeOp = iota
	opDel
	opChange
	opAppend
	opReplace
	opPrepend
)

// routeReq is a parsed `route add/del/...` command.
type routeReq struct {
	typ       fib6.Type
	dst       netip.Prefix // valid once parsed
	src       netip.Prefix
	table     uint32
	proto     fib6.Proto
	protoSet  bool
	metric    uint32
	metricSet bool
	gw        netip.Addr
	prefsrc   netip.Addr
	dev       []byte
	mtu       uint32
	expires   int64 // seconds, -1 for none
	onlink    bool
}

// str views b as a string without copying; the string must not outlive b.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func parsePrefix(b []byte) (netip.Prefix, *cmdErr) {
	s := str(b)
	if s == "default" || s == "all" || s == "any" {
		return netip.PrefixFrom(netip.IPv6Unspecified(), 0), nil
	}
	var p netip.Prefix
	var err error
	if containsByte(s, '/') {
		p, err = netip.ParsePrefix(s)
	} else {
		var a netip.Addr
		a, err = netip.ParseAddr(s)
		p = netip.PrefixFrom(a, 128)
	}
	if err != nil || !p.Addr().Is6() || p.Addr().Zone() != "" {
		return netip.Prefix{}, prefixExpected(b)
	}
	return p, nil
}

func parseAddr(b []byte) (netip.Addr, *cmdErr) {
	a, err := netip.ParseAddr(str(b))
	if err != nil || !a.Is6() || a.Zone() != "" {
		return netip.Addr{}, addrExpected(b)
	}
	return a, nil
}

func parseUint32(b []byte) (uint32, bool) {
	n, err := strconv.ParseUint(str(b), 0, 32)
	return uint32(n), err == nil
}

// parseRouteModify parses the arguments of add/del/change/append/replace/
// prepend, keyword by keyword in iproute2's order (iproute_modify).
// parseMemo keeps what the previous command parsed, for the next: a batch
// repeats its keywords, gateway and table on every line.
type parseMemo struct {
	kw    [4]memo // by position among the keywords
	gw    []byte
	gwVal netip.Addr
	tab   []byte
	tabID uint32
}

func parseRouteModify(q *routeReq, args [][]byte, pm *parseMemo) *cmdErr {
	*q = routeReq{expires: -1}
	memos := pm.kw[:]
	nk := 0 // keywords seen: the memo of each position
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		k := 0
		if mayBeKeyword(w) {
			if nk < len(memos) {
				k = memos[nk].of(modifyWords, w)
			} else {
				k = modifyWords.of(w)
			}
			if k != 0 {
				nk++
			}
		}
		switch k {
		case mkSrc:
			v, err := ws.next()
			if err != nil {
				return err
			}
			if q.prefsrc, err = parseAddr(v); err != nil {
				return err
			}
		case mkVia:
			if q.gw.IsValid() {
				return invarg("use nexthop syntax to specify multiple via\n", w)
			}
			v, err := ws.nextVia()
			if err != nil {
				return err
			}
			if pm.gw != nil && string(v) == string(pm.gw) {
				q.gw = pm.gwVal
			} else {
				if q.gw, err = parseAddr(v); err != nil {
					return err
				}
				pm.gw, pm.gwVal = append(pm.gw[:0], v...), q.gw
			}
		case mkFrom:
			v, err := ws.next()
			if err != nil {
				return err
			}
			if q.src, err = parsePrefix(v); err != nil {
				return err
			}
		case mkExpires:
			n, err := ws.nextUint32("expires")
			if err != nil {
				return err
			}
			q.expires = int64(n)
		case mkMetric:
			n, err := ws.nextUint32("metric")
			if err != nil {
				return err
			}
			q.metric, q.metricSet = n, true
		case mkScope:
			v, err := ws.next()
			if err != nil {
				return err
			}
			if !is(v, "global") && !is(v, "universe") && !is(v, "0") {
				return invarg("invalid \"scope\" value\n", v)
			}
		case mkMtu:
			v, err := ws.next()
			if err != nil {
				return err
			}
			if is(v, "lock") {
				if v, err = ws.next(); err != nil {
					return err
				}
			}
			n, ok := parseUint32(v)
			if !ok {
				return badValue("mtu", v)
			}
			q.mtu = n
		case mkUnsupported:
			return unsupported(w)
		case mkOnlink:
			q.onlink = true
		case mkNexthop:
			return parseErr("Error: \"%s\" is not supported yet: nexthop objects and multipath routes come with the nexthop issue.", w)
		case mkProtocol:
			v, err := ws.next()
			if err != nil {
				return err
			}
			p, ok := parseProto(v)
			if !ok {
				return badValue("protocol", v)
			}
			q.proto, q.protoSet = p, true
		case mkTable:
			v, err := ws.next()
			if err != nil {
				return err
			}
			if pm.tab != nil && string(v) == string(pm.tab) {
				q.table = pm.tabID
				break
			}
			t, ok := parseTable(v, false)
			if !ok {
				return badValue("table", v)
			}
			q.table = t
			pm.tab, pm.tabID = append(pm.tab[:0], v...), t
		case mkDev:
			v, err := ws.next()
			if err != nil {
				return err
			}
			q.dev = v
		case mkPref:
			v, err := ws.next()
			if err != nil {
				return err
			}
			if !is(v, "medium") && !is(v, "0") {
				if is(v, "low") || is(v, "high") {
					return unsupported(v)
				}
				return badValue("pref", v)
			}
		default:
			if is(w, "to") {
				v, err := ws.next()
				if err != nil {
					return err
				}
				w = v
			}
			if mayBeKeyword(w) {
				if t, ok := parseType(w); ok {
					if t == 0 {
						return parseErr("Error: route type \"%s\" is not supported by this router.", w)
					}
					q.typ = t
					v, err := ws.next()
					if err != nil {
						return err
					}
					w = v
				}
			}
			if matches(w, "help") {
				return routeUsage()
			}
			if q.dst.IsValid() {
				return garbage(w)
			}
			p, err := parsePrefix(w)
			if err != nil {
				return err
			}
			q.dst = p
		}
	}
	if !q.dst.IsValid() {
		return routeUsage()
	}
	return nil
}

// mayBeKeyword says whether w can be a keyword or a route type: a word
// with a leading digit is an address.
func mayBeKeyword(w []byte) bool { return len(w) > 0 && (w[0] < '0' || w[0] > '9') }

func routeUsage() *cmdErr {
	return parseErr(`Usage: ip route { list | flush } SELECTOR
       ip route save SELECTOR
       ip route restore
       ip route get ADDRESS [ from ADDRESS iif STRING ] [ oif STRING ]
       ip route { add | del | change | append | replace | prepend } ROUTE
SELECTOR := [ root PREFIX ] [ match PREFIX ] [ exact PREFIX ]
            [ table TABLE_ID ] [ proto RTPROTO ] [ type TYPE ]
            [ dev STRING ] [ via ADDRESS ] [ from PREFIX ]
ROUTE := NODE_SPEC [ INFO_SPEC ]
NODE_SPEC := [ TYPE ] PREFIX [ table TABLE_ID ] [ proto RTPROTO ]
             [ scope SCOPE ] [ metric METRIC ] [ from PREFIX ]
INFO_SPEC := NH OPTIONS
NH := [ via [ inet6 ] ADDRESS ] [ dev STRING ] [ onlink ]
OPTIONS := [ mtu NUMBER ] [ src ADDRESS ] [ pref medium ] [ expires TIME ]
TYPE := { unicast | local | throw | unreachable | prohibit | blackhole }
TABLE_ID := [ local | main | default | all | NUMBER ]
RTPROTO := [ kernel | boot | static | NUMBER ]`)
}

const (
	rcAdd = iota + 1
	rcChange
	rcReplace
	rcPrepend
	rcAppend
	rcTest
	rcDelete
	rcList
	rcGet
	rcFlush
	rcSave
	rcRestore
	rcShowdump
	rcHelp
)

// routeCmds are do_iproute's command words, in its order.
var routeCmds = newKeywords([]kw{
	{"add", true, rcAdd}, {"change", true, rcChange}, {"chg", false, rcChange},
	{"replace", true, rcReplace}, {"prepend", true, rcPrepend}, {"append", true, rcAppend},
	{"test", true, rcTest}, {"delete", true, rcDelete}, {"list", true, rcList},
	{"show", true, rcList}, {"lst", true, rcList}, {"get", true, rcGet}, {"flush", true, rcFlush},
	{"save", true, rcSave}, {"restore", true, rcRestore}, {"showdump", true, rcShowdump},
	{"help", true, rcHelp},
})

const (
	mkSrc = iota + 1
	mkVia
	mkFrom
	mkExpires
	mkMetric
	mkScope
	mkMtu
	mkOnlink
	mkNexthop
	mkProtocol
	mkTable
	mkDev
	mkPref
	mkUnsupported
)

// modifyWords are iproute_modify's keywords, in its order.
var modifyWords = newKeywords([]kw{
	{"src", false, mkSrc}, {"as", false, mkUnsupported}, {"via", false, mkVia}, {"from", false, mkFrom},
	{"tos", false, mkUnsupported}, {"dsfield", true, mkUnsupported}, {"expires", false, mkExpires},
	{"metric", true, mkMetric}, {"priority", true, mkMetric}, {"preference", false, mkMetric},
	{"scope", false, mkScope}, {"mtu", false, mkMtu}, {"hoplimit", false, mkUnsupported},
	{"advmss", false, mkUnsupported}, {"reordering", true, mkUnsupported}, {"rtt", false, mkUnsupported},
	{"rto_min", false, mkUnsupported}, {"window", true, mkUnsupported}, {"cwnd", true, mkUnsupported},
	{"initcwnd", true, mkUnsupported}, {"initrwnd", true, mkUnsupported}, {"features", true, mkUnsupported},
	{"quickack", true, mkUnsupported}, {"congctl", true, mkUnsupported}, {"rttvar", true, mkUnsupported},
	{"ssthresh", true, mkUnsupported}, {"realms", true, mkUnsupported}, {"onlink", false, mkOnlink},
	{"nexthop", false, mkNexthop}, {"nhid", false, mkNexthop}, {"protocol", true, mkProtocol},
	{"table", true, mkTable}, {"vrf", true, mkUnsupported}, {"dev", false, mkDev}, {"oif", false, mkDev},
	{"pref", true, mkPref}, {"encap", false, mkUnsupported}, {"ttl-propagate", false, mkUnsupported},
	{"fastopen_no_cookie", true, mkUnsupported},
})

// route runs one route command.
func (s *session) route(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.routeShow(nil, false)
	}
	w, rest := args[0], args[1:]
	switch s.cmdMemo.of(routeCmds, w) {
	case rcAdd:
		return s.routeModify(opAdd, rest)
	case rcChange:
		return s.routeModify(opChange, rest)
	case rcReplace:
		return s.routeModify(opReplace, rest)
	case rcPrepend:
		return s.routeModify(opPrepend, rest)
	case rcAppend:
		return s.routeModify(opAppend, rest)
	case rcTest:
		return unsupported(w)
	case rcDelete:
		return s.routeModify(opDel, rest)
	case rcList:
		return s.routeShow(rest, false)
	case rcGet:
		return s.routeGet(rest)
	case rcFlush:
		return s.routeShow(rest, true)
	case rcSave:
		return s.routeSave(rest)
	case rcRestore:
		return parseErr("Error: \"route restore\" reads its routes from standard input: run it from the client (urouter route restore < FILE).")
	case rcShowdump:
		return unsupported(w)
	case rcHelp:
		return routeUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip route help\".", w)
}

func (s *session) link(name []byte) (*dataplane.Link, *cmdErr) {
	if l := s.lastDev; l != nil && l.Name == string(name) && s.r.Links.ByIndex(l.Index) == l {
		return l, nil // still the link of that name
	}
	l := s.r.Links.ByName(str(name))
	if l == nil {
		return nil, nodev(name)
	}
	s.lastDev = l
	return l, nil
}

// routeModify validates and allocates everything it can before it takes
// the table's transaction, then checks the link inside it (so a link going
// down cannot race the route in) and applies.
func (s *session) routeModify(op routeOp, args [][]byte) *cmdErr {
	var req routeReq
	q := &req
	if perr := parseRouteModify(q, args, &s.parseMemo); perr != nil {
		return perr
	}
	tid := q.table
	if tid == 0 {
		tid = fib6.TableMain
	}
	if q.dst.Masked() != q.dst {
		return extack("Invalid prefix for given prefix length.")
	}
	if q.src.IsValid() && q.src.Masked() != q.src {
		return extack("Invalid prefix for given prefix length.")
	}
	var l *dataplane.Link
	if q.dev != nil {
		var err *cmdErr
		if l, err = s.link(q.dev); err != nil {
			return err
		}
	}
	t := s.r.Tables.Get(tid) // nil until a route is added to it
	if op == opDel {
		if t == nil {
			return answers(syscall.ESRCH)
		}
		m := fib6.Match{Dst: q.dst, Src: q.src, Gateway: q.gw}
		if q.metricSet {
			m.Metric = q.metric
			if m.Metric == 0 {
				m.Metric = fib6.DefaultMetric
			}
		}
		if q.protoSet {
			m.Proto = q.proto
		}
		if q.typ != 0 {
			m.Type = q.typ
		}
		if l != nil {
			m.Link = l.Index
		}
		if _, err := s.txnFor(t).Delete(m); err != nil {
			return rejected(err)
		}
		s.gwCache.changed(q.dst)
		return nil
	}
	rt := fib6.Route{Dst: q.dst}
	rt.Src = q.src
	rt.Type = q.typ
	if rt.Type == 0 {
		rt.Type = fib6.Unicast
	}
	rt.Proto = fib6.ProtoBoot
	if q.protoSet {
		rt.Proto = q.proto
	}
	rt.Metric = q.metric
	if rt.Metric == 0 {
		rt.Metric = fib6.DefaultMetric // Linux reads 0 as the default too
	}
	rt.MTU = q.mtu
	rt.PrefSrc = q.prefsrc
	if q.expires >= 0 {
		rt.Expires = time.Now().Add(time.Duration(q.expires) * time.Second).UnixNano()
	}
	if q.onlink {
		rt.Nexthop.Flags |= nexthop.OnLink
	}
	switch rt.Type {
	case fib6.Unicast, fib6.Local:
		rt.Nexthop.Gateway = q.gw
		if l != nil {
			rt.Nexthop.Link = l.Index
		}
		if err := s.checkGateway(&rt, tid, t); err != nil {
			return err
		}
	}
	if t == nil {
		t = s.r.Tables.Ensure(tid)
	}
	x := s.txnFor(t)
	if l != nil && !l.Up() && (rt.Type == fib6.Unicast || rt.Type == fib6.Local) {
		return extack("Nexthop device is not up.")
	}
	var err error
	switch op {
	case opAdd:
		err = x.Add(rt)
	case opReplace:
		err = x.Replace(rt)
	case opAppend:
		err = x.Append(rt)
	case opPrepend:
		err = x.Prepend(rt)
	case opChange:
		if _, derr := x.Delete(fib6.Match{Dst: rt.Dst, Src: rt.Src, Metric: rt.Metric}); derr != nil {
			return extack("Can not replace route - no match found.")
		}
		err = x.Add(rt)
	}
	if err != nil {
		return rejected(err)
	}
	s.gwCache.changed(q.dst)
	return nil
}

// checkGateway does what Linux's ip6_validate_gw does: a gateway must be
// link-local on a given link, or reachable through a connected route (one
// without a gateway of its own), which also picks the link when none is
// given. onlink skips the check. t is table tid, nil if it does not exist.
func (s *session) checkGateway(rt *fib6.Route, tid uint32, t *fib6.Table) *cmdErr {
	nh := &rt.Nexthop
	gw := nh.Gateway
	if !gw.IsValid() {
		if nh.Link == 0 {
			return answers(syscall.ENODEV)
		}
		return nil
	}
	if gw.IsLinkLocalUnicast() || nh.Flags&nexthop.OnLink != 0 {
		if nh.Link == 0 {
			return answers(syscall.ENODEV)
		}
		return nil
	}
	if gw.IsMulticast() || gw.IsUnspecified() || gw.IsLoopback() {
		return extack("Invalid gateway address")
	}
	// A batch names the same gateway again and again: what was checked
	// holds while the tables it was checked in are unchanged.
	c := &s.gwCache
	main := s.r.Tables.Main()
	if c.gw == gw && c.tid == tid && (nh.Link == 0 || nh.Link == c.link) &&
		c.mainGen == main.Generation() && (t == nil || c.tidGen == t.Generation()) {
		nh.Link = c.link
		return nil
	}
	c.gw = netip.Addr{}
	for _, lt := range [...]*fib6.Table{t, main} {
		if lt == nil {
			continue
		}
		a := s.lookupSeen(lt, gw)
		if a == nil || a.Type != fib6.Unicast || a.Nexthop.Gateway.IsValid() {
			continue
		}
		if nh.Link == 0 {
			nh.Link = a.Nexthop.Link
		}
		if a.Nexthop.Link == nh.Link {
			*c = gwCheck{gw: gw, tid: tid, link: nh.Link, mainGen: main.Generation()}
			if t != nil {
				c.tidGen = t.Generation()
			}
			return nil
		}
	}
	return answers(syscall.EHOSTUNREACH)
}

// gwCheck remembers the last gateway checkGateway accepted; none while gw
// is not valid.
type gwCheck struct {
	gw              netip.Addr
	tid             uint32
	link            int32
	mainGen, tidGen uint64
}

// changed forgets the gateway when the session's open transaction changes
// a prefix that holds it (the generations above move only on publish).
func (c *gwCheck) changed(p netip.Prefix) {
	if c.gw.IsValid() && p.Contains(c.gw) {
		c.gw = netip.Addr{}
	}
}

// lookupSeen is table t's route to dst as this session sees it: through
// its open transaction when that is t's, so a batch's gateway may be
// reached by a route an earlier line of it added (as Linux applies each
// line before the next).
func (s *session) lookupSeen(t *fib6.Table, dst netip.Addr) *fib6.Attrs {
	if s.txn != nil && s.txn.Table() == t {
		return s.txn.Lookup(dst)
	}
	return t.Lookup(dst, netip.Addr{})
}

// showFilter is a parsed SELECTOR of show, flush and save.
type showFilter struct {
	fib6.Filter
	table     uint32 // 0 (none given, a parsed table never is): main; tableAll
	metric    uint32
	metricSet bool
	cached    bool // selects nothing: the router has no cached routes
	monitor   bool // printing for a monitor: every table shows
}

func (f *showFilter) selects(r *fib6.Route) bool {
	return !f.cached && (!f.metricSet || r.Metric == f.metric)
}

func (s *session) parseSelector(args [][]byte) (*showFilter, *cmdErr) {
	f := &showFilter{}
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch {
		case matches(w, "table"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			t, ok := parseTable(v, true)
			if !ok {
				if matches(v, "help") {
					return nil, routeUsage()
				}
				return nil, invarg("table id value is invalid\n", v)
			}
			f.table = t
		case matches(w, "vrf"):
			return nil, unsupported(w)
		case matches(w, "cached") || matches(w, "cloned"):
			f.cached = true // the router keeps no cached routes
		case is(w, "tos") || matches(w, "dsfield"):
			return nil, unsupported(w)
		case matches(w, "protocol"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			if is(v, "all") {
				continue
			}
			p, ok := parseProto(v)
			if !ok {
				return nil, invarg("invalid \"protocol\"\n", v)
			}
			f.Proto = p
		case matches(w, "scope"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			if !is(v, "all") && !is(v, "global") && !is(v, "universe") && !is(v, "0") {
				return nil, invarg("invalid \"scope\"\n", v)
			}
		case matches(w, "type"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			t, ok := parseType(v)
			if !ok {
				return nil, invarg("node type value is invalid\n", v)
			}
			if t == 0 {
				f.cached = true // a type the router has no routes of
			}
			f.Type = t
		case is(w, "dev") || is(w, "oif"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			l, lerr := s.link(v)
			if lerr != nil {
				return nil, lerr
			}
			f.Link = l.Index // never 0
		case is(w, "iif"), is(w, "mark"), matches(w, "realms"):
			return nil, unsupported(w)
		case matches(w, "metric") || matches(w, "priority") || is(w, "preference"):
			n, err := ws.nextUint32("metric")
			if err != nil {
				return nil, err
			}
			f.metric, f.metricSet = n, true
		case is(w, "via"):
			v, err := ws.nextVia()
			if err != nil {
				return nil, err
			}
			if f.Gateway, err = parseAddr(v); err != nil {
				return nil, err
			}
		case is(w, "src"):
			return nil, unsupported(w)
		case matches(w, "from"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			if matches(v, "root") || matches(v, "match") || matches(v, "exact") {
				if v, err = ws.next(); err != nil {
					return nil, err
				}
			}
			if f.Src, err = parsePrefix(v); err != nil {
				return nil, err
			}
		default:
			if matches(w, "to") {
				v, err := ws.next()
				if err != nil {
					return nil, err
				}
				w = v
			}
			var target *netip.Prefix
			switch {
			case matches(w, "root"):
				target = &f.Root
			case matches(w, "match"):
				target = &f.Match
			case matches(w, "exact"):
				target = &f.Exact
			}
			if target != nil {
				v, err := ws.next()
				if err != nil {
					return nil, err
				}
				w = v
			} else {
				target = &f.Exact
			}
			if matches(w, "help") {
				return nil, routeUsage()
			}
			if is(w, "all") {
				continue // everything
			}
			p, err := parsePrefix(w)
			if err != nil {
				return nil, err
			}
			*target = p
		}
	}
	return f, nil
}

// tables returns the tables a selector names; main by default.
func (s *session) tables(f *showFilter) ([]*fib6.Table, *cmdErr) {
	switch {
	case f.table == tableAll:
		return s.r.Tables.All(), nil
	case f.table != 0:
		t := s.r.Tables.Get(f.table)
		if t == nil {
			return nil, &cmdErr{msg: "Error: ipv6: FIB table does not exist.\nDump terminated", code: 2}
		}
		return []*fib6.Table{t}, nil
	}
	return []*fib6.Table{s.r.Tables.Main()}, nil
}

func (s *session) routeShow(args [][]byte, flush bool) *cmdErr {
	f, err := s.parseSelector(args)
	if err != nil {
		return err
	}
	ts, err := s.tables(f)
	if err != nil {
		return err
	}
	s.commit()
	if flush {
		if len(args) == 0 {
			return &cmdErr{msg: "\"ip route flush\" requires arguments.", code: 1}
		}
		n := 0
		for _, t := range ts {
			if !f.cached {
				n += t.Flush(f.Filter)
			}
		}
		if s.opt.stats > 0 {
			if n == 0 {
				s.out.WriteString("Nothing to flush.\n")
			} else {
				s.out.WriteString("\n*** Round 1, deleting " + strconv.Itoa(n) + " entries ***\n*** Flush is complete after 1 round ***\n")
			}
		}
		return nil
	}
	p := s.printer(f)
	p.begin()
	for _, t := range ts {
		p.table = t.ID()
		t.Dump(f.Filter, func(r fib6.Route) bool {
			if f.selects(&r) {
				p.add(r)
			}
			return true
		})
		p.flushGroup()
	}
	p.end()
	return nil
}

// routeSave writes the selected routes as commands that a batch, a config
// file or `route restore` turns back into the same routes. Routes the
// router derives from its addresses (proto kernel) are left out: the
// `address add` commands bring them back.
func (s *session) routeSave(args [][]byte) *cmdErr {
	f, err := s.parseSelector(args)
	if err != nil {
		return err
	}
	ts, err := s.tables(f)
	if err != nil {
		return err
	}
	s.commit()
	var b []byte
	for _, t := range ts {
		var last fib6.Route
		first := true
		t.Dump(f.Filter, func(r fib6.Route) bool {
			if r.Proto == fib6.ProtoKernel || !f.selects(&r) {
				return true
			}
			verb := "route add "
			if !first && r.Dst == last.Dst && r.Src == last.Src && r.Metric == last.Metric {
				verb = "route append "
			}
			first, last = false, r
			b = append(b[:0], verb...)
			b = s.appendRouteSpec(b, t.ID(), r)
			b = append(b, '\n')
			s.out.Write(b)
			return true
		})
	}
	return nil
}

// appendRouteSpec writes r in the words of `route add`.
func (s *session) appendRouteSpec(b []byte, table uint32, r fib6.Route) []byte {
	if r.Type != fib6.Unicast {
		b = append(append(b, r.Type.String()...), ' ')
	}
	b = appendDst(b, r.Dst)
	if r.Src.IsValid() {
		b = r.Src.AppendTo(append(b, " from "...))
	}
	if r.Nexthop.Gateway.IsValid() {
		b = r.Nexthop.Gateway.AppendTo(append(b, " via "...))
	}
	if l := s.r.Links.ByIndex(r.Nexthop.Link); l != nil && r.Nexthop.Link != 0 {
		b = append(append(b, " dev "...), l.Name...)
	}
	b = append(append(b, " table "...), tableString(table)...)
	b = append(append(b, " proto "...), protoString(r.Proto)...)
	b = strconv.AppendUint(append(b, " metric "...), uint64(r.Metric), 10)
	if r.Nexthop.Flags&nexthop.OnLink != 0 {
		b = append(b, " onlink"...)
	}
	if r.MTU != 0 {
		b = strconv.AppendUint(append(b, " mtu "...), uint64(r.MTU), 10)
	}
	if r.PrefSrc.IsValid() {
		b = r.PrefSrc.AppendTo(append(b, " src "...))
	}
	if r.Expires != 0 {
		b = strconv.AppendInt(append(b, " expires "...), max(0, (r.Expires-time.Now().UnixNano())/1e9), 10)
	}
	return b
}

func appendDst(b []byte, p netip.Prefix) []byte {
	switch {
	case p.Bits() == 0:
		return append(b, "default"...)
	case p.Bits() == 128:
		return p.Addr().AppendTo(b)
	}
	return p.AppendTo(b)
}
