package control

import (
	"net/netip"
	"slices"
	"strconv"
	"time"

	"urouter/fib6"
	"urouter/nexthop"
)

// routePrinter writes routes as `ip -6 route show` does, text or JSON. A
// multipath route, and a route through a nexthop group, prints its paths
// on lines of their own (Linux's default nexthop_compat_mode).
type routePrinter struct {
	s       *session
	f       *showFilter
	table   uint32
	j       *jsonw
	b       []byte
	now     int64
	deleted bool // monitor: "Deleted " prefix
	// route get fibmatch: the table unless main, and the iif asked
	get bool
	iif string
	// rotate: print the paths of an inline multipath route from this one
	// on (fibmatch names the flow's path first, as Linux does)
	rotate int
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

// routeShape is what a route prints of its paths: its nexthop object's
// id (0 for none), its single path (when it has one), or its paths.
type routeShape struct {
	nhid   uint32
	single *nexthop.Nexthop
	paths  []nexthop.Member
	// blackhole: a route through a blackhole nexthop object
	blackhole bool
}

func (p *routePrinter) shape(r *fib6.Route) routeShape {
	var sh routeShape
	switch {
	case r.Object != nil:
		v := r.Object.Load()
		sh.nhid = r.Object.ID()
		switch {
		case v.Paths != nil:
			sh.paths = v.Paths.Members()
		case v.Flags&nexthop.Blackhole != 0:
			sh.blackhole = true
		default:
			sh.single = &v.Nexthop
		}
	case r.Group != nil:
		ms := r.Group.Members()
		if k := p.rotate % len(ms); k != 0 {
			ms = append(slices.Clone(ms[k:]), ms[:k]...)
		}
		sh.paths = ms
	default:
		sh.single = &r.Nexthop
	}
	return sh
}

func (p *routePrinter) add(r fib6.Route) {
	if p.j != nil {
		p.json(&r)
	} else {
		p.text(&r)
	}
}

func (p *routePrinter) linkName(r *fib6.Route, link int32) string {
	if r.Type.IsReject() || r.Type == fib6.Throw || link == 0 {
		return "lo"
	}
	if l := p.s.r.Links.ByIndex(link); l != nil {
		return l.Name
	}
	return "if" + strconv.Itoa(int(link))
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

// pathFlags are a path's flags as iproute2's print_rt_flags words them,
// in its order.
func pathFlags(nh nexthop.Nexthop) []string {
	var fs []string
	if nh.Flags&nexthop.Dead != 0 {
		fs = append(fs, "dead")
	}
	if nh.Flags&nexthop.OnLink != 0 {
		fs = append(fs, "onlink")
	}
	if nh.Flags&nexthop.LinkDown != 0 {
		fs = append(fs, "linkdown")
	}
	return fs
}

func (p *routePrinter) text(r *fib6.Route) {
	d := p.s.opt.details
	sh := p.shape(r)
	b := p.b[:0]
	if p.deleted {
		b = append(b, "Deleted "...)
	}
	if sh.blackhole {
		b = append(b, "blackhole "...)
	} else if r.Type != fib6.Unicast || d {
		b = append(append(b, r.Type.String()...), ' ')
	}
	b = appendDst(b, r.Dst)
	if r.Src.IsValid() {
		b = r.Src.AppendTo(append(b, " from "...))
	}
	if sh.nhid != 0 {
		b = strconv.AppendUint(append(b, " nhid "...), uint64(sh.nhid), 10)
	}
	if sh.single != nil || sh.blackhole {
		nh := nexthop.Nexthop{}
		if sh.single != nil {
			nh = *sh.single
		}
		if nh.Gateway.IsValid() && !p.f.Gateway.IsValid() {
			b = nh.Gateway.AppendTo(append(b, " via "...))
		}
		if p.f.Link == 0 {
			b = append(append(b, " dev "...), p.linkName(r, nh.Link)...)
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
	if sh.single != nil {
		for _, f := range pathFlags(*sh.single) {
			b = append(append(b, ' '), f...)
		}
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
	for _, m := range sh.paths {
		b = append(b, "\tnexthop"...)
		if m.Gateway.IsValid() {
			b = m.Gateway.AppendTo(append(b, " via "...))
		}
		b = append(append(b, " dev "...), p.linkName(r, m.Link)...)
		b = append(strconv.AppendUint(append(b, " weight "...), uint64(m.Weight), 10), ' ')
		for _, f := range pathFlags(m.Nexthop) {
			b = append(append(b, f...), ' ')
		}
		b = append(b, '\n')
	}
	p.s.out.Write(b)
	p.b = b
}

func dstString(p netip.Prefix) string { return string(appendDst(nil, p)) }

func (p *routePrinter) json(r *fib6.Route) {
	j := p.j
	d := p.s.opt.details
	sh := p.shape(r)
	j.startObject()
	if sh.blackhole {
		j.str("type", "blackhole")
	} else if r.Type != fib6.Unicast || d {
		j.str("type", r.Type.String())
	}
	j.str("dst", dstString(r.Dst))
	if r.Src.IsValid() {
		j.str("from", r.Src.String())
	}
	if sh.nhid != 0 {
		j.uint("nhid", uint64(sh.nhid))
	}
	if sh.single != nil || sh.blackhole {
		nh := nexthop.Nexthop{}
		if sh.single != nil {
			nh = *sh.single
		}
		if nh.Gateway.IsValid() && !p.f.Gateway.IsValid() {
			j.str("gateway", nh.Gateway.String())
		}
		if p.f.Link == 0 {
			j.str("dev", p.linkName(r, nh.Link))
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
	if sh.single != nil {
		j.strings("flags", pathFlags(*sh.single))
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
	if len(sh.paths) > 0 {
		j.name("nexthops")
		j.startArray()
		for _, m := range sh.paths {
			j.startObject()
			if m.Gateway.IsValid() {
				j.str("gateway", m.Gateway.String())
			}
			j.str("dev", p.linkName(r, m.Link))
			j.uint("weight", uint64(m.Weight))
			j.strings("flags", pathFlags(m.Nexthop))
			j.endObject()
		}
		j.endArray()
	}
	j.endObject()
}
