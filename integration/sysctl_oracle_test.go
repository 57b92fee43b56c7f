package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKernelOracleSysctl asks the kernel about its IPv6 knobs: the same
// sysctl reads and writes (the refusals too) go to sysctl(8) in a netns
// and to `urouter sysctl`, and what the knobs do to addresses, between
// link and address commands that go to ip and to urouter alike: every
// answer, output, message and exit status, must be the same.
func TestKernelOracleSysctl(t *testing.T) {
	parallel(t)
	needRoot(t)
	ns := newNetns(t, "uro-sysctl")
	conf := []string{}
	for _, l := range []string{"d0", "d1"} {
		mustRun(t, "ip", "-n", ns, "link", "add", l, "type", "veth", "peer", "name", l+"peer")
		mustRun(t, "ip", "-n", ns, "link", "set", l+"peer", "up")
		mustRun(t, "ip", "-n", ns, "link", "set", l, "up")
		conf = append(conf, "link add "+l+" type dummy", "link set "+l+" up")
	}
	d := startDaemon(t, "", conf...)
	// the kernel made a router, as urouter is from the start
	mustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1",
		"net.ipv6.conf.all.accept_ra=0", "net.ipv6.conf.default.accept_ra=0",
		"net.ipv6.conf.d0.accept_ra=0", "net.ipv6.conf.d1.accept_ra=0")
	oracleSteps(t, ns, d, sysctlOracle)
	oracleSteps(t, ns, d, addrKnobOracle)
}

// sysctlReads are reads of every knob of one kind of directory.
func sysctlReads(prefix string, knobs ...string) string {
	var b strings.Builder
	b.WriteString("sysctl")
	for _, k := range knobs {
		b.WriteString(" " + prefix + k)
	}
	return b.String()
}

var (
	confKnobNames = []string{"accept_dad", "accept_ra", "dad_transmits", "disable_ipv6", "forwarding",
		"hop_limit", "ignore_routes_with_linkdown", "keep_addr_on_down", "mtu"}
	neighKnobNames = []string{"base_reachable_time", "base_reachable_time_ms", "delay_first_probe_time",
		"gc_stale_time", "mcast_resolicit", "mcast_solicit", "retrans_time_ms", "ucast_solicit",
		"unres_qlen", "unres_qlen_bytes"}
	globalKnobNames = []string{"net.ipv6.fib_multipath_hash_policy", "net.ipv6.fib_multipath_hash_fields",
		"net.ipv6.icmp.ratelimit", "net.ipv6.icmp.ratemask", "net.ipv4.icmp_msgs_per_sec", "net.ipv4.icmp_msgs_burst",
		"net.ipv6.route.skip_notify_on_dev_down"}
)

// sysctlOracle are the steps of the knobs alone, in order: each a sysctl
// command, or an ip command after "ip".
var sysctlOracle = []string{
	sysctlReads("net.ipv6.conf.all.", confKnobNames...),
	sysctlReads("net.ipv6.conf.default.", confKnobNames...),
	sysctlReads("net.ipv6.conf.d0.", confKnobNames...),
	sysctlReads("net.ipv6.neigh.d1.", neighKnobNames...),
	sysctlReads("", globalKnobNames...),
	"sysctl -n net.ipv6.conf.d0.hop_limit net.ipv6.conf.d0.mtu", "sysctl -N net.ipv6.conf.d0.mtu",
	"sysctl net/ipv6/conf/d0/hop_limit",
	// values as proc_dointvec reads them, and the refused
	"sysctl -w net.ipv6.conf.d0.hop_limit=30", "sysctl net.ipv6.conf.d0.hop_limit=0",
	"sysctl -w net.ipv6.conf.d0.hop_limit=256", "sysctl net.ipv6.conf.d0.hop_limit=0x20",
	"sysctl net.ipv6.conf.d0.hop_limit", "sysctl net.ipv6.conf.d0.hop_limit=010", "sysctl net.ipv6.conf.d0.hop_limit",
	"sysctl net.ipv6.conf.d0.hop_limit=abc", "sysctl net.ipv6.conf.d0.hop_limit=+3", "sysctl net.ipv6.conf.d0.hop_limit=",
	"sysctl -w net.ipv6.conf.d0.hop_limit=300 net.ipv6.conf.d0.hop_limit=31", "sysctl net.ipv6.conf.d0.hop_limit",
	"sysctl -q -w net.ipv6.conf.d0.mtu=1400", "sysctl net.ipv6.conf.d0.mtu", "sysctl net.ipv6.conf.d0.mtu=1600",
	"sysctl net.ipv6.conf.d0.mtu=1279", "sysctl net.ipv6.conf.all.mtu=1400", "sysctl net.ipv6.conf.all.mtu=1000",
	"sysctl net.ipv6.conf.default.mtu=9000", "sysctl net.ipv6.conf.d0.mtu net.ipv6.conf.all.mtu net.ipv6.conf.default.mtu",
	"ip link set d0 mtu 1450", "sysctl net.ipv6.conf.d0.mtu",
	"sysctl net.ipv6.conf.d0.forwarding=-3", "sysctl net.ipv6.conf.d0.forwarding=2147483647",
	"sysctl net.ipv6.conf.d0.forwarding=2147483648", "sysctl net.ipv6.conf.d0.forwarding=99999999999",
	// all and default
	"sysctl net.ipv6.conf.all.forwarding=0", "sysctl net.ipv6.conf.d0.forwarding net.ipv6.conf.d1.forwarding net.ipv6.conf.default.forwarding",
	"sysctl net.ipv6.conf.d0.forwarding=1", "sysctl net.ipv6.conf.default.forwarding=7",
	"sysctl net.ipv6.conf.d0.forwarding net.ipv6.conf.d1.forwarding net.ipv6.conf.all.forwarding",
	"sysctl net.ipv6.conf.all.forwarding=1", "sysctl net.ipv6.conf.default.forwarding net.ipv6.conf.d1.forwarding",
	"sysctl net.ipv6.conf.all.ignore_routes_with_linkdown=1", "sysctl net.ipv6.conf.d0.ignore_routes_with_linkdown net.ipv6.conf.default.ignore_routes_with_linkdown",
	"sysctl net.ipv6.conf.all.keep_addr_on_down=-1", "sysctl net.ipv6.conf.d0.keep_addr_on_down net.ipv6.conf.default.keep_addr_on_down",
	"sysctl net.ipv6.conf.all.hop_limit=12", "sysctl net.ipv6.conf.d1.hop_limit net.ipv6.conf.default.hop_limit",
	"sysctl net.ipv6.conf.all.accept_dad=0", "sysctl net.ipv6.conf.d1.accept_dad net.ipv6.conf.default.accept_dad",
	"sysctl net.ipv6.conf.all.dad_transmits=3", "sysctl net.ipv6.conf.d1.dad_transmits",
	"sysctl net.ipv6.conf.all.disable_ipv6=1", "sysctl net.ipv6.conf.d0.disable_ipv6 net.ipv6.conf.default.disable_ipv6",
	"sysctl net.ipv6.conf.all.disable_ipv6=0", "sysctl net.ipv6.conf.d0.disable_ipv6 net.ipv6.conf.default.disable_ipv6",
	"sysctl net.ipv6.conf.all.keep_addr_on_down=0 net.ipv6.conf.all.ignore_routes_with_linkdown=0",
	"sysctl net.ipv6.conf.default.hop_limit=33 net.ipv6.conf.default.keep_addr_on_down=1", "sysctl net.ipv6.conf.d0.hop_limit",
	// neigh (a netns has no net.ipv6.neigh.default: TestSysctlNeighDefault)
	"sysctl net.ipv6.neigh.d1.ucast_solicit=7", "sysctl net.ipv6.neigh.d0.ucast_solicit net.ipv6.neigh.d1.ucast_solicit",
	"sysctl net.ipv6.neigh.d0.unres_qlen=5", "sysctl net.ipv6.neigh.d0.unres_qlen_bytes",
	"sysctl net.ipv6.neigh.d0.unres_qlen_bytes=5000", "sysctl net.ipv6.neigh.d0.unres_qlen",
	"sysctl net.ipv6.neigh.d0.unres_qlen=-1", "sysctl net.ipv6.neigh.d0.unres_qlen=2147483647",
	"sysctl net.ipv6.neigh.d0.retrans_time_ms=2000", "sysctl net.ipv6.neigh.d0.retrans_time_ms=-1",
	"sysctl net.ipv6.neigh.d0.base_reachable_time=20", "sysctl net.ipv6.neigh.d0.base_reachable_time_ms",
	"sysctl net.ipv6.neigh.d0.base_reachable_time_ms=40000", "sysctl net.ipv6.neigh.d0.base_reachable_time",
	"sysctl net.ipv6.neigh.d0.delay_first_probe_time=3 net.ipv6.neigh.d0.gc_stale_time=120",
	"sysctl net.ipv6.neigh.d0.mcast_solicit=4 net.ipv6.neigh.d0.mcast_resolicit=2 net.ipv6.neigh.d0.ucast_solicit=-1",
	sysctlReads("net.ipv6.neigh.d0.", neighKnobNames...),
	"sysctl net.ipv6.neigh.all.ucast_solicit", "sysctl net.ipv6.neigh.d0.gc_thresh1",
	// the router's own
	"sysctl net.ipv6.fib_multipath_hash_policy=1", "sysctl net.ipv6.fib_multipath_hash_policy=3",
	"sysctl net.ipv6.fib_multipath_hash_policy=4", "sysctl net.ipv6.fib_multipath_hash_policy=-1",
	"sysctl net.ipv6.fib_multipath_hash_fields=0x37", "sysctl net.ipv6.fib_multipath_hash_fields=0",
	"sysctl net.ipv6.fib_multipath_hash_fields=4096", "sysctl net.ipv6.fib_multipath_hash_fields=4095",
	"sysctl net.ipv6.icmp.ratelimit=200", "sysctl net.ipv6.icmp.ratelimit=-4",
	"sysctl net.ipv6.icmp.ratemask=3,1,128", "sysctl net.ipv6.icmp.ratemask=256", "sysctl net.ipv6.icmp.ratemask=0-1,3-127",
	"sysctl net.ipv4.icmp_msgs_per_sec=500 net.ipv4.icmp_msgs_burst=20",
	"sysctl net.ipv6.route.skip_notify_on_dev_down=2", "sysctl net.ipv6.route.skip_notify_on_dev_down=1",
	"sysctl net.ipv6.conf.lo.hop_limit net.ipv6.conf.lo.mtu",
	sysctlReads("", globalKnobNames...),
	// what does not exist
	"sysctl net.ipv6.conf.nosuch.hop_limit", "sysctl net.ipv6.conf.nosuch.hop_limit=1", "sysctl net.ipv6.conf.d0.nosuch=1",
	"sysctl -e net.ipv6.conf.d0.nosuch", "sysctl nosuch", "sysctl -w net.ipv6.conf.d0.hop_limit",
	"sysctl net.ipv6.conf.d0.hop_limit nosuch.x net.ipv6.conf.d1.hop_limit", "sysctl -w",
	// a new link takes default's
	"ip link add d2 type veth", "sysctl net.ipv6.conf.d2.hop_limit net.ipv6.conf.d2.forwarding net.ipv6.conf.d2.keep_addr_on_down",
	"sysctl net.ipv6.neigh.d2.ucast_solicit net.ipv6.neigh.d2.unres_qlen",
	"sysctl net.ipv6.conf.default.hop_limit=64 net.ipv6.conf.default.forwarding=1 net.ipv6.conf.default.keep_addr_on_down=0",
}

// addrKnobOracle are the steps of what the knobs do to addresses, and of
// address metrics.
var addrKnobOracle = []string{
	"sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.d0.accept_dad=0 net.ipv6.conf.d1.accept_dad=0",
	"ip -6 addr add 2001:db8:1::1/64 dev d0 metric 77", "ip -6 addr add 2001:db8:2::1/64 dev d0",
	"ip -6 addr show dev d0", "ip -6 route show 2001:db8:1::/64", "ip -6 route show 2001:db8:2::/64",
	// the selftests' preamble: addresses kept going down
	"sysctl -qw net.ipv6.conf.all.keep_addr_on_down=1",
	"ip link set d0 down", "ip -6 addr show dev d0", "ip -6 route show 2001:db8:1::/64", "ip -6 route show table local 2001:db8:1::1",
	"ip link set d0 up", "sleep", "ip -6 addr show dev d0", "ip -6 route show 2001:db8:1::/64", "ip -6 route show 2001:db8:2::/64",
	"ip -6 route show table local 2001:db8:1::1", "ip -6 route get 2001:db8:1::1",
	// all's 0 leaves it to the link's
	"sysctl -qw net.ipv6.conf.all.keep_addr_on_down=0 net.ipv6.conf.d0.keep_addr_on_down=1",
	"ip link set d0 down", "ip -6 addr show dev d0", "ip link set d0 up", "sleep", "ip -6 addr show dev d0",
	// all's -1 wins over the link's 1
	"sysctl -qw net.ipv6.conf.all.keep_addr_on_down=-1", "ip link set d0 down", "ip -6 addr show dev d0",
	"ip link set d0 up", "sleep", "ip -6 addr show dev d0", "ip -6 route show 2001:db8:1::/64",
	"sysctl -qw net.ipv6.conf.all.keep_addr_on_down=0 net.ipv6.conf.d0.keep_addr_on_down=0",
	// address metrics: add, change, replace
	"ip -6 addr add 2001:db8:3::1/64 dev d0 metric 5", "ip -6 route show 2001:db8:3::/64",
	"ip -6 addr change 2001:db8:3::1/64 dev d0 metric 6", "ip -6 route show 2001:db8:3::/64",
	"ip -6 addr replace 2001:db8:3::1/64 dev d0", "ip -6 route show 2001:db8:3::/64",
	"ip -6 addr change 2001:db8:3::1/64 dev d0 metric 0", "ip -6 route show 2001:db8:3::/64",
	"ip -6 addr change 2001:db8:4::1/64 dev d0 metric 9", "ip -6 route show 2001:db8:4::/64",
	"ip -6 addr replace 2001:db8:4::1/64 dev d0 metric 10", "ip -6 route show 2001:db8:4::/64",
	"ip -6 addr add 2001:db8:5::1/64 dev d0 metric abc", "ip -6 addr add 2001:db8:3::1/64 dev d0 metric 7",
	"ip -6 addr add 2001:db8:5::1/64 dev d0 metric 4294967295", "ip -6 route show 2001:db8:5::/64",
	"ip -6 addr add 2001:db8:3::2/64 dev d0 metric 6", "ip -6 addr del 2001:db8:3::1/64 dev d0",
	"ip -6 route show 2001:db8:3::/64", "ip -6 addr add 2001:db8:6::1 dev d0 metric 5", "ip -6 route show 2001:db8:6::1",
	"ip -6 addr show dev d0", "ip -6 -j addr show dev d0",
	"ip link set d0 down", "ip link set d0 up", "sleep", "ip -6 addr show dev d0", "ip -6 route show 2001:db8:3::/64",
	// disable_ipv6: no addresses, none taken
	"ip -6 addr add 2001:db8:7::1/64 dev d1", "ip -6 route show 2001:db8:7::/64",
	"sysctl -qw net.ipv6.conf.d1.disable_ipv6=1", "ip -6 addr show dev d1", "ip -6 route show 2001:db8:7::/64",
	"ip -6 addr add 2001:db8:7::1/64 dev d1",
	"sysctl -qw net.ipv6.conf.d1.disable_ipv6=0", "ip -6 addr add 2001:db8:7::1/64 dev d1", "sleep",
	"ip -6 addr show dev d1", "ip -6 route show 2001:db8:7::/64",
}

// oracleSteps runs each step through the kernel's tools in ns and through
// urouter, and reports where their answers differ. Of `addr show` only
// the addresses are compared (the links are a veth and a dummy), and of
// those not the link-local ones a veth has and a dummy has not.
func oracleSteps(t *testing.T, ns string, d *daemon, steps []string) {
	t.Helper()
	for _, step := range steps {
		w := strings.Fields(step)
		var kout, kerr, uout, uerr string
		var kst, ust int
		switch w[0] {
		case "sleep": // the kernel's DAD, even of none, runs from a work queue
			time.Sleep(300 * time.Millisecond)
			continue
		case "sysctl":
			kout, kerr, kst = runCmd("ip", append([]string{"netns", "exec", ns}, w...)...)
			uout, uerr, ust = d.run(w...)
		case "ip":
			if len(w) > 2 && w[1] == "link" && w[2] == "add" { // a veth in the kernel, a dummy in urouter
				mustRun(t, "ip", "-n", ns, "link", "add", w[3], "type", "veth", "peer", "name", w[3]+"peer")
				if _, e, st := d.run("link", "add", w[3], "type", "dummy"); st != 0 {
					t.Fatalf("%s: %s", step, e)
				}
				continue
			}
			kout, kerr, kst = runCmd("ip", append([]string{"-n", ns}, w[1:]...)...)
			uout, uerr, ust = d.run(w[1:]...)
			if strings.Contains(step, "addr show") {
				kout, uout = addrLines(t, kout), addrLines(t, uout)
			}
		}
		if kout != uout || kerr != uerr || kst != ust {
			t.Errorf("%s:\n  kernel:  %q %q %d\n  urouter: %q %q %d", step, kout, kerr, kst, uout, uerr, ust)
		}
	}
}

// addrLines are the global addresses `ip address show` printed: their
// lines, or in JSON their addr_info.
func addrLines(t *testing.T, out string) string {
	if strings.HasPrefix(out, "[") {
		var links []struct {
			AddrInfo []map[string]any `json:"addr_info"`
		}
		if err := json.Unmarshal([]byte(out), &links); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var kept []string
		for _, l := range links {
			for _, a := range l.AddrInfo {
				if a["scope"] != "link" {
					b, _ := json.Marshal(a)
					kept = append(kept, string(b))
				}
			}
		}
		return strings.Join(kept, "\n")
	}
	var kept []string
	lines := strings.Split(out, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "    inet6 ") && !strings.Contains(lines[i], "scope link") {
			kept = append(kept, lines[i])
			if i+1 < len(lines) {
				kept = append(kept, lines[i+1])
			}
		}
	}
	return fmt.Sprint(kept)
}

// TestSysctlPreamble: the IPv6 lines of the kernel selftests' namespace
// set-up (fcnal-test.sh's create_ns, as fib_nexthops.sh and others start)
// run unchanged from a config file: a link set down and up keeps its
// address with keep_addr_on_down=1, and loses it with 0, as Linux.
func TestSysctlPreamble(t *testing.T) {
	parallel(t)
	needRoot(t)
	d := startDaemon(t, "",
		"sysctl -qw net.ipv6.conf.all.keep_addr_on_down=1",
		"sysctl -qw net.ipv6.conf.all.forwarding=1",
		"sysctl -qw net.ipv6.conf.default.forwarding=1",
		"sysctl -qw net.ipv6.conf.default.accept_dad=0",
		"sysctl -qw net.ipv6.conf.all.accept_dad=0",
		"sysctl -qw net.ipv6.conf.default.ignore_routes_with_linkdown=1", // test_bridge_neigh_suppress.sh
		"link add d0 type dummy", "link set d0 up", "address add 2001:db8:1::1/64 dev d0")
	has := func() bool {
		out, _, _ := d.run("-6", "address", "show", "dev", "d0")
		return strings.Contains(out, "2001:db8:1::1/64")
	}
	for _, c := range [][]string{{"link", "set", "d0", "down"}, {"link", "set", "d0", "up"}} {
		if _, e, st := d.run(c...); st != 0 {
			t.Fatalf("%v: %s", c, e)
		}
	}
	if !has() {
		t.Fatal("the address went with keep_addr_on_down=1")
	}
	if out, _, _ := d.run("-6", "route", "show", "2001:db8:1::/64"); !strings.Contains(out, "proto kernel") {
		t.Errorf("the kept address's prefix route did not come back: %q", out)
	}
	if out, _, _ := d.run("sysctl", "net.ipv6.conf.d0.ignore_routes_with_linkdown", "net.ipv6.conf.d0.accept_dad"); out != "net.ipv6.conf.d0.ignore_routes_with_linkdown = 1\nnet.ipv6.conf.d0.accept_dad = 0\n" {
		t.Errorf("a link made after the preamble has %q", out)
	}
	for _, c := range [][]string{{"sysctl", "-qw", "net.ipv6.conf.all.keep_addr_on_down=0"}, {"link", "set", "d0", "down"}, {"link", "set", "d0", "up"}} {
		if _, e, st := d.run(c...); st != 0 {
			t.Fatalf("%v: %s", c, e)
		}
	}
	if has() {
		t.Error("the address stayed with keep_addr_on_down=0")
	}
	// a bad line stops the config, naming it
	dir := t.TempDir()
	conf := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(conf, []byte("link add d0 type dummy\nsysctl -w net.ipv6.conf.d0.hop_limit=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, e, st := runCmd(urouter, "daemon", "--socket", filepath.Join(dir, "s"), "--config", conf)
	if want := "sysctl: setting key \"net.ipv6.conf.d0.hop_limit\": Invalid argument"; st == 0 || !strings.Contains(e, want) || !strings.Contains(e, ":2") {
		t.Errorf("a config with an invalid value: status %d, %q; want its line 2 and %q", st, e, want)
	}
}
