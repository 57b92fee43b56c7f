package integration

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestKernelOracleMpathSelect is the kernel selftest fib_nexthops.sh's
// ipv6_mpath_select, run on Linux in a network namespace and on urouter
// alike: a route through a group of two nexthop objects; for a flow that
// takes each gateway, that gateway's neighbour entry made FAILED moves
// the flow to the other at once (Linux's nexthop_select_path_hthr takes
// the next good member, ipv6_good_nh); with no valid neighbour at all
// every flow takes the group's first member. Each router seeds
// its own hash, so each finds its own flows; what is compared is what
// they do with them.
func TestKernelOracleMpathSelect(t *testing.T) {
	parallel(t)
	needRoot(t)
	k := newNetns(t, "uro-mpsel-k")
	u := newNetns(t, "uro-mpsel-u")
	mustRun(t, "ip", "netns", "exec", k, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0",
		"net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.forwarding=1")
	for i, ns := range []string{k, u} {
		for j := range 2 {
			dev := fmt.Sprintf("d%d", j)
			if i == 1 {
				dev = fmt.Sprintf("u%d", j)
			}
			mustRun(t, "ip", "-n", ns, "link", "add", dev, "type", "veth", "peer", "name", dev+"p")
			mustRun(t, "ip", "-n", ns, "link", "set", dev, "up")
			mustRun(t, "ip", "-n", ns, "link", "set", dev+"p", "up")
			if i == 0 {
				mustRun(t, "ip", "-n", ns, "-6", "addr", "add", fmt.Sprintf("2001:db8:9%d::1/64", j+1), "dev", dev)
			}
		}
	}
	d := startDaemon(t, u, "link add d0 type host dev u0", "link add d1 type host dev u1",
		"link set d0 up", "link set d1 up",
		"address add 2001:db8:91::1/64 dev d0", "address add 2001:db8:92::1/64 dev d1")
	kernel := func(args ...string) (string, string, int) { return runCmd("ip", append([]string{"-n", k}, args...)...) }
	for _, r := range []struct {
		name string
		run  func(args ...string) (string, string, int)
	}{{"linux", kernel}, {"urouter", d.run}} {
		t.Run(r.name, func(t *testing.T) { mpathSelect(t, r.run) })
	}
}

// mpathSelect is ipv6_mpath_select on one router, through run.
func mpathSelect(t *testing.T, run func(args ...string) (string, string, int)) {
	must := func(args ...string) {
		t.Helper()
		if out, e, st := run(args...); st != 0 {
			t.Fatalf("%v: %d %s%s", args, st, out, e)
		}
	}
	must("nexthop", "add", "id", "1", "via", "2001:db8:91::2", "dev", "d0")
	must("nexthop", "add", "id", "2", "via", "2001:db8:92::2", "dev", "d1")
	must("nexthop", "add", "id", "1001", "group", "1/2")
	must("-6", "route", "add", "2001:db8:101::/64", "nhid", "1001")
	gws := map[string]string{"d0": "2001:db8:91::2", "d1": "2001:db8:92::2"}
	other := map[string]string{"d0": "d1", "d1": "d0"}
	flows := map[string]string{} // dev: a destination whose flow takes it
	for h := 1; h < 1<<16 && len(flows) < 2; h++ {
		addr := fmt.Sprintf("2001:db8:101::%x", h)
		if dev := routeDev(t, run, addr); flows[dev] == "" {
			flows[dev] = addr
		}
	}
	for _, dev := range []string{"d0", "d1"} {
		addr := flows[dev]
		if addr == "" {
			t.Fatalf("no flow takes %s", dev)
		}
		must("-6", "neigh", "add", gws[dev], "dev", dev, "nud", "failed")
		if got := routeDev(t, run, addr); got != other[dev] {
			t.Errorf("%s's neighbour FAILED: route get %s leaves by %s; want %s", dev, addr, got, other[dev])
		}
		must("-6", "neigh", "del", gws[dev], "dev", dev)
		if got := routeDev(t, run, addr); got != dev {
			t.Errorf("%s's neighbour gone: route get %s leaves by %s; want %s again", dev, addr, got, dev)
		}
	}
	// no valid neighbour: every flow takes the group's first member
	must("-6", "neigh", "add", gws["d0"], "dev", "d0", "nud", "incomplete")
	must("-6", "neigh", "add", gws["d1"], "dev", "d1", "nud", "incomplete")
	for _, addr := range flows {
		if got := routeDev(t, run, addr); got != "d0" {
			t.Errorf("no valid neighbour: route get %s leaves by %s; want the first member's d0", addr, got)
		}
	}
}

// routeDev is the link `route get addr` says a packet to addr leaves by.
func routeDev(t *testing.T, run func(args ...string) (string, string, int), addr string) string {
	t.Helper()
	out, e, st := run("-6", "-j", "route", "get", addr)
	var rs []struct {
		Dev string `json:"dev"`
	}
	if st != 0 || json.Unmarshal([]byte(out), &rs) != nil || len(rs) != 1 {
		t.Fatalf("route get %s: %d %s%s", addr, st, out, e)
	}
	return rs[0].Dev
}
