package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// vrfLab is a router with two tenants, red (table 10) and blue (table
// 20), each on two Ethernet links with the same two /64s, and a fifth
// link in the default VRF; each link has a kernel host.
type vrfLab struct {
	r     string
	hosts map[string]string // by the router's link: namespace
	d     *daemon
}

// vrfLink is a lab's link: its VRF (none: the default), its subnet (the
// router ::1, the host ::2).
type vrfLink struct{ link, vrf, net string }

// vrfLinks are TestVRFTenants' links.
var vrfLinks = []vrfLink{
	{"e1", "red", "2001:db8:a"}, {"e2", "red", "2001:db8:b"},
	{"e3", "blue", "2001:db8:a"}, {"e4", "blue", "2001:db8:b"},
	{"e5", "", "2001:db8:c"},
}

func newVRFLab(t *testing.T) *vrfLab {
	t.Helper()
	needRoot(t)
	l := &vrfLab{r: newNetns(t, "uro-fr"), hosts: map[string]string{}}
	config := []string{
		"sysctl -w net.ipv6.conf.all.keep_addr_on_down=1",
		"link add red type vrf table 10", "link add blue type vrf table 20",
		"link set red up", "link set blue up",
		// as Linux's VRF documentation advises: a miss ends in the VRF
		"route add unreachable default metric 4278198272 vrf red",
		"route add unreachable default metric 4278198272 vrf blue",
	}
	for _, v := range vrfLinks {
		config = append(config, l.addHost(t, v)...)
	}
	l.d = startDaemon(t, l.r, config...)
	return l
}

// addHost gives link v a kernel host in a namespace of its own, on a
// veth from the router's namespace, and returns the router's lines for
// it: the host link, its VRF, its address.
func (l *vrfLab) addHost(t *testing.T, v vrfLink) []string {
	h := newNetns(t, "uro-fh")
	l.hosts[v.link] = h
	mustRun(t, "ip", "-n", l.r, "link", "add", v.link, "type", "veth", "peer", "name", "eth0", "netns", h)
	mustRun(t, "ip", "netns", "exec", h, "sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0")
	mustRun(t, "ip", "-n", h, "addr", "add", v.net+"::2/64", "dev", "eth0", "nodad")
	mustRun(t, "ip", "-n", h, "link", "set", "eth0", "up")
	mustRun(t, "ip", "-n", h, "-6", "route", "add", "default", "via", v.net+"::1")
	config := []string{"link add " + v.link + " type host dev " + v.link}
	if v.vrf != "" {
		config = append(config, "link set "+v.link+" master "+v.vrf)
	}
	return append(config, "link set "+v.link+" up", "address add "+v.net+"::1/64 dev "+v.link)
}

// echoes is how many echo requests host (by its router link) has taken.
func (l *vrfLab) echoes(t *testing.T, link string) int {
	out := mustRun(t, "ip", "netns", "exec", l.hosts[link], "cat", "/proc/net/snmp6")
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "Icmp6InEchos" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatalf("no Icmp6InEchos in %s's snmp6", link)
	return 0
}

// ping pings dst from the host of link, count times, and reports whether
// every one was answered.
func (l *vrfLab) ping(link, dst string, count int) (string, bool) {
	out, errs, st := runCmd("ip", "netns", "exec", l.hosts[link], "ping", "-6", "-c", strconv.Itoa(count), "-i", "0.05", "-W", "2", dst)
	return out + errs, st == 0
}

// TestVRFTenants: two tenants with the same two /64s on one router. Each
// tenant's hosts ping each other and run TCP (iperf3) through it, and
// only their own tenant's host takes the packets (counted in each host's
// Icmp6InEchos); neither tenant reaches the default VRF's host nor it
// theirs; the router answers each tenant's pings of the address both
// have, and its traceroute6 from the tenant's own address. Under
// traffic, a member released (nomaster) stops its tenant's traffic to it
// and enslaved again resumes it; a VRF deleted under traffic releases its
// members into the default VRF, whose host then reaches them.
func TestVRFTenants(t *testing.T) {
	parallel(t)
	l := newVRFLab(t)
	for _, c := range []struct{ from, to string }{{"e1", "e2"}, {"e3", "e4"}, {"e2", "e1"}, {"e4", "e3"}} {
		dst := vrfNet(c.to) + "::2"
		other := map[string]string{"e1": "e3", "e2": "e4", "e3": "e1", "e4": "e2"}[c.to]
		before, beforeOther := l.echoes(t, c.to), l.echoes(t, other)
		if out, ok := l.ping(c.from, dst, 5); !ok {
			t.Fatalf("%s's host to %s (%s): %s", c.from, dst, c.to, out)
		}
		if got, gotOther := l.echoes(t, c.to)-before, l.echoes(t, other)-beforeOther; got != 5 || gotOther != 0 {
			t.Errorf("%s's host pinged %s 5 times: %s's host took %d, %s's (the other tenant's) %d", c.from, dst, c.to, got, other, gotOther)
		}
	}
	for _, c := range []struct{ from, dst string }{{"e1", "2001:db8:c::2"}, {"e3", "2001:db8:c::2"}, {"e5", "2001:db8:a::2"}, {"e5", "2001:db8:b::2"}} {
		if out, ok := l.ping(c.from, c.dst, 1); ok || !strings.Contains(out, "nreachable") {
			t.Errorf("%s's host reached %s across VRFs (or no unreachable came back):\n%s", c.from, c.dst, out)
		}
	}
	// the router's own answers go back in the VRF they came from: echo
	// replies from the address both tenants have, Time Exceeded from
	// the tenant's own address on the way in
	for _, link := range []string{"e1", "e3", "e2", "e4"} {
		if out, ok := l.ping(link, vrfNet(link)+"::1", 2); !ok {
			t.Errorf("%s's host to the router's %s::1: %s", link, vrfNet(link), out)
		}
	}
	for _, c := range []struct{ from, to string }{{"e1", "e2"}, {"e4", "e3"}} {
		out, _, _ := runCmd("ip", "netns", "exec", l.hosts[c.from], "traceroute6", "-n", "-q", "1", "-w", "2", vrfNet(c.to)+"::2")
		if want := regexp.MustCompile(`(?m)^ 1  ` + vrfNet(c.from) + `::1 .*\n 2  ` + vrfNet(c.to) + `::2 `); !want.MatchString(out) {
			t.Errorf("traceroute6 from %s's host to %s's:\n%s", c.from, c.to, out)
		}
	}
	l.iperf(t, "e1", "e2")
	l.iperf(t, "e3", "e4")
	l.nomasterUnderTraffic(t)
	l.deleteUnderTraffic(t)
}

func vrfNet(link string) string {
	for _, v := range vrfLinks {
		if v.link == link {
			return v.net
		}
	}
	panic(link)
}

// iperf runs TCP from link a's host to link b's for 2 s.
func (l *vrfLab) iperf(t *testing.T, a, b string) {
	srv := startIn(t, l.hosts[b], "iperf3", "-s", "-1")
	defer srv.stop()
	waitUntil(t, "iperf3 to listen", func() bool {
		o, _, _ := runCmd("ip", "netns", "exec", l.hosts[b], "ss", "-Htln", "sport", "= :5201")
		return strings.Contains(o, "5201")
	})
	out, errs, st := runCmd("ip", "netns", "exec", l.hosts[a], "iperf3", "-6", "-c", vrfNet(b)+"::2", "-t", "2", "-J")
	bps, ok := iperfReceived(out)
	if st != 0 || !ok || bps < 50e6 {
		t.Errorf("iperf3 from %s's host to %s's: %.0f bit/s (%d)\n%s%s", a, b, bps, st, out, errs)
	}
	t.Logf("TCP from %s to %s inside a VRF: %.2f Gbit/s", a, b, bps/1e9)
}

// nomasterUnderTraffic: with e1's host pinging e2's every 10 ms, e2
// released from red stops the echoes (its connected route is main's now,
// red's lookup ends unreachable), enslaved again resumes them.
func (l *vrfLab) nomasterUnderTraffic(t *testing.T) {
	flood := startIn(t, l.hosts["e1"], "ping", "-6", "-i", "0.01", "-W", "1", "2001:db8:b::2")
	defer flood.stop()
	waitUntil(t, "the echoes to flow", func() bool { return strings.Contains(flood.out.String(), "icmp_seq=5 ") })
	if _, e, st := l.d.run("link", "set", "e2", "nomaster"); st != 0 {
		t.Fatal(e)
	}
	if _, e, _ := l.d.run("route", "get", "2001:db8:b::2", "vrf", "red"); e != "RTNETLINK answers: No route to host\n" {
		t.Errorf("route get in red with e2 released: %q", e)
	}
	time.Sleep(200 * time.Millisecond) // a flood's worth of echoes with nowhere to go
	before := l.echoes(t, "e2")
	time.Sleep(200 * time.Millisecond)
	if n := l.echoes(t, "e2") - before; n != 0 {
		t.Errorf("e2's host took %d echoes from red while e2 was in no VRF", n)
	}
	if _, e, st := l.d.run("link", "set", "e2", "master", "red"); st != 0 {
		t.Fatal(e)
	}
	waitUntil(t, "the echoes to come back", func() bool { return l.echoes(t, "e2") > before+5 })
	if out, _, _ := l.d.run("address", "show", "dev", "e2", "scope", "global"); !strings.Contains(out, "2001:db8:b::1/64") {
		t.Errorf("e2 lost its address across nomaster and master with keep_addr_on_down 1:\n%s", out)
	}
}

// deleteUnderTraffic: blue deleted while its hosts ping each other; its
// members fall into the default VRF, with their addresses (kept), so the
// default's host reaches blue's former hosts; red is untouched.
func (l *vrfLab) deleteUnderTraffic(t *testing.T) {
	flood := startIn(t, l.hosts["e3"], "ping", "-6", "-i", "0.01", "-W", "1", "2001:db8:b::2")
	defer flood.stop()
	waitUntil(t, "the echoes to flow", func() bool { return strings.Contains(flood.out.String(), "icmp_seq=5 ") })
	if _, e, st := l.d.run("link", "del", "blue"); st != 0 {
		t.Fatal(e)
	}
	out, _, _ := l.d.run("link", "show", "master", "red")
	if !strings.Contains(out, " e1: ") || !strings.Contains(out, " e2: ") || strings.Contains(out, " e3: ") {
		t.Errorf("link show master red after blue's deletion:\n%s", out)
	}
	if out, _, _ := l.d.run("link", "show", "e3"); strings.Contains(out, "master") {
		t.Errorf("e3 still has a master:\n%s", out)
	}
	for _, dst := range []string{"2001:db8:a::2", "2001:db8:b::2"} {
		if out, ok := l.ping("e5", dst, 2); !ok {
			t.Errorf("the default's host to %s, blue's former host: %s", dst, out)
		}
	}
	if out, ok := l.ping("e1", "2001:db8:b::2", 2); !ok {
		t.Errorf("red after blue's deletion: %s", out)
	}
	if out, _, _ := l.d.run("status"); out == "" {
		t.Error("the daemon does not answer after blue's deletion")
	}
}

// TestVRFBIRD: per-tenant routing from a daemon where the kernel has no
// VRF driver: BIRD on the router's host, with a table per VRF and a BGP
// session to each tenant's peer over its member's mirror, exports each
// table to a kernel table that --mirror-table follows into the VRF's
// table (10, 20) and its default table to main. Three peers announce the
// same prefix, 2001:db8:99::/64 (each holding 2001:db8:99::1): red's
// client reaches red's peer, blue's client blue's, and the default
// table's route leads to the default's peer.
func TestVRFBIRD(t *testing.T) {
	parallel(t)
	needRoot(t)
	if _, err := os.Stat("/usr/sbin/bird"); err != nil {
		t.Skipf("needs BIRD (Debian's bird2; .ci/run installs it): %v", err)
	}
	dir := t.TempDir()
	l := &vrfLab{r: newNetns(t, "uro-fb"), hosts: map[string]string{}}
	// the peers' links (e1 red, e3 blue, e5 default) and the clients' (e2 red, e4 blue)
	links := []vrfLink{
		{"e1", "red", "2001:db8:a1"}, {"e2", "red", "2001:db8:b"},
		{"e3", "blue", "2001:db8:a2"}, {"e4", "blue", "2001:db8:b"}, {"e5", "", "2001:db8:a3"},
	}
	config := []string{"link add red type vrf table 10", "link add blue type vrf table 20", "link set red up", "link set blue up"}
	for i, v := range links {
		config = append(config, l.addHost(t, v)...)
		h := l.hosts[v.link]
		if i%2 == 1 {
			continue // a client
		}
		config = append(config, "link set "+v.link+" mirror k"+v.link)
		mustRun(t, "ip", "-n", h, "addr", "add", "2001:db8:99::1/128", "dev", "lo")
		as := 65001 + i/2
		conf := fmt.Sprintf("router id 10.0.0.%d;\nprotocol device { }\n"+
			"protocol static { ipv6; route 2001:db8:99::/64 unreachable; }\n"+
			"protocol bgp up { local %s::2 as %d; neighbor %s::1 as 65000; connect retry time 1; connect delay time 1;\n"+
			"  ipv6 { import none; export all; }; }\n", 2+i, v.net, as, v.net)
		startBIRD(t, h, filepath.Join(dir, v.link), conf)
	}
	l.d = startDaemonFlags(t, l.r, []string{"--mirror-table", "10,20,254"}, config...)
	conf := "router id 10.0.0.1;\nprotocol device { }\nipv6 table t_red;\nipv6 table t_blue;\n" +
		"protocol kernel k_red { kernel table 10; ipv6 { table t_red; export all; import none; }; }\n" +
		"protocol kernel k_blue { kernel table 20; ipv6 { table t_blue; export all; import none; }; }\n" +
		"protocol kernel k_main { ipv6 { export all; import none; }; }\n"
	for i, v := range []struct{ name, table, net string }{{"red", "t_red", "2001:db8:a1"}, {"blue", "t_blue", "2001:db8:a2"}, {"dflt", "master6", "2001:db8:a3"}} {
		conf += fmt.Sprintf("protocol bgp %s { local %s::1 as 65000; neighbor %s::2 as %d; connect retry time 1; connect delay time 1;\n"+
			"  ipv6 { table %s; import all; export none; }; }\n", v.name, v.net, v.net, 65001+i, v.table)
	}
	startBIRD(t, l.r, filepath.Join(dir, "r"), conf)
	for _, c := range []struct {
		sel  []string
		want string
	}{
		{[]string{"vrf", "red"}, "2001:db8:99::/64 via 2001:db8:a1::2 dev e1 proto bird metric 32 pref medium\n"},
		{[]string{"vrf", "blue"}, "2001:db8:99::/64 via 2001:db8:a2::2 dev e3 proto bird metric 32 pref medium\n"},
		{nil, "2001:db8:99::/64 via 2001:db8:a3::2 dev e5 proto bird metric 32 pref medium\n"},
	} {
		var out string
		waitFor(t, 60*time.Second, "BIRD's route in "+strings.Join(c.sel, " "), func() bool {
			out, _, _ = l.d.run(append([]string{"route", "show", "2001:db8:99::/64"}, c.sel...)...)
			return out == c.want
		})
	}
	for _, c := range []struct{ client, peer, other string }{{"e2", "e1", "e3"}, {"e4", "e3", "e1"}} {
		before, beforeOther := l.echoes(t, c.peer), l.echoes(t, c.other)
		if out, ok := l.ping(c.client, "2001:db8:99::1", 5); !ok {
			t.Fatalf("%s's client to 2001:db8:99::1: %s", c.client, out)
		}
		if got, other := l.echoes(t, c.peer)-before, l.echoes(t, c.other)-beforeOther; got != 5 || other != 0 {
			t.Errorf("%s's client pinged 2001:db8:99::1 5 times: its peer %s took %d, the other tenant's %d", c.client, c.peer, got, other)
		}
	}
	if out, _, _ := l.d.run("route", "get", "2001:db8:99::1"); !strings.Contains(out, " via 2001:db8:a3::2 dev e5 ") {
		t.Errorf("route get 2001:db8:99::1 in the default VRF: %s", out)
	}
}

// startBIRD runs BIRD in namespace ns with configuration conf, its files
// under prefix.
func startBIRD(t *testing.T, ns, prefix, conf string) {
	t.Helper()
	if err := os.WriteFile(prefix+".conf", []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startIn(t, ns, "bird", "-f", "-c", prefix+".conf", "-s", prefix+".ctl")
	t.Cleanup(p.stop)
}

// TestKernelOracleVRF asks the kernel about VRFs where it has none: its
// side emulates VRF red (table 10, member d0) as Linux's l3mdev makes it,
// with the member's address routes moved to table 10 and rules sending
// what comes in by d0 or asks to leave by it there (`iif d0` and `oif d0`
// at pref 1000, as the l3mdev rule matches, l3mdev_fib_rule_match);
// urouter has the VRF itself. d1, in the default VRF, has the same
// prefix. Route lookups by iif, oif and none, the fall-through to main,
// the local table's precedence and routes leaking both ways must answer
// alike.
func TestKernelOracleVRF(t *testing.T) {
	parallel(t)
	needRoot(t)
	ns, d := rulesPair(t, "uro-vrfo") // d0 with 2001:db8:91::1/64, d1 with 2001:db8:92::1/64
	mustRun(t, "ip", "-n", ns, "-6", "addr", "add", "2001:db8:91::2/64", "dev", "d1")
	for _, c := range []string{"link add red type vrf table 10", "link set red up", "link set d0 master red",
		"address add 2001:db8:91::1/64 dev d0", "address add 2001:db8:91::2/64 dev d1"} { // d0's went as it joined red
		if _, e, st := d.run(strings.Fields(c)...); st != 0 {
			t.Fatalf("%s: %s", c, e)
		}
	}
	for _, c := range []string{
		"route del 2001:db8:91::/64 dev d0", "route del local 2001:db8:91::1 dev d0 table local",
		"route add 2001:db8:91::/64 dev d0 table 10 proto kernel metric 256",
		"route add local 2001:db8:91::1 dev d0 table 10 proto kernel metric 0",
		"rule add pref 1000 iif d0 lookup 10", "rule add pref 1000 oif d0 lookup 10",
	} {
		mustRun(t, "ip", append([]string{"-n", ns, "-6"}, strings.Fields(c)...)...)
	}
	askBoth(t, ns, d, vrfOracle, func(args []string) []string { return append([]string{"-6"}, args...) })
}

// vrfOracle are the commands TestKernelOracleVRF asks both routers.
// Shows leave out the local route moved to table 10 (the emulation's
// has metric 1024: a route a user adds cannot have the kernel's 0) and
// the ff00::/8 routes the kernel's links have.
var vrfOracle = []string{
	"route show table 10 type unicast", "route show", "route show table local type local",
	"route get 2001:db8:91::5 iif d0", "route get 2001:db8:91::5 iif d1", "route get 2001:db8:91::5",
	"route get 2001:db8:91::5 oif d0", "route get 2001:db8:91::5 oif d1", "route get 2001:db8:91::5 from 2001:db8:91::1 oif d0",
	// a miss in the VRF's table goes on to main
	"route get 2001:db8:92::5 iif d0", "route get 2001:db8:93::5 iif d0",
	// the local table comes first: the default's address is local from red
	"route get 2001:db8:91::2 iif d0", "route get 2001:db8:91::1 iif d1",
	// leaks: red's table out of the default's link, main out of red's member
	"route add 2001:db8:77::/48 via 2001:db8:91::9 dev d0 table 10", "route add 2001:db8:78::/48 via 2001:db8:92::9 dev d1 table 10",
	"route add 2001:db8:79::/48 via 2001:db8:91::9 dev d0", "route add 2001:db8:7a::/48 via 2001:db8:91::9 table 10",
	"route get 2001:db8:77::1 iif d0", "route get 2001:db8:78::1 iif d0", "route get 2001:db8:79::1 iif d1",
	"route get 2001:db8:79::1", "route get 2001:db8:78::1 oif d0", "route get 2001:db8:77::1 iif d1",
	"route add unreachable default metric 4278198272 table 10",
	"route get 2001:db8:93::5 iif d0", "route get 2001:db8:93::5 oif d0", "route get 2001:db8:93::5",
	"route show table 10 type unicast", "route show table 10 type unreachable", "route show",
}
