package integration

import (
	"strings"
	"testing"
)

// TestKernelOracle asks the kernel: the same commands go to iproute2's ip
// in a network namespace (Linux routing, a veth named d0 standing for the
// dummy link) and to urouter, and what they print and exit with must be
// the same. Only commands whose answer does not depend on what Linux adds
// by itself (link-local and multicast routes) are compared.
func TestKernelOracle(t *testing.T) {
	needRoot(t)
	ns := newNetns(t, "uro-oracle")
	// no duplicate address detection: the address is usable at once
	mustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
	mustRun(t, "ip", "-n", ns, "link", "add", "d0", "type", "veth", "peer", "name", "d0peer")
	mustRun(t, "ip", "-n", ns, "link", "set", "d0", "up")
	mustRun(t, "ip", "-n", ns, "link", "set", "d0peer", "up")
	mustRun(t, "ip", "-n", ns, "-6", "addr", "add", "2001:db8:91::1/64", "dev", "d0")
	d := startDaemon(t, "", "link add d0 type dummy", "link set d0 up", "address add 2001:db8:91::1/64 dev d0")

	cmds := []string{
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
		"route show 2001:db8:81::/48",
	}
	for _, c := range cmds {
		args := strings.Fields(c)
		kout, kerr, kst := runCmd("ip", append([]string{"-n", ns, "-6"}, args...)...)
		uout, uerr, ust := d.run(append([]string{"-6"}, args...)...)
		if kout != uout || kerr != uerr || kst != ust {
			t.Errorf("%s:\n  ip:      %q %q %d\n  urouter: %q %q %d", c, kout, kerr, kst, uout, uerr, ust)
		}
	}
}
