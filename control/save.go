package control

import (
	"bytes"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"urouter/dataplane"
	"urouter/dataplane/port"
	"urouter/decide"
	"urouter/feed"
	"urouter/fib6"
	"urouter/ndisc"
	"urouter/nexthop"
	"urouter/router"
	"urouter/rules"
)

// `save [ --all ]`: the running configuration as the commands that make it
// again, in the order that loads: knobs, links (and each link's own
// knobs), addresses, RA, the routes that name no gateway and no nexthop
// object (the gateways of the others are checked against them), nexthop
// objects (members before groups), the routes whose gateways their own
// table or main reaches, rules, the routes whose gateways only the rules
// reach (as the rules may send a lookup where a gateway is not),
// permanent neighbours. A daemon started with it as --config shows
// the same, and saves the same bytes. What the router derives (an
// address's connected and local routes, a link-local address from a MAC,
// the default rules) is left to it; what a feed owns comes back from its
// daemon, unless --all, where it is written with its proto.

// saveHeader begins what save writes: a config that begins with it is
// loaded as a saved one, whose gateways were checked when its routes were
// made (their order in it is not the order they came in, and the rules
// that reached a gateway then may send a lookup elsewhere now).
const saveHeader = "# urouter save: the running configuration (a config beginning with this line is loaded without checking gateways again)\n"

func saveUsage() *cmdErr { return parseErr("Usage: urouter save [ --all ]") }

func (s *Session) saveCmd(args [][]byte) *cmdErr {
	all := false
	for _, a := range args {
		switch {
		case is(a, "--all") || is(a, "all"):
			all = true
		case matches(a, "help"):
			return saveUsage()
		default:
			return ownGarbage("save", a)
		}
	}
	if !s.opt.JSON {
		s.out.WriteString(saveHeader)
		s.save(all, func(_ string, line []byte) { s.out.Write(line) })
		return nil
	}
	w := s.newPrinter()
	w.begin()
	s.save(all, func(obj string, line []byte) {
		w.openObject("")
		w.str("object", "", obj)
		w.str("command", "", strings.TrimSuffix(string(line), "\n"))
		w.closeObject()
	})
	w.end()
	return nil
}

// save calls emit with each line of the configuration (ending in '\n')
// and its object.
func (s *Session) save(all bool, emit func(obj string, line []byte)) {
	sv := saver{s: s, emit: emit, all: all}
	links := parentsFirst(s.r.Links.All())
	sv.sysctls(func(name string) bool { return s.r.Links.ByName(knobDev(name)) == nil })
	sv.tunsrc()
	for _, l := range links {
		sv.link(l)
	}
	sv.masters(links)
	for _, l := range links {
		sv.addrs(l)
	}
	for _, l := range links {
		sv.ra(l)
	}
	late := sv.routesAndNexthops()
	sv.rules()
	sv.chunkLines("route", late)
	for _, l := range links {
		sv.neighbours(l)
	}
}

// routesAndNexthops writes the routes that need nothing but their link,
// then the nexthop objects, then the routes through gateways their own
// table or main reaches and through objects; it returns the others.
func (sv *saver) routesAndNexthops() (late chunks) {
	early, late := sv.routes()
	sv.nexthops()
	sv.chunkLines("route", early)
	return late
}

// lines emits each line of b.
func (sv *saver) lines(obj string, b []byte) {
	for line := range bytes.Lines(b) {
		sv.emit(obj, line)
	}
}

type saver struct {
	s    *Session
	emit func(obj string, line []byte)
	all  bool
	// only: the routes and nexthops of this feed alone (a state file's)
	only *feed.Applier
	b    []byte
}

// skipsRoute and skipsNexthop say what a feed's part of the save leaves.
func (sv *saver) skipsRoute(table uint32, r *fib6.Route) bool {
	if sv.only != nil {
		return !sv.only.Owns(table, r.Dst, r.Src, r.Metric)
	}
	return !sv.all && sv.s.feeds.ownsRoute(table, r)
}

func (sv *saver) skipsNexthop(id uint32) bool {
	if sv.only != nil {
		return !sv.only.OwnsNexthop(id)
	}
	return !sv.all && sv.s.feeds.ownsNexthop(id)
}

func (sv *saver) line(obj string, words ...string) {
	sv.b = append(sv.b[:0], strings.Join(words, " ")...)
	sv.b = append(sv.b, '\n')
	sv.emit(obj, sv.b)
}

// sysctls writes the knobs of names that pass that differ from their
// defaults.
func (sv *saver) sysctls(pass func(string) bool) {
	for _, n := range sv.s.r.SysctlNames() {
		if !pass(n) {
			continue
		}
		v, err := sv.s.r.Sysctl(n)
		if err != nil {
			continue // a link gone since the list
		}
		if d, err := sv.s.r.SysctlDefault(n); err == nil && d != v {
			sv.line("sysctl", "sysctl", "-q", "-w", n+"="+v)
		}
	}
}

// knobDev is the device of knob name, net.ipv6.{conf,neigh}.DEV.KNOB ("" for
// another knob). A link's name may have dots.
func knobDev(name string) string {
	rest, ok := strings.CutPrefix(name, "net.ipv6.conf.")
	if !ok {
		if rest, ok = strings.CutPrefix(name, "net.ipv6.neigh."); !ok {
			return ""
		}
	}
	if i := strings.LastIndexByte(rest, '.'); i > 0 {
		return strings.ReplaceAll(rest[:i], "/", ".") // sysctl names lan1.100 lan1/100
	}
	return ""
}

// link writes how a link is made, its state, its mirror and its own knobs.
// The loopback is the router's: only what was changed on it is written.
func (sv *saver) link(l *dataplane.Link) {
	hw := l.Hardware()
	name := l.Name
	if !l.IsLoopback() {
		words := []string{"link", "add", name, "index", strconv.Itoa(int(l.Index)), "mtu", strconv.Itoa(l.MTU())}
		if mac := hw.HardwareAddr(); mac != nil && hw.Kind() != "host" && !parentMAC(l) { // random unless given
			words = append(words, "address", mac.String())
		}
		words = append(words, vlanSpec(l)...)
		words = append(words, "type", hw.Kind())
		if sp, ok := hw.(port.Specifier); ok {
			words = append(words, sp.Spec()...)
		}
		sv.line("link", words...)
	} else if l.MTU() != 65536 {
		sv.line("link", "link", "set", name, "mtu", strconv.Itoa(l.MTU()))
	}
	sv.sysctls(func(n string) bool { return knobDev(n) == name })
	switch {
	case !l.IsLoopback() && l.Up():
		sv.line("link", "link", "set", name, "up")
	case l.IsLoopback() && !l.Up():
		sv.line("link", "link", "set", name, "down")
	}
	if m := l.Mirror(); m != nil {
		words := []string{"link", "set", name, "mirror", m.Name}
		if m.Kind != dataplane.MirrorTUN { // the default unsaid
			words = append(words, "type", m.Kind)
		}
		sv.line("link", words...)
	}
}

// addrs writes a link's addresses but its link-local one from its MAC,
// which coming up gives it (and a link that lost that one loses it again).
// They are written oldest first: a link lists an address before the older
// ones of its scope, as Linux does, so the same order loads back.
func (sv *saver) addrs(l *dataplane.Link) {
	ll, hasLL := l.LinkLocal()
	found := false
	for _, a := range slices.Backward(l.Addrs()) {
		switch {
		case hasLL && a == ll:
			found = true
			continue
		case l.IsLoopback() && a.Addr() == netip.IPv6Loopback():
			continue
		}
		words := []string{"address", "add", a.String(), "dev", l.Name}
		if m := sv.s.r.AddrMetric(l, a.Addr()); m != 0 {
			words = append(words, "metric", strconv.FormatUint(uint64(m), 10))
		}
		sv.line("address", words...)
	}
	if hasLL && !found && l.Up() && l.IPv6Enabled() {
		sv.line("address", "address", "del", ll.String(), "dev", l.Name)
	}
}

// ra writes a link's RA settings that differ from RFC 4861's, and its
// prefixes.
func (sv *saver) ra(l *dataplane.Link) {
	c, ok := l.RA()
	if !ok {
		return
	}
	d := ndisc.DefaultRA()
	secs := func(t time.Duration) string { return strconv.FormatInt(int64(t/time.Second), 10) }
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	w := []string{"ra", "set", "dev", l.Name}
	if c.MaxInterval != d.MaxInterval || c.Lifetime != d.Lifetime {
		// a max-interval alone sets the lifetime: say both
		w = append(w, "max-interval", secs(c.MaxInterval), "lifetime", secs(c.Lifetime))
	}
	if c.MinInterval != d.MinInterval {
		w = append(w, "min-interval", secs(c.MinInterval))
	}
	if c.Preference != d.Preference {
		w = append(w, "preference", map[int8]string{-1: "low", 0: "medium", 1: "high"}[c.Preference])
	}
	if c.MTU != d.MTU {
		w = append(w, "mtu", strconv.FormatUint(uint64(c.MTU), 10))
	}
	if c.HopLimit != d.HopLimit {
		w = append(w, "hoplimit", strconv.Itoa(int(c.HopLimit)))
	}
	if c.Managed != d.Managed {
		w = append(w, "managed", onOff(c.Managed))
	}
	if c.Other != d.Other {
		w = append(w, "other", onOff(c.Other))
	}
	if len(c.RDNSS) > 0 {
		as := make([]string, len(c.RDNSS))
		for i, a := range c.RDNSS {
			as[i] = a.String()
		}
		w = append(w, "rdnss", strings.Join(as, ","))
	}
	if c.RDNSSLifetime != d.RDNSSLifetime {
		w = append(w, "rdnss-lifetime", secs(c.RDNSSLifetime))
	}
	if c.Enabled {
		w = append(w, "on")
	}
	if len(w) > 4 {
		sv.line("ra", w...)
	}
	for _, p := range c.Prefixes {
		w := []string{"ra", "prefix", "add", p.Prefix.String(), "dev", l.Name, "valid", secs(p.Valid), "preferred", secs(p.Preferred)}
		if !p.OnLink {
			w = append(w, "no-onlink")
		}
		if !p.Autonomous {
			w = append(w, "no-autonomous")
		}
		sv.line("ra", w...)
	}
}

// nexthops writes the nexthop objects, every group after the members it
// names.
func (sv *saver) nexthops() {
	vs := sv.s.r.Nexthops.List()
	slices.SortFunc(vs, func(a, b *nexthop.Version) int {
		if a.IsGroup() != b.IsGroup() {
			if a.IsGroup() {
				return 1
			}
			return -1
		}
		return int(a.ID) - int(b.ID)
	})
	for _, v := range vs {
		if sv.skipsNexthop(v.ID) {
			continue
		}
		b := strconv.AppendUint(append(sv.b[:0], "nexthop add id "...), uint64(v.ID), 10)
		switch {
		case v.IsGroup():
			b = append(b, " group "...)
			for i, e := range v.Group {
				if i > 0 {
					b = append(b, '/')
				}
				b = strconv.AppendUint(b, uint64(e.ID), 10)
				if e.Weight != 1 {
					b = strconv.AppendUint(append(b, ','), uint64(e.Weight), 10)
				}
			}
			if v.Type == nexthop.ResilientType {
				b = strconv.AppendUint(append(b, " type resilient buckets "...), uint64(v.Buckets), 10)
				b = strconv.AppendUint(append(b, " idle_timer "...), uint64(v.IdleTimer), 10)
				b = strconv.AppendUint(append(b, " unbalanced_timer "...), uint64(v.UnbalancedTimer), 10)
			}
		case v.Flags&nexthop.Blackhole != 0:
			b = append(b, " blackhole"...)
		default:
			b = sv.s.appendPath(sv.s.appendEncap(b, v.Encap), v.Nexthop, true) // via and dev end encap's words
		}
		if v.Proto != 0 {
			b = append(append(b, " proto "...), protoString(fib6.Proto(v.Proto))...)
		}
		b = append(b, '\n')
		if !v.IsGroup() && v.Family == nexthop.FamilyInet6 && !v.Gateway.IsValid() && v.Flags&nexthop.Blackhole == 0 {
			b = append([]byte("-6 "), b...) // a path on a link alone is IPv4 unless told
		}
		sv.b = b
		sv.emit("nexthop", b)
	}
}

// routes writes every table's routes but those the router derives from
// addresses (proto kernel) and, unless all, those a feed owns, that need
// only their link; it returns those through an object or a gateway their
// own table or main reaches (early), to write after the objects, and those
// whose gateways need the rules (late). Of the routes of one destination,
// source and metric, the first written is added and the others appended.
func (sv *saver) routes() (early, late chunks) {
	tables := sv.s.r.Tables.All()
	slices.SortFunc(tables, func(a, b *fib6.Table) int { return int(a.ID()) - int(b.ID()) })
	var group []fib6.Route
	flush := func(table uint32) {
		added := false
		for _, direct := range []bool{true, false} {
			for i := range group {
				r := &group[i]
				if needsNothing(r) != direct {
					continue
				}
				verb := "route add "
				if added {
					verb = "route append "
				}
				added = true
				sv.b = append(sv.s.appendRouteSpec(append(sv.b[:0], verb...), table, *r), '\n')
				switch {
				case direct:
					sv.emit("route", sv.b)
				case sv.reachedAlone(table, r):
					early.add(sv.b)
				default:
					late.add(sv.b)
				}
			}
		}
		group = group[:0]
	}
	for _, t := range tables {
		t.Dump(fib6.Filter{}, func(r fib6.Route) bool {
			if r.Proto == fib6.ProtoKernel || sv.skipsRoute(t.ID(), &r) {
				return true
			}
			if len(group) > 0 && (r.Dst != group[0].Dst || r.Src != group[0].Src || r.Metric != group[0].Metric) {
				flush(t.ID())
			}
			group = append(group, r)
			return true
		})
		flush(t.ID())
	}
	return early, late
}

// reachedAlone reports whether route r of table names no gateway that
// only the rules reach: each is reached by a route of a link alone in
// the route's own table or in main (where a lookup goes without rules).
func (sv *saver) reachedAlone(table uint32, r *fib6.Route) bool {
	var paths []nexthop.Nexthop
	switch {
	case r.Object != nil:
		return true // an object's gateways were checked when it was made
	case r.Group != nil:
		for _, m := range r.Group.Members() {
			paths = append(paths, m.Nexthop)
		}
	default:
		paths = append(paths, r.Nexthop)
	}
	for _, nh := range paths {
		if !nh.Gateway.IsValid() || nh.Gateway.IsLinkLocalUnicast() || nh.Flags&nexthop.OnLink != 0 {
			continue
		}
		reached := false
		for _, t := range []*fib6.Table{sv.s.r.Tables.Get(table), sv.s.r.Tables.Main()} {
			if t == nil {
				continue
			}
			score := decide.Prefer(nh.Link, true, sv.s.r.Rules.Load().Loopback())
			if _, a := sv.s.lookupSeen(t, nh.Gateway, r.PrefSrc, score); a != nil && !a.Type.ViaLoopback() {
				if p := pathOf(a, nh.Link); !p.Gateway.IsValid() && p.Link == nh.Link {
					reached = true
					break
				}
			}
		}
		if !reached {
			return false
		}
	}
	return true
}

// needsNothing reports whether route r needs only its link: no gateway and
// no nexthop object.
func needsNothing(r *fib6.Route) bool {
	return r.Object == nil && r.Group == nil && !r.Nexthop.Gateway.IsValid()
}

// rules writes the rules but Linux's defaults, and deletes a default that
// is gone.
func (sv *saver) rules() {
	set := sv.s.r.Rules.Load()
	dflt := rules.Default()
	if slices.ContainsFunc(sv.s.r.Links.All(), (*dataplane.Link).IsVRF) {
		dflt = append(dflt, router.VRFRule) // the first VRF made adds it
	}
	kept := make([]bool, len(dflt))
	for i := 0; i < set.Len(); i++ {
		r := set.Rule(i)
		if j := slices.IndexFunc(dflt, func(d rules.Rule) bool { return sameRule(&d, r) }); j >= 0 && !kept[j] {
			kept[j] = true
			continue
		}
		sv.b = append(appendRuleSpec(append(sv.b[:0], "rule add "...), r), '\n')
		sv.emit("rule", sv.b)
	}
	for j, d := range dflt {
		if !kept[j] {
			sv.b = append(appendRuleSpec(append(sv.b[:0], "rule del "...), &d), '\n')
			sv.emit("rule", sv.b)
		}
	}
}

// sameRule reports whether two rules say the same, in the words rule save
// writes.
func sameRule(a, b *rules.Rule) bool {
	return string(appendRuleSpec(nil, a)) == string(appendRuleSpec(nil, b))
}

// neighbours writes a link's permanent neighbours.
func (sv *saver) neighbours(l *dataplane.Link) {
	t := l.Neigh()
	if t == nil {
		return
	}
	for _, i := range t.Dump() {
		if i.State&ndisc.Permanent == 0 {
			continue
		}
		w := []string{"neigh", "add", i.Addr.String(), "lladdr", i.MAC.String(), "dev", l.Name}
		if i.Flags&ndisc.Router != 0 {
			w = append(w, "router")
		}
		sv.line("neighbour", append(w, "nud", "permanent")...)
	}
}
