package integration

import (
	"os"
	"strings"
	"testing"
)

// TestKernelOracle asks the kernel: the same commands go to iproute2's ip
// in a network namespace (Linux routing, a veth named d0 standing for the
// dummy link) and to urouter, and what they print and exit with must be
// the same. Only commands whose answer does not depend on what Linux adds
// by itself (link-local and multicast routes) are compared.
func TestKernelOracle(t *testing.T) {
	parallel(t)
	needRoot(t)
	ns := newNetns(t, "uro-oracle")
	// no duplicate address detection: the address is usable at once
	mustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
	mustRun(t, "ip", "-n", ns, "link", "add", "d0", "type", "veth", "peer", "name", "d0peer")
	mustRun(t, "ip", "-n", ns, "link", "set", "d0", "up")
	mustRun(t, "ip", "-n", ns, "link", "set", "d0peer", "up")
	mustRun(t, "ip", "-n", ns, "-6", "addr", "add", "2001:db8:91::1/64", "dev", "d0")
	d := startDaemon(t, "", "link add d0 type dummy", "link set d0 up", "address add 2001:db8:91::1/64 dev d0")

	askBoth(t, ns, d, routeOracle, func(args []string) []string { return append([]string{"-6"}, args...) })
}

// routeOracle are the commands TestKernelOracle asks both routers, in order.
var routeOracle = []string{
	"route add 2001:db8:5::/48 via 2001:db8:91::2 dev d0",
	"route add unreachable 2001:db8:6::/48",
	"route add 2001:db8:7::/48 dev d0 metric 10 mtu 1400 proto static",
	"route add 2001:db8:8::/48 from 2001:db8:aa::/48 dev d0",
	"route add blackhole 2001:db8:9::/48 table 100",
	"route add prohibit 2001:db8:c::/48 proto 99",
	"route add throw 2001:db8:d::/48",
	"route add 2001:db8:73::/48 via 2001:db8:92::5 dev d0 onlink",
	"route add 2001:db8:74::/48 via fe80::1 dev d0",
	"route append 2001:db8:74::/48 via fe80::2 dev d0",
	"route add 2001:db8:75::/48 dev d0 metric 20",
	"route append 2001:db8:75::/48 via fe80::9 dev d0 metric 20",
	"route add 2001:db8:76::/48 via 2001:db8:91::3 proto bgp",
	"route add 2001:db8:b::1 dev d0",
	"r a 2001:db8:80::/48 dev d0 metri 5",
	"r a 2001:db8:81::/48 dev d0 pro 42",
	"route show 2001:db8:5::/48",
	"route show 2001:db8:6::/48",
	"route show 2001:db8:7::/48",
	"route show 2001:db8:8::/48",
	"route show 2001:db8:b::1",
	"route show 2001:db8:73::/48",
	"route show 2001:db8:74::/48",
	"route show 2001:db8:75::/48",
	"route show 2001:db8:76::/48",
	"route show 2001:db8:80::/48",
	"route show 2001:db8:81::/48",
	"route show table 100",
	"route show proto static",
	"route show type unreachable",
	"route show dev d0 proto bgp",
	"route show root 2001:db8:74::/47",
	"route show match 2001:db8:5:1::/64",
	"-j route show 2001:db8:7::/48",
	"-j route show 2001:db8:74::/48",
	"-j -p route show table 100",
	"-d route show 2001:db8:5::/48",
	"route get 2001:db8:5::1",
	"route get 2001:db8:6::1",
	"route get 2001:db8:c::1",
	"route get 2001:db8:9::1",
	"route get 2001:db8:d::1",
	"route get 2001:db8:8::1 from 2001:db8:aa::5",
	"route get 2001:db8:91::1",
	"route get 2001:db8:91::7",
	"-j route get 2001:db8:5::1",
	// every selector iproute2 has for IPv6
	"route get 2001:db8:5::1 iif d0",
	"route get 2001:db8:5::1 iif d0 from 2001:db8:91::77",
	"route get 2001:db8:5::1 fibmatch",
	"route get 2001:db8:5::1 fibmatch iif d0",
	"route get 2001:db8:5::1 ipproto udp sport 1234 dport 80",
	"route get 2001:db8:5::1 ipproto tcp dport 443 tos 0x10",
	"route get 2001:db8:5::1 dsfield 0x28 ipproto ipv6-icmp",
	"route get 2001:db8:5::1 ipproto icmpv6",
	"route get 2001:db8:5::1 ipproto icmp",
	"route get 2001:db8:5::1 sport 70000",
	"route get 2001:db8:5::1 tos foo",
	"route get 2001:db8:5::1 connected",
	"route get 2001:db8:5::1 connected from 2001:db8:91::1",
	"route get 2001:db8:5::1 fibmatch connected",
	"route get 2001:db8:5::/64",
	"route get 2001:db8:5::1 from 2001:db8:91::/64",
	"route get 2001:db8:5::1 oif d0",
	"route get 2001:db8:5::1 mark 5 uid 0",
	"route get 2001:db8:5::1 mark foo",
	"route get 2001:db8:5::1 vrf foo",
	"route get 2001:db8:5::1 2001:db8:76::1",
	"route get 2001:db8:7::1 iif d0",
	"route get 2001:db8:91::1 fibmatch",
	"route get 2001:db8:8::1 from 2001:db8:aa::5 fibmatch",
	"route get 2001:db8:6::1 fibmatch",
	"route get zzz",
	"-j route get 2001:db8:5::1 fibmatch",
	"-j route get 2001:db8:7::1 iif d0",
	"route add 2001:db8:5::/48 via 2001:db8:91::3 dev d0",
	"route del 2001:db8:55::/48",
	"route add 2001:db8:56::/48 via 2001:db8:92::3 dev d0",
	"route add 2001:db8:56::/48 dev nosuch",
	"route add 2001:db8:56::/129 dev d0",
	"route add 10.0.0.0/8 dev d0",
	"route add 2001:db8:56::/48 dev d0 foo bar",
	"route add 2001:db8:66::/48 dev d0 metric abc",
	"route add 2001:db8:66::/48 via zzz dev d0",
	"route add 2001:db8:66::/48 dev d0 table abc",
	"route add 2001:db8:71::/48",
	"route add 2001:db8:75::/48 dev d0 metric 20",
	"route append 2001:db8:75::/48 dev d0 metric 20",
	"route blah",
	"blah",
	"route del 2001:db8:7::/48 dev d0",
	"route del 2001:db8:5::/48 metric 1024 proto boot",
	"route replace 2001:db8:8::/48 from 2001:db8:aa::/48 via 2001:db8:91::4 dev d0",
	"route show 2001:db8:8::/48",
	"route change 2001:db8:99::/48 dev d0",
	"route flush proto 42",
	// each path of a multipath route keeps its own mtu, proto and src
	// (Linux's ECMP siblings); the route shows its first path's
	"route add 2001:db8:50::/48 mtu 1400 proto static nexthop via 2001:db8:91::2 dev d0 nexthop via 2001:db8:91::5 dev d0",
	"route append 2001:db8:50::/48 via 2001:db8:91::3 dev d0 mtu 1300 proto bgp",
	"route append 2001:db8:50::/48 via 2001:db8:91::4 dev d0 src 2001:db8:91::1",
	"route show 2001:db8:50::/48", "-j route show 2001:db8:50::/48",
	"route del 2001:db8:50::/48 via 2001:db8:91::2 dev d0", "route show 2001:db8:50::/48",
	"route del 2001:db8:50::/48 via 2001:db8:91::5", "route show 2001:db8:50::/48", "-j -d route show 2001:db8:50::/48",
	"route del 2001:db8:50::/48 via 2001:db8:91::3", "route show 2001:db8:50::/48", "route get 2001:db8:50::1",
	"route append 2001:db8:50::/48 via 2001:db8:91::6 dev d0 mtu 1500", "route del 2001:db8:50::/48 via 2001:db8:91::4",
	"route show 2001:db8:50::/48", "route get 2001:db8:50::1",
	"route append 2001:db8:50::/48 via 2001:db8:91::7 dev d0 mtu 1280",
	"route replace 2001:db8:50::/48 via 2001:db8:91::5 dev d0 mtu 1290", "route show 2001:db8:50::/48",
	"route show 2001:db8:81::/48",
}

// askBoth runs each command (its words, as opts makes them) through ip in
// namespace ns and through urouter, and reports every difference in what
// they print or exit with.
func askBoth(t *testing.T, ns string, d *daemon, cmds []string, opts func([]string) []string) {
	t.Helper()
	for _, c := range cmds {
		args := opts(strings.Fields(c))
		kout, kerr, kst := runCmd("ip", append([]string{"-n", ns}, args...)...)
		uout, uerr, ust := d.run(args...)
		if kernelMroute(kerr) {
			continue
		}
		if kout != uout || kerr != uerr || kst != ust {
			t.Errorf("%s:\n  ip:      %q %q %d\n  urouter: %q %q %d", c, kout, kerr, kst, uout, uerr, ust)
		}
	}
}

// kernelMroute: the kernel's answer to a route get is the "Message too
// long" of a kernel built with IPv6 multicast routing, which asks it about
// an input route to a multicast prefix (ip6mr_get_route) and fails when it
// has nothing. urouter routes no multicast and answers as a kernel built
// without it does, with the route; such an answer is not compared.
func kernelMroute(answer string) bool {
	if strings.TrimSpace(answer) != "RTNETLINK answers: Message too long" {
		return false
	}
	_, err := os.Stat("/proc/net/ip6_mr_vif")
	return err == nil
}

// TestKernelOracleNexthop asks the kernel about nexthop objects, groups
// and multipath routes: the same commands go to ip in a network namespace
// and to urouter, and must print and exit alike. What depends on the
// flow hash (which member a flow takes) is left out: each router seeds
// its own. The commands go without -6, as the groups need (a group is
// AF_UNSPEC), so a nexthop without an IPv6 gateway is IPv4.
func TestKernelOracleNexthop(t *testing.T) {
	parallel(t)
	needRoot(t)
	ns := newNetns(t, "uro-nhoracle")
	mustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
	for i, n := range []string{"d0", "d1"} {
		mustRun(t, "ip", "-n", ns, "link", "add", n, "type", "veth", "peer", "name", n+"peer")
		mustRun(t, "ip", "-n", ns, "link", "set", n, "up")
		mustRun(t, "ip", "-n", ns, "link", "set", n+"peer", "up")
		mustRun(t, "ip", "-n", ns, "-6", "addr", "add", "2001:db8:9"+string(rune('1'+i))+"::1/64", "dev", n)
	}
	d := startDaemon(t, "", "link add d0 type dummy", "link set d0 up", "address add 2001:db8:91::1/64 dev d0",
		"link add d1 type dummy", "link set d1 up", "address add 2001:db8:92::1/64 dev d1")

	askBoth(t, ns, d, nexthopOracle, func(args []string) []string {
		if args[0] == "route" || args[0] == "-j" && args[1] == "route" {
			return append([]string{"-6"}, args...) // ip's routes are IPv4 without it
		}
		return args
	})
}

// nexthopOracle are the commands TestKernelOracleNexthop asks both routers, in order.
var nexthopOracle = []string{
	"nexthop add id 1 via 2001:db8:91::2 dev d0",
	"nexthop add id 2 via 2001:db8:92::2 dev d1 proto static",
	"nexthop add id 3 dev d0",
	"nexthop add id 4 blackhole",
	"-6 nexthop add id 8 dev d0",
	"-6 nexthop add id 9 blackhole",
	"-6 nexthop add id 16 group 8/9",
	"nexthop add id 5 via 2001:db8:99::1 dev d0 onlink",
	"nexthop add via 2001:db8:91::3 dev d0",
	"nexthop add id 4294967295 via 2001:db8:91::4 dev d0",
	"nexthop add id 0 via 2001:db8:91::5 dev d0",
	"nexthop add id 4294967296 via 2001:db8:91::4 dev d0",
	"nexthop add id 10 group 1/2",
	"nexthop add id 11 group 1,2/2,3 type mpath",
	"nexthop add id 12 group 1/2 type resilient buckets 8 idle_timer 10 unbalanced_timer 20",
	"nexthop add id 13 group 1/2 type resilient",
	"nexthop add id 14 group 2,256/3",
	"nexthop add id 15 group 4",
	"nexthop",
	"nexthop show",
	"nexthop list",
	"-j nexthop show",
	"-j -p nexthop show",
	"-d nexthop show",
	"nexthop show id 12",
	"nexthop get id 12",
	"-j nexthop get id 10",
	"nexthop show dev d0",
	"nexthop show groups",
	"nexthop show id 99",
	"nexthop get id 99",
	"nexthop bucket show id 10",
	"nexthop bucket get id 12 index 8",
	// errors
	"nexthop add id 1 via 2001:db8:91::2 dev d0",
	"nexthop add id 20 group 1/99",
	"nexthop add id 20 group 1/1",
	"nexthop add id 20 group 10/1",
	"nexthop add id 20 group 4/1",
	"nexthop add id 20 group 1,0/2",
	"nexthop add id 20 group 1,257/2",
	"nexthop add id 20 group 1/2 type resilient buckets 0",
	"nexthop add id 20 group 1/2 type resilient buckets 65536",
	"nexthop add id 20 group 1/2 type foo",
	"nexthop add id 20 group",
	"nexthop add id 21 via 2001:db8:99::1 dev d0",
	"nexthop add id 21 via 2001:db8:91::5",
	"nexthop add id 21 via 2001:db8:91::5 dev nosuch",
	"nexthop add id 21 via 2001:db8:91::1 dev d0",
	"nexthop add id 21 via ff02::1 dev d0",
	"nexthop add id 21 blackhole dev d0",
	"nexthop add id abc via 2001:db8:91::5 dev d0",
	"nexthop del id 99",
	"nexthop del",
	"nexthop replace id 10 via 2001:db8:91::9 dev d0",
	"nexthop replace id 1 group 2",
	"nexthop replace id 10 group 1/2 type resilient",
	"nexthop replace id 12 group 1/2",
	"nexthop replace id 12 group 1,3/2 type resilient buckets 16",
	"nexthop replace id 12 group 1,3/2 type resilient idle_timer 30",
	"nexthop replace id 1 blackhole",
	"nexthop replace via 2001:db8:91::3 dev d0",
	"nexthop replace id 98 via 2001:db8:91::9 dev d0",
	"nexthop show id 12",
	"nexthop show id 98",
	// routes
	"route add 2001:db8:100::/48 nhid 10",
	"route add 2001:db8:101::/48 nhid 1",
	"route add 2001:db8:102::/48 nhid 12",
	"route add 2001:db8:103::/48 nhid 99",
	"route add 2001:db8:104::/48 from 2001:db8:5::/64 nhid 1",
	"route add 2001:db8:105::/48 nhid 1 via 2001:db8:91::2",
	"route add 2001:db8:106::/48 nhid 4",
	"route add 2001:db8:108::/48 nhid 9",
	"route add 2001:db8:109::/48 nhid 8",
	"route show 2001:db8:108::/48",
	"route show 2001:db8:109::/48",
	"route add 2001:db8:107::/48 nhid 11",
	"route add 2001:db8:200::/48 nexthop via 2001:db8:91::2 dev d0 weight 1 nexthop via 2001:db8:92::2 dev d1 weight 2",
	"route add 2001:db8:201::/48 via 2001:db8:91::2 dev d0",
	"route append 2001:db8:201::/48 via 2001:db8:92::2 dev d1",
	"route prepend 2001:db8:201::/48 via 2001:db8:91::7 dev d0",
	"route append 2001:db8:201::/48 via 2001:db8:91::2 dev d0",
	"route append 2001:db8:101::/48 via 2001:db8:92::2 dev d1",
	"route add 2001:db8:202::/48 nexthop via 2001:db8:91::2 dev d0 weight 0",
	"route add 2001:db8:202::/48 nexthop via 2001:db8:91::2 dev d0 nexthop",
	"route show 2001:db8:100::/48",
	"route show 2001:db8:101::/48",
	"route show 2001:db8:102::/48",
	"route show 2001:db8:106::/48",
	"route show 2001:db8:107::/48",
	"route show 2001:db8:200::/48",
	"route show 2001:db8:201::/48",
	"-j route show 2001:db8:100::/48",
	"-j route show 2001:db8:200::/48",
	"route get fibmatch 2001:db8:100::1",
	"-j route get fibmatch 2001:db8:100::1",
	"route get 2001:db8:101::1",
	// replace and delete: the routes follow
	"nexthop replace id 1 via 2001:db8:91::7 dev d0",
	"route show 2001:db8:100::/48",
	"route get 2001:db8:101::1",
	"nexthop del id 2",
	"nexthop show",
	"route show 2001:db8:100::/48",
	"nexthop del id 1",
	"nexthop show",
	"route show 2001:db8:100::/48",
	"route show 2001:db8:101::/48",
	"route del 2001:db8:201::/48 via 2001:db8:92::2 dev d1",
	"route show 2001:db8:201::/48",
	"route del 2001:db8:200::/48",
	"route show 2001:db8:200::/48",
	// a link going down: its nexthops go, multipath paths turn dead
	"nexthop add id 31 via 2001:db8:92::2 dev d1",
	"nexthop add id 32 via 2001:db8:91::2 dev d0",
	"nexthop add id 33 group 31/32",
	"route add 2001:db8:300::/48 nhid 33",
	"route add 2001:db8:301::/48 nhid 31",
	"route add 2001:db8:302::/48 nexthop via 2001:db8:91::2 dev d0 nexthop via 2001:db8:92::2 dev d1",
	"link set d1 down",
	"nexthop show",
	"route show 2001:db8:300::/48",
	"route show 2001:db8:301::/48",
	"route show 2001:db8:302::/48",
	"-j route show 2001:db8:302::/48",
	"link set d1 up",
	"route show 2001:db8:302::/48",
	"nexthop flush dev d0",
	"nexthop flush",
	"nexthop show",
}
