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
	s       *Session
	f       *showFilter
	table   uint32
	out     printer
	now     int64
	deleted bool // monitor: "Deleted " prefix
	// route get fibmatch: the table unless main, and the iif asked
	get bool
	iif string
	// rotate: print the paths of an inline multipath route from this one
	// on (fibmatch names the flow's path first, as Linux does)
	rotate int
	cache  printCache // see addAttrs
}

func (s *Session) printer(f *showFilter) *routePrinter {
	return &routePrinter{s: s, f: f, out: s.newPrinter(), now: time.Now().UnixNano()}
}

func (p *routePrinter) begin() { p.out.begin() }

func (p *routePrinter) end() { p.out.end() }

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

// add prints route r, as iproute2's print_route does.
func (p *routePrinter) add(r fib6.Route) {
	d := p.s.opt.Details
	sh := p.shape(&r)
	w := &p.out
	w.openObject("")
	if p.deleted {
		w.text("Deleted ")
	}
	if sh.blackhole {
		w.str("type", "%s ", "blackhole")
	} else if r.Type != fib6.Unicast || d {
		w.str("type", "%s ", r.Type.String())
	}
	w.bytes("dst", "%s", appendDst(w.buf[:0], r.Dst))
	if r.Src.IsValid() {
		w.bytes("from", " from %s", r.Src.AppendTo(w.buf[:0]))
	}
	if sh.nhid != 0 {
		w.uint("nhid", " nhid %d", uint64(sh.nhid))
	}
	if sh.single != nil && sh.single.Encap != nil {
		p.encap(sh.single.Encap)
	}
	if sh.single != nil || sh.blackhole {
		nh := nexthop.Nexthop{}
		if sh.single != nil {
			nh = *sh.single
		}
		if nh.Gateway.IsValid() && !p.f.Gateway.IsValid() {
			w.addr("gateway", " via %s", nh.Gateway)
		}
		if p.f.Link == 0 {
			w.str("dev", " dev %s", p.linkName(&r, nh.Link))
		}
	}
	p.attrs(&r)
	var flags []string
	if sh.single != nil {
		flags = pathFlags(*sh.single)
	}
	w.strings("flags", " %s", flags)
	w.metrics(r.MTU)
	if r.Expires != 0 {
		w.int("expires", " expires %dsec", p.expires(&r))
	}
	if p.iif != "" {
		w.str("iif", " iif %s", p.iif)
	}
	w.str("pref", " pref %s", "medium")
	w.text("\n")
	p.paths(&r, sh.paths)
	w.closeObject()
}

// attrs prints the route's table, protocol, scope, source and metric.
func (p *routePrinter) attrs(r *fib6.Route) {
	d, w := p.s.opt.Details, &p.out
	if p.showTable() {
		w.str("table", " table %s", tableString(p.table))
	}
	if (r.Proto != fib6.ProtoBoot || d) && p.f.Proto == 0 {
		w.str("protocol", " proto %s", protoString(r.Proto))
	}
	if d {
		w.str("scope", " scope %s", "global")
	}
	if r.PrefSrc.IsValid() {
		w.addr("prefsrc", " src %s", r.PrefSrc)
	}
	if !p.f.metricSet {
		w.uint("metric", " metric %d", uint64(r.Metric))
	}
}

// paths prints a multipath route's paths, one a line.
func (p *routePrinter) paths(r *fib6.Route, ms []nexthop.Member) {
	if len(ms) == 0 {
		return
	}
	w := &p.out
	w.openArray("nexthops")
	for _, m := range ms {
		w.openObject("")
		w.text("\tnexthop")
		if m.Encap != nil {
			printEncap(w, p.s, m.Encap, "  encap %s")
		}
		if m.Gateway.IsValid() {
			w.addr("gateway", " via %s", m.Gateway)
		}
		w.str("dev", " dev %s", p.linkName(r, m.Link))
		w.uint("weight", " weight %d ", uint64(m.Weight))
		w.strings("flags", "%s ", pathFlags(m.Nexthop))
		w.text("\n")
		w.closeObject()
	}
	w.closeArray()
}

func (p *routePrinter) linkName(r *fib6.Route, link int32) string {
	if r.Type.ViaLoopback() || link == 0 {
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
	return (p.f.table == tableAll || p.f.monitor) && (p.table != fib6.TableMain || p.s.opt.Details)
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

func dstString(p netip.Prefix) string { return string(appendDst(nil, p)) }
