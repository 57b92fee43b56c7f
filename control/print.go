package control

import (
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"urouter/fib6"
	"urouter/nexthop"
)

// routePrinter writes routes as `ip -6 route show` does, text or JSON.
// Consecutive routes of one destination, source and metric that all have
// a gateway print as one multipath route, as Linux shows its IPv6 ECMP
// siblings.
type routePrinter struct {
	s       *session
	f       *showFilter
	table   uint32
	group   []fib6.Route
	j       *jsonw
	b       []byte
	now     int64
	deleted bool // monitor: "Deleted " prefix
}

func (s *session) printer(f *showFilter) *routePrinter {
	p := &routePrinter{s: s, f: f, now: time.Now().UnixNano()}
	if s.opt.json {
		p.j = &jsonw{w: s.out, pretty: s.opt.pretty}
	}
	return p
}

func (p *routePrinter) begin() {
	if p.j != nil {
		p.j.startArray()
	}
}

func (p *routePrinter) end() {
	if p.j != nil {
		p.j.endArray()
		p.s.out.WriteByte('\n')
	}
}

func ecmp(r *fib6.Route) bool { return r.Type == fib6.Unicast && r.Nexthop.Gateway.IsValid() }

func (p *routePrinter) add(r fib6.Route) {
	if n := len(p.group); n > 0 {
		g := &p.group[0]
		if !(g.Dst == r.Dst && g.Src == r.Src && g.Metric == r.Metric && ecmp(g) && ecmp(&r)) {
			p.flushGroup()
		}
	}
	p.group = append(p.group, r)
}

func (p *routePrinter) flushGroup() {
	if len(p.group) == 0 {
		return
	}
	if p.j != nil {
		p.json(p.group)
	} else {
		p.text(p.group)
	}
	p.group = p.group[:0]
}

func (p *routePrinter) devName(r *fib6.Route) string {
	if r.Type.IsReject() || r.Type == fib6.Throw || r.Nexthop.Link == 0 {
		return "lo"
	}
	if l := p.s.r.Links.ByIndex(r.Nexthop.Link); l != nil {
		return l.Name
	}
	return "if" + strconv.Itoa(int(r.Nexthop.Link))
}

// showTable: iproute2 filters by table main unless told otherwise, and
// never prints the table it filters by; with `table all` (or in a
// monitor) it prints every table but main, and main too with -d.
func (p *routePrinter) showTable() bool {
	return (p.f.table == tableAll || p.f.monitor) && (p.table != fib6.TableMain || p.s.opt.details)
}

func (p *routePrinter) expires(r *fib6.Route) int64 {
	return max(0, (r.Expires-p.now)/int64(time.Second))
}

func (p *routePrinter) text(g []fib6.Route) {
	r := &g[0]
	d := p.s.opt.details
	b := p.b[:0]
	if p.deleted {
		b = append(b, "Deleted "...)
	}
	if r.Type != fib6.Unicast || d {
		b = append(append(b, r.Type.String()...), ' ')
	}
	b = appendDst(b, r.Dst)
	if r.Src.IsValid() {
		b = r.Src.AppendTo(append(b, " from "...))
	}
	if len(g) == 1 {
		if r.Nexthop.Gateway.IsValid() && !p.f.Gateway.IsValid() {
			b = r.Nexthop.Gateway.AppendTo(append(b, " via "...))
		}
		if p.f.Link == 0 {
			b = append(append(b, " dev "...), p.devName(r)...)
		}
	}
	if p.showTable() {
		b = append(append(b, " table "...), tableString(p.table)...)
	}
	if (r.Proto != fib6.ProtoBoot || d) && p.f.Proto == 0 {
		b = append(append(b, " proto "...), protoString(r.Proto)...)
	}
	if d {
		b = append(b, " scope global"...)
	}
	if r.PrefSrc.IsValid() {
		b = r.PrefSrc.AppendTo(append(b, " src "...))
	}
	if !p.f.metricSet {
		b = strconv.AppendUint(append(b, " metric "...), uint64(r.Metric), 10)
	}
	if len(g) == 1 && r.Nexthop.Flags&nexthop.OnLink != 0 {
		b = append(b, " onlink"...)
	}
	if r.MTU != 0 {
		b = strconv.AppendUint(append(b, " mtu "...), uint64(r.MTU), 10)
	}
	if r.Expires != 0 {
		b = append(strconv.AppendInt(append(b, " expires "...), p.expires(r), 10), "sec"...)
	}
	b = append(b, " pref medium\n"...)
	if len(g) > 1 {
		for i := range g {
			n := &g[i]
			b = n.Nexthop.Gateway.AppendTo(append(b, "\tnexthop via "...))
			b = append(append(b, " dev "...), p.devName(n)...)
			b = append(b, " weight 1 "...)
			if n.Nexthop.Flags&nexthop.OnLink != 0 {
				b = append(b, "onlink "...)
			}
			b = append(b, '\n')
		}
	}
	p.s.out.Write(b)
	p.b = b
}

func dstString(p netip.Prefix) string { return string(appendDst(nil, p)) }

func flags(r *fib6.Route) []string {
	if r.Nexthop.Flags&nexthop.OnLink != 0 {
		return []string{"onlink"}
	}
	return nil
}

func (p *routePrinter) json(g []fib6.Route) {
	j := p.j
	r := &g[0]
	d := p.s.opt.details
	j.startObject()
	if r.Type != fib6.Unicast || d {
		j.str("type", r.Type.String())
	}
	j.str("dst", dstString(r.Dst))
	if r.Src.IsValid() {
		j.str("from", r.Src.String())
	}
	if len(g) == 1 {
		if r.Nexthop.Gateway.IsValid() && !p.f.Gateway.IsValid() {
			j.str("gateway", r.Nexthop.Gateway.String())
		}
		if p.f.Link == 0 {
			j.str("dev", p.devName(r))
		}
	}
	if p.showTable() {
		j.str("table", tableString(p.table))
	}
	if (r.Proto != fib6.ProtoBoot || d) && p.f.Proto == 0 {
		j.str("protocol", protoString(r.Proto))
	}
	if d {
		j.str("scope", "global")
	}
	if r.PrefSrc.IsValid() {
		j.str("prefsrc", r.PrefSrc.String())
	}
	if !p.f.metricSet {
		j.uint("metric", uint64(r.Metric))
	}
	if len(g) == 1 {
		j.strings("flags", flags(r))
	} else {
		j.strings("flags", nil)
	}
	if r.MTU != 0 {
		j.name("metrics")
		j.startArray()
		j.startObject()
		j.uint("mtu", uint64(r.MTU))
		j.endObject()
		j.endArray()
	}
	if r.Expires != 0 {
		j.int("expires", p.expires(r))
	}
	j.str("pref", "medium")
	if len(g) > 1 {
		j.name("nexthops")
		j.startArray()
		for i := range g {
			n := &g[i]
			j.startObject()
			j.str("gateway", n.Nexthop.Gateway.String())
			j.str("dev", p.devName(n))
			j.uint("weight", 1)
			j.strings("flags", flags(n))
			j.endObject()
		}
		j.endArray()
	}
	j.endObject()
}

// routeGet answers `route get ADDR [from SRC] [iif DEV] [oif DEV]` the way
// the dataplane decides: rule by rule (local, then main by default). A
// reject route answers with its error; throw goes on to the next rule.
func (s *session) routeGet(args [][]byte) *cmdErr {
	var dst, src netip.Addr
	var iif, oif []byte
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		var err *cmdErr
		var v []byte
		switch {
		case is(w, "tos") || matches(w, "dsfield"):
			return unsupported(w)
		case matches(w, "from"):
			if v, err = ws.next(); err == nil {
				src, err = parseAddr(trimLen(v))
			}
		case matches(w, "iif"):
			iif, err = ws.next()
		case matches(w, "mark"):
			return unsupported(w)
		case matches(w, "oif") || is(w, "dev"):
			oif, err = ws.next()
		case matches(w, "notify"), matches(w, "connected"), matches(w, "fibmatch"):
		case matches(w, "vrf"), matches(w, "uid"), is(w, "as"), matches(w, "sport"), matches(w, "dport"),
			matches(w, "ipproto"), is(w, "flowlabel"):
			return unsupported(w)
		default:
			if is(w, "to") {
				if w, err = ws.next(); err != nil {
					return err
				}
			}
			if matches(w, "help") {
				return routeUsage()
			}
			if dst.IsValid() {
				return garbage(w)
			}
			dst, err = parseAddr(trimLen(w))
		}
		if err != nil {
			return err
		}
	}
	if !dst.IsValid() {
		return &cmdErr{msg: "need at least a destination address", code: 1}
	}
	var oifIndex int32
	if oif != nil {
		l, err := s.link(oif)
		if err != nil {
			return err
		}
		oifIndex = l.Index
	}
	if iif != nil {
		if _, err := s.link(iif); err != nil {
			return err
		}
	}
	s.commit()
	var accept func(*fib6.Attrs) bool
	if oifIndex != 0 {
		accept = func(a *fib6.Attrs) bool {
			return !a.Type.IsReject() && (a.Nexthop.Link == 0 || a.Nexthop.Link == oifIndex)
		}
	}
	for _, rule := range s.r.DP.Rules.Load().Rules() {
		t := s.r.Tables.Get(rule.Table)
		if t == nil {
			continue
		}
		res, ok := t.Get(dst, src, accept)
		if !ok {
			continue
		}
		switch res.Type {
		case fib6.Throw:
			continue
		case fib6.Unreachable:
			return answers(syscall.EHOSTUNREACH)
		case fib6.Prohibit:
			return answers(syscall.EACCES)
		case fib6.Blackhole:
			return answers(syscall.EINVAL)
		}
		s.printGet(dst, src, iif, res)
		return nil
	}
	return answers(syscall.ENETUNREACH)
}

// trimLen accepts "ADDR/128", as ip route get does.
func trimLen(b []byte) []byte { return cut(b, '/') }

func (s *session) printGet(dst, src netip.Addr, iif []byte, res fib6.Result) {
	r := res.Route
	from := src
	if !from.IsValid() {
		from = netip.IPv6Unspecified()
	}
	dev := "lo"
	if r.Type != fib6.Local {
		if l := s.r.Links.ByIndex(r.Nexthop.Link); l != nil {
			dev = l.Name
		}
	}
	var pref netip.Addr
	if iif == nil {
		pref = r.PrefSrc
		if !pref.IsValid() {
			if r.Type == fib6.Local {
				pref = dst
			} else {
				pref = s.r.sourceFor(dst, r.Nexthop.Link)
			}
		}
	}
	if s.opt.json {
		j := &jsonw{w: s.out, pretty: s.opt.pretty}
		j.startArray()
		j.startObject()
		if r.Type != fib6.Unicast {
			j.str("type", r.Type.String())
		}
		j.str("dst", dst.String())
		j.str("from", from.String())
		if r.Nexthop.Gateway.IsValid() {
			j.str("gateway", r.Nexthop.Gateway.String())
		}
		j.str("dev", dev)
		if res.Table != fib6.TableMain {
			j.str("table", tableString(res.Table))
		}
		if r.Proto != fib6.ProtoBoot {
			j.str("protocol", protoString(r.Proto))
		}
		if pref.IsValid() {
			j.str("prefsrc", pref.String())
		}
		j.uint("metric", uint64(r.Metric))
		j.strings("flags", flags(&r))
		if iif != nil {
			j.str("iif", string(iif))
		}
		j.str("pref", "medium")
		j.endObject()
		j.endArray()
		s.out.WriteByte('\n')
		return
	}
	b := make([]byte, 0, 128)
	if r.Type != fib6.Unicast {
		b = append(append(b, r.Type.String()...), ' ')
	}
	b = dst.AppendTo(b)
	b = from.AppendTo(append(b, " from "...))
	if r.Nexthop.Gateway.IsValid() {
		b = r.Nexthop.Gateway.AppendTo(append(b, " via "...))
	}
	b = append(append(b, " dev "...), dev...)
	if res.Table != fib6.TableMain {
		b = append(append(b, " table "...), tableString(res.Table)...)
	}
	if r.Proto != fib6.ProtoBoot {
		b = append(append(b, " proto "...), protoString(r.Proto)...)
	}
	if pref.IsValid() {
		b = pref.AppendTo(append(b, " src "...))
	}
	b = strconv.AppendUint(append(b, " metric "...), uint64(r.Metric), 10)
	if r.Nexthop.Flags&nexthop.OnLink != 0 {
		b = append(b, " onlink"...)
	}
	if r.MTU != 0 {
		b = strconv.AppendUint(append(b, " mtu "...), uint64(r.MTU), 10)
	}
	if iif != nil {
		b = append(append(b, " iif "...), iif...)
	}
	b = append(b, " pref medium\n"...)
	s.out.Write(b)
}

// sourceFor picks the router's source address towards dst leaving by link
// index: an address of the same scope on that link, the one sharing the
// longest prefix with dst (RFC 6724 rules 2 and 8, simplified); else one
// from any link.
func (r *Router) sourceFor(dst netip.Addr, link int32) netip.Addr {
	best := netip.Addr{}
	bestScore := -1
	consider := func(a netip.Addr, onLink bool) {
		if a.IsLoopback() {
			return
		}
		score := commonPrefix(a, dst)
		if a.IsLinkLocalUnicast() == dst.IsLinkLocalUnicast() {
			score += 256
		}
		if onLink {
			score += 512
		}
		if score > bestScore {
			best, bestScore = a, score
		}
	}
	for _, l := range r.Links.All() {
		for _, p := range l.Addrs() {
			consider(p.Addr(), l.Index == link)
		}
	}
	return best
}

func commonPrefix(a, b netip.Addr) int {
	x, y := a.As16(), b.As16()
	n := 0
	for i := range x {
		d := x[i] ^ y[i]
		if d == 0 {
			n += 8
			continue
		}
		for d&0x80 == 0 {
			n++
			d <<= 1
		}
		break
	}
	return n
}
