package control

import (
	"net/netip"
	"strconv"
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
	// route get fibmatch: the table unless main, and the iif asked
	get bool
	iif string
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
	if p.get {
		return p.table != fib6.TableMain
	}
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
	if p.iif != "" {
		b = append(append(b, " iif "...), p.iif...)
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

func flags(nh nexthop.Nexthop) []string {
	if nh.Flags&nexthop.OnLink != 0 {
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
		j.strings("flags", flags(r.Nexthop))
	} else {
		j.strings("flags", nil)
	}
	j.metrics(r.MTU)
	if r.Expires != 0 {
		j.int("expires", p.expires(r))
	}
	if p.iif != "" {
		j.str("iif", p.iif)
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
			j.strings("flags", flags(n.Nexthop))
			j.endObject()
		}
		j.endArray()
	}
	j.endObject()
}
