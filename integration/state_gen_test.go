package integration

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// hostVeth makes the veth a host link takes, vA (its peer vB), in ns:
// always with one MAC, which a host link takes from its interface.
func hostVeth(t *testing.T, ns string) {
	t.Helper()
	mustRun(t, "ip", "-n", ns, "link", "add", "vA", "address", "02:00:00:00:0a:0a", "type", "veth", "peer", "name", "vB")
}

// stateGen writes a random configuration as client commands.
type stateGen struct {
	r       *rand.Rand
	batch   []string   // sent as one -batch
	singles [][]string // then one client each
	after   []string   // then as another -batch
	prefix  int        // the next route prefix
}

func (g *stateGen) add(format string, args ...any) {
	g.batch = append(g.batch, fmt.Sprintf(format, args...))
}
func (g *stateGen) one(args ...string)      { g.singles = append(g.singles, args) }
func (g *stateGen) maybe(n int) bool        { return g.r.Intn(n) == 0 }
func (g *stateGen) pick(s ...string) string { return s[g.r.Intn(len(s))] }

// dst is a new /48 for a route.
func (g *stateGen) dst() string {
	g.prefix++
	return fmt.Sprintf("2001:db8:%x::/48", 0x8000+g.prefix)
}

// metric is a route's or an address's metric words, or none.
func (g *stateGen) metric() string {
	if g.maybe(3) {
		return ""
	}
	return fmt.Sprintf(" metric %d", 1+g.r.Intn(2000))
}

// generate writes the configuration of one seed; delDefault deletes a
// default rule. The draws come in one order, so a seed makes one
// configuration.
func (g *stateGen) generate(delDefault bool) {
	g.knobs()
	d1Up := g.links()
	g.linkKnobs()
	g.addresses(d1Up)
	g.ras()
	g.nexthops()
	// routes of every type in tables main, 100 and 200, and VRF red's
	for _, table := range []string{"", " table 100", " table 200", " vrf red"} {
		if table == "" && g.maybe(2) {
			table = " table main"
		}
		g.routes(table)
	}
	// rules and neighbours go in the later batch: after the routes, as a
	// gateway is checked against them
	g.batch, g.after = g.after, g.batch
	g.rules(delDefault)
	g.neighbours()
	g.batch, g.after = g.after, g.batch
}

// knobs are global sysctls, each maybe set.
func (g *stateGen) knobs() {
	knobs := []string{
		"net.ipv6.fib_multipath_hash_policy=" + g.pick("1", "3"),
		"net.ipv6.fib_multipath_hash_fields=0x" + g.pick("37", "3f"),
		"net.ipv6.icmp.ratelimit=250",
		"net.ipv6.route.skip_notify_on_dev_down=1",
		"net.ipv6.conf.default.hop_limit=50",
		"net.ipv6.neigh.default.unres_qlen=64",
	}
	for _, k := range knobs {
		if g.maybe(2) {
			g.add("sysctl -w %s", k)
		}
	}
}

// links adds a dummy (maybe at an index asked for), another maybe with
// its MAC, a TUN, a TAP, a host link on the veth, VLAN links on them (QinQ
// maybe), and a mirror of one;
// it reports whether d1 was set up.
func (g *stateGen) links() (d1Up bool) {
	if g.maybe(2) {
		g.add("link add d0 index %d type dummy", 10+g.r.Intn(10))
	} else {
		g.add("link add d0 type dummy")
	}
	if g.maybe(2) {
		g.add("link add d9 type dummy") // gone again: the indexes after skip its
		g.add("link del d9")
	}
	d1 := "link add d1"
	if g.maybe(2) {
		d1 += fmt.Sprintf(" address 02:00:00:00:d1:%02x", g.r.Intn(256))
	}
	if g.maybe(2) {
		d1 += " mtu 9000"
	}
	g.add("%s type dummy", d1)
	g.add("link add t0 type tun %s", g.pick("queues 2", "gso off", "queues 2 gso off", "mtu 1400 queues 2"))
	p0 := "link add p0 type tap"
	if g.maybe(2) {
		p0 += fmt.Sprintf(" address 02:00:00:00:50:%02x", g.r.Intn(256))
	}
	if g.maybe(3) {
		p0 += " mtu 1400"
	}
	g.add("%s", p0)
	g.add("link add h0 type host dev vA")
	vid := 1 + g.r.Intn(4094)
	g.add("link add link p0 name p0.v type vlan id %d", vid) // VLAN links: up with their parent
	if g.maybe(2) {
		g.add("link add link p0 name q0 type vlan protocol 802.1ad id %d", 1+g.r.Intn(4094))
		g.add("link add q0.10 link q0 type vlan id 10%s", g.pick("", " reorder_hdr off"))
	}
	if g.maybe(2) {
		g.add("link add link h0 name h0.7 address 02:00:00:00:70:%02x type vlan id 7", g.r.Intn(256))
	}
	// a VRF, a member enslaved
	// before or after it is up, its address after
	g.add("link add red type vrf table 300")
	g.add("link add d2 type dummy")
	if g.maybe(2) {
		g.add("link set d2 up")
		g.add("link set d2 master red")
	} else {
		g.add("link set d2 vrf red up")
	}
	if g.maybe(2) {
		g.add("link set red up")
	}
	// a link whose name begins with another's and a dot: each has its knobs
	g.add("link add d0.5 type dummy")
	g.add("sysctl -w net.ipv6.conf.d0.5.hop_limit=%d", 10+g.r.Intn(50))
	d1Up = g.maybe(2)
	for _, l := range []string{"d0", "t0", "p0", "h0"} {
		g.add("link set %s up", l)
	}
	if g.maybe(3) {
		g.add("link set p0.v down")
	}
	if d1Up {
		g.add("link set d1 up")
	}
	switch g.r.Intn(3) {
	case 0:
		g.add("link set p0 mirror km0")
	case 1:
		g.add("link set h0 mirror km0")
	}
	return d1Up
}

// linkKnobs sets each link's own knobs and the neighbour tables'.
func (g *stateGen) linkKnobs() {
	g.add("sysctl -w net.ipv6.conf.%s.hop_limit=32", g.pick("d0", "t0", "p0", "h0"))
	g.add("sysctl -w net.ipv6.neigh.%s.base_reachable_time_ms=15000", g.pick("p0", "h0"))
	if g.maybe(2) {
		g.add("sysctl -w net.ipv6.neigh.%s.retrans_time_ms=500", g.pick("p0", "h0"))
	}
	if g.maybe(2) {
		g.add("sysctl -w net.ipv6.conf.p0.accept_dad=0")
	}
	if g.maybe(2) {
		g.add("ntable change name ndisc_cache dev %s queue 50 ucast_probes 5", g.pick("p0", "h0"))
	}
	if g.maybe(2) {
		g.add("ntable change name ndisc_cache thresh1 256")
	}
	if g.maybe(2) {
		g.add("link set t0 mtu 1420")
	}
}

// addresses adds addresses, with metrics, d1's (down) maybe.
func (g *stateGen) addresses(d1Up bool) {
	g.add("address add 2001:db8:d0::1/64 dev d0%s", g.metric())
	g.add("address add 2001:db8:70::1/64 dev t0%s", g.metric())
	g.add("address add 2001:db8:50::1/64 dev p0%s", g.metric())
	if g.maybe(2) {
		g.add("address add 2001:db8:51::1/64 dev p0%s", g.metric())
	}
	g.add("address add 2001:db8:40::1/64 dev h0%s", g.metric())
	if d1Up || g.maybe(2) {
		g.add("address add 2001:db8:d1::1/64 dev d1%s", g.metric()) // on a link down too
	}
	g.add("address add 2001:db8:d0::1/64 dev d2%s", g.metric()) // d0's prefix, in red
	if g.maybe(2) {
		g.add("address add 2001:db8:60::1/64 dev d0")
		g.add("address add 2001:db8:61::1/64 dev d0")
		g.add("address del 2001:db8:60::1/64 dev d0")
	}
	if g.maybe(2) {
		g.add("address add 2001:db8:ffff::1/128 dev lo")
	}
}

// ras sets RA on the TAP, maybe on the host link.
func (g *stateGen) ras() {
	g.add("ra set dev p0 max-interval 30 min-interval 10 on")
	g.add("ra prefix add 2001:db8:50::/64 dev p0")
	if g.maybe(2) {
		g.add("ra prefix add 2001:db8:52::/64 dev p0 valid 3600 preferred 1800 no-autonomous")
	}
	if g.maybe(2) {
		g.add("ra set dev h0 preference high mtu 1400 hoplimit 32 managed on rdnss 2001:db8::53 on")
	}
}

// nexthops adds gateways, a dev-only IPv6 one, a blackhole, groups.
func (g *stateGen) nexthops() {
	g.add("nexthop add id 1 via 2001:db8:d0::2 dev d0")
	g.add("nexthop add id 2 via 2001:db8:50::2 dev p0")
	g.add("nexthop add id 3 via 2001:db8:40::2 dev h0")
	g.one("-6", "nexthop", "add", "id", "7", "dev", "t0")
	g.one("route", "add", g.dst(), "nhid", "7", "table", "200")
	if g.maybe(2) {
		g.add("nexthop add id 5 blackhole")
	}
	if g.maybe(2) {
		g.add("nexthop add id 6 via fe80::1 dev p0")
	}
	g.add("-6 nexthop add dev t0") // the router's id
	if g.maybe(2) {
		g.add("nexthop add id 30 via 2001:db8:d0::3 dev d0")
		g.add("nexthop del id 30")
		g.add("nexthop replace id 2 via 2001:db8:50::3 dev p0")
	}
	w := func() string {
		if g.maybe(2) {
			return ""
		}
		return fmt.Sprintf(",%d", 2+g.r.Intn(5))
	}
	g.add("nexthop add id 20 group 1%s/2%s/3%s", w(), w(), w())
	g.add("nexthop add id 21 group 1/2/3 type resilient buckets %s idle_timer %d", g.pick("16", "32", "64"), 30+g.r.Intn(100))
}

// routes adds routes of every type to table (its words, "" for main).
func (g *stateGen) routes(table string) {
	gws := []string{"via 2001:db8:d0::2 dev d0", "via 2001:db8:50::2 dev p0", "via 2001:db8:40::2 dev h0", "dev t0"}
	gw := func() string { return gws[g.r.Intn(len(gws))] }
	g.add("route add %s %s%s%s", g.dst(), gw(), table, g.metric())
	g.add("route add %s dev t0%s", g.dst(), table)
	for _, typ := range []string{"blackhole", "unreachable", "prohibit", "throw"} {
		if !strings.HasSuffix(table, "main") && table != "" && g.maybe(3) {
			continue // main has every type
		}
		g.add("route add %s %s%s%s", typ, g.dst(), table, g.metric())
	}
	g.add("route add %s from 2001:db8:f%x::/64 %s%s", g.dst(), g.r.Intn(16), gw(), table)
	g.add("route add %s%s nexthop via 2001:db8:d0::2 dev d0 weight %d nexthop via 2001:db8:d0::3 dev d0",
		g.dst(), table, 2+g.r.Intn(3))
	sib := g.dst()
	g.add("route add %s via 2001:db8:d0::2 dev d0%s metric 50", sib, table)
	g.one(strings.Fields(fmt.Sprintf("route append %s via 2001:db8:50::2 dev p0%s metric 50", sib, table))...)
	g.add("route add %s nhid %s%s", g.dst(), g.pick("1", "3", "20", "21"), table)
	g.add("route add %s %s%s mtu %d", g.dst(), gw(), table, 1280+g.r.Intn(200))
	g.add("route add %s %s%s expires 300", g.dst(), gw(), table)
	if g.maybe(2) {
		g.add("route add %s via 2001:db8:d0::2 dev d0%s src 2001:db8:d0::1 proto static", g.dst(), table)
	}
	if g.maybe(2) {
		g.add("route add %s via 2001:db8:99::1 dev d0 onlink%s", g.dst(), table)
	}
	if g.maybe(2) {
		gone, changed := g.dst(), g.dst()
		g.add("route add %s dev t0%s", gone, table)
		g.add("route del %s dev t0%s", gone, table)
		g.add("route add %s dev t0%s", changed, table)
		g.add("route replace %s %s%s", changed, gw(), table)
	}
	if table != "" && table != " table main" && g.maybe(2) {
		g.add("route add default via 2001:db8:50::2 dev p0%s", table)
	}
	// a gateway reached by a route of a link alone, not an address's,
	// that sorts after the route through it: saved in the table's
	// order, it did not load
	g.add("route add 2001:db8:1e::/64 dev d0%s", table)
	g.add("route add 2001:db8:1d::/64 via 2001:db8:1e::9 dev d0%s", table)
}

// rules adds rules of many selectors and every action; delDefault
// deletes the default rule of main.
func (g *stateGen) rules(delDefault bool) {
	pref := 100
	rule := func(format string, args ...any) {
		g.add("rule add pref %d %s", pref, fmt.Sprintf(format, args...))
		pref += 10 + g.r.Intn(10)
	}
	rule("from 2001:db8:9%x::/64 to 2001:db8:a::/64 iif d0 table 100", g.r.Intn(16))
	rule("oif p0 ipproto tcp dport 80 sport 1000-2000 table 200")
	rule("tos 0x10 not from 2001:db8::/32 table %s", g.pick("100", "200"))
	rule("table main suppress_prefixlength %d", g.r.Intn(65))
	if g.maybe(2) {
		rule("iif h0 ipproto udp dport 53 lookup 100")
	}
	rule("goto %d", pref+10)
	rule("from 2001:db8:bad::/48 blackhole")
	rule("to 2001:db8:bad::/48 unreachable")
	rule("iif t0 prohibit")
	if g.maybe(2) {
		rule("not to 2001:db8:c::/48 protocol static table 200")
	}
	if g.maybe(3) {
		rule("l3mdev") // a second l3mdev rule
	}
	if delDefault {
		g.add("rule del pref 32766")
		g.add("rule del pref 1000") // the VRF's
	}
}

// neighbours adds permanent neighbours, with the router flag.
func (g *stateGen) neighbours() {
	g.add("neigh add 2001:db8:50::5 lladdr 02:00:00:00:00:55 dev p0 router nud permanent")
	g.add("neigh add 2001:db8:40::5 lladdr 02:00:00:00:00:45 dev h0 nud permanent")
	if g.maybe(2) {
		g.add("neigh add 2001:db8:40::6 lladdr 02:00:00:00:00:46 dev h0 router nud permanent")
	}
}
