package control

import (
	"net/netip"
	"strconv"
	"strings"
	"sync"
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
	vrf       []byte // `vrf NAME`: its table, once the links are at hand
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
	nhid      uint32
	nhidSet   bool
	tosSet    bool  // a traffic class other than 0: Linux has none for IPv6
	legs      []leg // `nexthop ...` paths, in the parse memo's storage
	encap     *encapReq
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
	if p, ok := parsePrefixFast(b); ok {
		return p, nil
	}
	var p netip.Prefix
	var err error
	if strings.IndexByte(s, '/') >= 0 {
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

// routeParser is the route object's state from one command to the next,
// its own: a batch repeats its words, table, links, gateways, paths and
// nexthop object on every line, and each is looked up or checked once
// while it holds.
type routeParser struct {
	cmd   memo            // the command word
	words parseMemo       // add/del/...'s keywords, gateway, table and paths
	dev   *dataplane.Link // the link named last (see routeLink)
	gw    gwCheck         // the gateway checked last (see checkGateway)
	legs  legCheck        // the paths checked last (see legGroup)
	obj   *nexthop.Object // the nexthop object named last (see nexthopObject)
}

// parseMemo keeps what the previous command parsed, for the next: a batch
// repeats its keywords, gateway and table on every line.
type parseMemo struct {
	kw    [4]memo // by position among the keywords
	gw    addrMemo
	tab   []byte
	tabID uint32
	legs  []leg
	legGw []addrMemo // the gateway of each leg
}

// addrMemo is an address as last written and its value: a batch writes
// the same gateway on every line.
type addrMemo struct {
	text []byte
	val  netip.Addr
}

// parse is v's address, parsed only if v is not what was written last.
func (m *addrMemo) parse(v []byte) (netip.Addr, *cmdErr) {
	if m.text != nil && string(v) == string(m.text) {
		return m.val, nil
	}
	a, err := parseAddr(v)
	if err != nil {
		return a, err
	}
	m.text, m.val = append(m.text[:0], v...), a
	return a, nil
}

// parseRouteModify parses the arguments of add/del/change/append/replace/
// prepend, keyword by keyword in iproute2's order (iproute_modify).
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
				k = memos[nk].of(modifyWords(), w)
			} else {
				k = modifyWords().of(w)
			}
			if k != 0 {
				nk++
			}
		}
		var err *cmdErr
		switch k {
		case 0:
			err = q.parseDst(&ws, w)
		case mkUnsupported:
			return unsupported(w)
		case mkNexthop:
			err = parseLegs(q, args[ws.i:], pm)
			ws.i = len(args)
		case mkVia, mkDev, mkOnlink, mkNhid:
			err = q.parsePath(&ws, k, w, pm)
		case mkEncap:
			q.encap, err = parseEncap(&ws)
		default:
			err = q.parseNode(&ws, k, pm)
		}
		if err != nil {
			return err
		}
	}
	if !q.dst.IsValid() {
		return routeUsage()
	}
	return nil
}

// parseDst reads the word that is no keyword: `[to] [TYPE] PREFIX`.
func (q *routeReq) parseDst(ws *argv, w []byte) *cmdErr {
	w, err := ws.valueAfter(w, "to")
	if err != nil {
		return err
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
	return nil
}

// parsePath reads keyword k of the route's single path: via, dev,
// onlink, or the nexthop object (nhid).
func (q *routeReq) parsePath(ws *argv, k int, w []byte, pm *parseMemo) *cmdErr {
	switch k {
	case mkVia:
		if q.gw.IsValid() {
			return invarg("use nexthop syntax to specify multiple via\n", w)
		}
		v, err := ws.nextVia()
		if err != nil {
			return err
		}
		if q.gw, err = pm.gw.parse(v); err != nil {
			return err
		}
	case mkDev:
		v, err := ws.next()
		if err != nil {
			return err
		}
		q.dev = v
	case mkOnlink:
		q.onlink = true
	case mkNhid:
		v, err := ws.next()
		if err != nil {
			return err
		}
		n, ok := parseUint32(v)
		if !ok {
			return badValue("id", v)
		}
		q.nhid, q.nhidSet = n, true
	}
	return nil
}

// parseNode reads keyword k of the route itself: its source, table,
// protocol, metric and options.
func (q *routeReq) parseNode(ws *argv, k int, pm *parseMemo) *cmdErr {
	switch k {
	case mkExpires:
		n, err := ws.nextUint32("expires")
		q.expires = int64(n)
		return err
	case mkMetric:
		n, err := ws.nextUint32("metric")
		q.metric, q.metricSet = n, true
		return err
	}
	v, err := ws.next()
	if err != nil {
		return err
	}
	switch k {
	case mkSrc:
		q.prefsrc, err = parseAddr(v)
	case mkFrom:
		q.src, err = parsePrefix(v)
	case mkScope:
		if !is(v, "global") && !is(v, "universe") && !is(v, "0") {
			return invarg("invalid \"scope\" value\n", v)
		}
	case mkMtu:
		q.mtu, err = nextMtu(ws, v)
	case mkProtocol:
		p, ok := parseProto(v)
		if !ok {
			return badValue("protocol", v)
		}
		q.proto, q.protoSet = p, true
	case mkTable:
		q.table, err = pm.table(v)
	case mkVRF:
		q.vrf = append(q.vrf[:0], v...)
	case mkPref:
		return parsePref(v)
	case mkTos:
		ds, ok := parseDSField(v)
		if !ok {
			return invarg("\"tos\" value is invalid\n", v)
		}
		q.tosSet = ds != 0
	}
	return err
}

// nextMtu reads `mtu [lock] NUMBER` from its first word v.
func nextMtu(ws *argv, v []byte) (uint32, *cmdErr) {
	if is(v, "lock") {
		var err *cmdErr
		if v, err = ws.next(); err != nil {
			return 0, err
		}
	}
	n, ok := parseUint32(v)
	if !ok {
		return 0, badValue("mtu", v)
	}
	return n, nil
}

// table reads a table's id, the one written last again from the memo.
func (pm *parseMemo) table(v []byte) (uint32, *cmdErr) {
	if pm.tab != nil && string(v) == string(pm.tab) {
		return pm.tabID, nil
	}
	t, ok := parseTable(v, false)
	if n, isNum := parseUint32(v); isNum && n == 0 {
		t, ok = 0, true // iproute2 takes 0, and Linux reads it as main
	}
	if !ok {
		return 0, badValue("table", v)
	}
	pm.tab, pm.tabID = append(pm.tab[:0], v...), t
	return t, nil
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
INFO_SPEC := { NH | nhid ID } OPTIONS
NH := [ via [ inet6 ] ADDRESS ] [ dev STRING ] [ onlink ]
      | nexthop NH [ weight NUMBER ] nexthop NH ...
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

// routeCmds() are do_iproute's command words, in its order.
var routeCmds = sync.OnceValue(func() keywords {
	return newKeywords([]kw{
		{"add", true, rcAdd}, {"change", true, rcChange}, {"chg", false, rcChange},
		{"replace", true, rcReplace}, {"prepend", true, rcPrepend}, {"append", true, rcAppend},
		{"test", true, rcTest}, {"delete", true, rcDelete}, {"list", true, rcList},
		{"show", true, rcList}, {"lst", true, rcList}, {"get", true, rcGet}, {"flush", true, rcFlush},
		{"save", true, rcSave}, {"restore", true, rcRestore}, {"showdump", true, rcShowdump},
		{"help", true, rcHelp},
	})
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
	mkNhid
	mkProtocol
	mkTable
	mkVRF
	mkDev
	mkPref
	mkTos
	mkEncap
	mkUnsupported
)

// modifyWords() are iproute_modify's keywords, in its order.
var modifyWords = sync.OnceValue(func() keywords {
	return newKeywords([]kw{
		{"src", false, mkSrc}, {"as", false, mkUnsupported}, {"via", false, mkVia}, {"from", false, mkFrom},
		{"tos", false, mkTos}, {"dsfield", true, mkTos}, {"expires", false, mkExpires},
		{"metric", true, mkMetric}, {"priority", true, mkMetric}, {"preference", false, mkMetric},
		{"scope", false, mkScope}, {"mtu", false, mkMtu}, {"hoplimit", false, mkUnsupported},
		{"advmss", false, mkUnsupported}, {"reordering", true, mkUnsupported}, {"rtt", false, mkUnsupported},
		{"rto_min", false, mkUnsupported}, {"window", true, mkUnsupported}, {"cwnd", true, mkUnsupported},
		{"initcwnd", true, mkUnsupported}, {"initrwnd", true, mkUnsupported}, {"features", true, mkUnsupported},
		{"quickack", true, mkUnsupported}, {"congctl", true, mkUnsupported}, {"rttvar", true, mkUnsupported},
		{"ssthresh", true, mkUnsupported}, {"realms", true, mkUnsupported}, {"onlink", false, mkOnlink},
		{"nexthop", false, mkNexthop}, {"nhid", false, mkNhid}, {"protocol", true, mkProtocol},
		{"table", true, mkTable}, {"vrf", true, mkVRF}, {"dev", false, mkDev}, {"oif", false, mkDev},
		{"pref", true, mkPref}, {"encap", false, mkEncap}, {"ttl-propagate", false, mkUnsupported},
		{"fastopen_no_cookie", true, mkUnsupported},
	})
})
