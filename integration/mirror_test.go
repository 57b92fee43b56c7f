package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mirrorLab is urouter in uro-kr with an Ethernet link lan1 (on veth r1)
// to host uro-kh, the link mirrored into uro-kr's kernel as km1:
//
//	uro-kh eth0 2001:db8:c1::2 ==veth== r1: lan1 [urouter in uro-kr] -- km1 (kernel TUN) 2001:db8:c1::1
type mirrorLab struct {
	d     *daemon
	r, h  string
	hLLA  string // the host's link-local address
	rLLA  string // the router's, on lan1 (and so on km1)
	flags []string
}

func newMirrorLab(t *testing.T, flags []string, extra ...string) *mirrorLab {
	t.Helper()
	return newMirrorLabOf(t, "", flags, extra...)
}

// newMirrorLabOf is newMirrorLab with a mirror of kind (`type KIND`; ""
// for the default).
func newMirrorLabOf(t *testing.T, kind string, flags []string, extra ...string) *mirrorLab {
	t.Helper()
	needRoot(t)
	mirror := "link set lan1 mirror km1"
	if kind != "" {
		mirror += " type " + kind
	}
	l := &mirrorLab{r: newNetns(t, "uro-kr"), h: newNetns(t, "uro-kh"), flags: flags}
	mustRun(t, "ip", "-n", l.r, "link", "add", "r1", "type", "veth", "peer", "name", "eth0", "netns", l.h)
	mustRun(t, "ip", "netns", "exec", l.h, "sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0")
	// no solicitations of its own: they go up the mirror, and the tests
	// count what goes up
	mustRun(t, "ip", "netns", "exec", l.h, "sysctl", "-qw", "net.ipv6.conf.eth0.router_solicitations=0")
	mustRun(t, "ip", "-n", l.h, "addr", "add", "2001:db8:c1::2/64", "dev", "eth0", "nodad")
	mustRun(t, "ip", "-n", l.h, "link", "set", "eth0", "up")
	mustRun(t, "ip", "-n", l.h, "-6", "route", "add", "default", "via", "2001:db8:c1::1")
	l.d = startDaemonFlags(t, l.r, flags, append([]string{
		"link add lan1 type host dev r1",
		"link set lan1 up",
		"address add 2001:db8:c1::1/64 dev lan1",
		mirror,
	}, extra...)...)
	l.hLLA = linkLocalOf(t, l.h, "eth0")
	waitUntil(t, "km1's link-local address", func() bool { l.rLLA = linkLocalOf(t, l.r, "km1"); return l.rLLA != "" })
	return l
}

func linkLocalOf(t *testing.T, ns, dev string) string {
	out := mustRun(t, "ip", "-n", ns, "-6", "-o", "addr", "show", "dev", dev, "scope", "link")
	if f := strings.Fields(out); len(f) > 3 {
		return strings.Split(f[3], "/")[0]
	}
	return ""
}

func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// kernelAddrs is what `ip -6 addr show dev` lists, as "ADDR/LEN" words.
func kernelAddrs(t *testing.T, ns, dev string) string {
	var ifs []struct {
		MTU      int      `json:"mtu"`
		Flags    []string `json:"flags"`
		AddrInfo []struct {
			Local     string `json:"local"`
			Prefixlen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "ip", "-n", ns, "-j", "addr", "show", "dev", dev)), &ifs); err != nil || len(ifs) != 1 {
		t.Fatalf("ip addr show %s: %v", dev, err)
	}
	var as []string
	for _, a := range ifs[0].AddrInfo {
		as = append(as, fmt.Sprintf("%s/%d", a.Local, a.Prefixlen))
	}
	up := "DOWN"
	for _, f := range ifs[0].Flags {
		if f == "UP" {
			up = "UP"
		}
	}
	return fmt.Sprintf("mtu %d %s %s", ifs[0].MTU, up, strings.Join(as, " "))
}

// TestKernelMirror: a mirror stands for its link in the kernel (MTU,
// state and addresses kept in step); TCP to the router's address reaches
// the kernel's sockets (iperf3 and a session opened by each side), the
// kernel's own packets leave through the link (global and link-local),
// echo is still answered by urouter; `mirror none` takes the mirror away
// and TCP is refused again.
func TestKernelMirror(t *testing.T) {
	parallel(t)
	l := newMirrorLab(t, nil)
	out, _, _ := l.d.run("link", "show", "lan1")
	if !strings.Contains(out, "mirror km1 ifindex ") {
		t.Fatalf("link show does not name the mirror:\n%s", out)
	}
	want := "mtu 1500 UP 2001:db8:c1::1/64 " + l.rLLA + "/64"
	if got := kernelAddrs(t, l.r, "km1"); got != want {
		t.Fatalf("km1: %q, want %q", got, want)
	}
	l.d.run("link", "set", "lan1", "mtu", "1400")
	l.d.run("address", "add", "2001:db8:c2::1/64", "dev", "lan1")
	want = "mtu 1400 UP 2001:db8:c2::1/64 2001:db8:c1::1/64 " + l.rLLA + "/64"
	waitUntil(t, "km1 to follow lan1", func() bool { return kernelAddrs(t, l.r, "km1") == want })
	l.d.run("address", "del", "2001:db8:c2::1/64", "dev", "lan1")
	waitUntil(t, "km1 to lose the address", func() bool { return !strings.Contains(kernelAddrs(t, l.r, "km1"), "c2::1") })
	l.d.run("link", "set", "lan1", "down") // addresses go with it, as Linux's keep_addr_on_down 0
	waitUntil(t, "km1 to go down", func() bool { return kernelAddrs(t, l.r, "km1") == "mtu 1400 DOWN " })
	l.d.run("link", "set", "lan1", "up")
	l.d.run("address", "add", "2001:db8:c1::1/64", "dev", "lan1")
	want = "mtu 1400 UP 2001:db8:c1::1/64 " + l.rLLA + "/64"
	waitUntil(t, "km1 to come back", func() bool { return kernelAddrs(t, l.r, "km1") == want })

	checkKernelThroughMirror(t, l)
	before := mirrorCounter(t, l.d, "up_packets")
	if o, e, st := runCmd("ip", "netns", "exec", l.h, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", "2001:db8:c1::1"); st != 0 {
		t.Fatalf("ping to the router: %s%s", o, e)
	}
	if after := mirrorCounter(t, l.d, "up_packets"); after != before {
		t.Errorf("echo requests went up to the kernel (%d -> %d packets): urouter answers them", before, after)
	}

	// mirror none: km1 goes, TCP to the router is refused by urouter.
	if _, e, st := l.d.run("link", "set", "lan1", "mirror", "none"); st != 0 {
		t.Fatal(e)
	}
	if _, _, st := runCmd("ip", "-n", l.r, "link", "show", "km1"); st == 0 {
		t.Error("km1 is still there after mirror none")
	}
	if o, _, _ := l.d.run("link", "show", "lan1"); strings.Contains(o, "mirror") {
		t.Errorf("link show still names a mirror:\n%s", o)
	}
	o, e, _ := runCmd("ip", "netns", "exec", l.h, "iperf3", "-c", "2001:db8:c1::1", "-t", "1")
	if !strings.Contains(o+e, "refused") {
		t.Errorf("TCP to the router without a mirror: %s%s", o, e)
	}
	// The mirror comes and goes while the host sends to the router and
	// the kernel answers through it: nothing races, nothing is left.
	flood := startIn(t, l.h, "ping", "-6", "-i", "0.002", "-s", "1200", "2001:db8:c1::1")
	for i := 0; i < 10; i++ {
		if _, e, st := l.d.run("link", "set", "lan1", "mirror", "km1"); st != 0 {
			t.Fatalf("mirror km1 (round %d): %s", i, e)
		}
		runCmd("ip", "netns", "exec", l.r, "ping", "-6", "-c", "1", "-W", "0.2", "2001:db8:c1::2")
		if _, e, st := l.d.run("link", "set", "lan1", "mirror", "none"); st != 0 {
			t.Fatalf("mirror none (round %d): %s", i, e)
		}
	}
	flood.stop()
	if _, _, st := runCmd("ip", "-n", l.r, "link", "show", "km1"); st == 0 {
		t.Error("km1 is left after the mirror came and went")
	}
	// Bad input: a name the kernel would refuse, and the loopback.
	if _, e, st := l.d.run("link", "set", "lan1", "mirror", "a/b"); st == 0 || !strings.Contains(e, "not a valid ifname") {
		t.Errorf("mirror a/b: %d %s", st, e)
	}
	if _, e, st := l.d.run("link", "set", "lo", "mirror", "klo"); st == 0 {
		t.Errorf("mirror of lo: %s", e)
	}
}

// checkKernelThroughMirror: the kernel's TCP through the mirror, both
// ways (iperf3), and its pings to the host.
func checkKernelThroughMirror(t *testing.T, l *mirrorLab) {
	t.Helper()
	srv := startIn(t, l.r, "iperf3", "-s", "-1", "-B", "2001:db8:c1::1")
	defer srv.stop()
	waitUntil(t, "iperf3 to listen", func() bool {
		o, _, _ := runCmd("ip", "netns", "exec", l.r, "ss", "-Htln", "sport", "= :5201")
		return strings.Contains(o, "5201")
	})
	o, e, st := runCmd("ip", "netns", "exec", l.h, "iperf3", "-c", "2001:db8:c1::1", "-t", "1", "-J")
	if st != 0 {
		t.Fatalf("iperf3 from the host to the kernel through the mirror: %s%s", o, e)
	}
	bps, ok := iperfReceived(o)
	if !ok {
		t.Fatalf("iperf3 -J: %s", o)
	}
	t.Logf("iperf3 host -> kernel through the mirror: %.2f Gbit/s", bps/1e9)
	if bps < 1e6 {
		t.Fatalf("iperf3 moved %.0f bit/s", bps)
	}
	hsrv := startIn(t, l.h, "iperf3", "-s", "-1")
	defer hsrv.stop()
	waitUntil(t, "the host's iperf3 to listen", func() bool {
		o, _, _ := runCmd("ip", "netns", "exec", l.h, "ss", "-Htln", "sport", "= :5201")
		return strings.Contains(o, "5201")
	})
	if o, e, st := runCmd("ip", "netns", "exec", l.r, "iperf3", "-c", l.hLLA+"%km1", "-t", "1"); st != 0 {
		t.Fatalf("iperf3 from the kernel to the host's link-local address: %s%s", o, e)
	}
	for _, dst := range []string{"2001:db8:c1::2", l.hLLA + "%km1"} {
		if o, e, st := runCmd("ip", "netns", "exec", l.r, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", dst); st != 0 {
			t.Errorf("ping from the kernel to %s: %s%s", dst, o, e)
		}
	}
}

// iperfReceived is what `iperf3 -J` says the receiver got, in bit/s.
func iperfReceived(out string) (float64, bool) {
	var res struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	err := json.Unmarshal([]byte(out), &res)
	return res.End.SumReceived.BitsPerSecond, err == nil
}

func mirrorCounter(t *testing.T, d *daemon, k string) uint64 {
	out, _, _ := d.run("-s", "-j", "link", "show", "lan1")
	var ls []struct {
		Mirror map[string]any `json:"mirror"`
	}
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) != 1 || ls[0].Mirror == nil {
		t.Fatalf("link show -s -j: %v\n%s", err, out)
	}
	v, _ := ls[0].Mirror[k].(float64)
	return uint64(v)
}

// TestTableMirror: the router's table 100 follows the kernel's table 100
// within 100 ms: adds, appends (multipath), replaces, single-path and
// whole deletes, a flush; routes on the mirror map to its link, routes on
// other interfaces and other tables are passed over; a route already in
// the kernel when the daemon starts is read by the first dump.
func TestTableMirror(t *testing.T) {
	measures(t)
	needRoot(t)
	r := newNetns(t, "uro-kr")
	// what the dump at start must find: a blackhole (no interface needed)
	mustRun(t, "ip", "-n", r, "-6", "route", "add", "blackhole", "2001:db8:e0::/48", "table", "100")
	l := &mirrorLab{r: r, h: newNetns(t, "uro-kh")}
	mustRun(t, "ip", "-n", l.r, "link", "add", "r1", "type", "veth", "peer", "name", "eth0", "netns", l.h)
	l.d = startDaemonFlags(t, l.r, []string{"--mirror-table", "100"},
		"link add lan1 type host dev r1", "link set lan1 up", "address add 2001:db8:c1::1/64 dev lan1", "link set lan1 mirror km1")
	show := func() string {
		out, _, _ := l.d.run("route", "show", "table", "100")
		return out
	}
	var slowest time.Duration
	follow := func(what, want string, kernel ...string) {
		t.Helper()
		obj := "route"
		if kernel[0] == "nexthop" {
			obj, kernel = kernel[0], kernel[1:]
		}
		mustRun(t, "ip", append([]string{"-n", l.r, "-6", obj}, kernel...)...)
		// A poll is a client process, slow on a loaded machine: what the
		// router certainly took is when the last poll that missed the
		// change began, not when the one that saw it ended.
		start := time.Now()
		var missed time.Duration
		for {
			began := time.Since(start)
			if show() == want {
				break
			}
			missed = began
			if began > 2*time.Second {
				t.Fatalf("%s: urouter's table 100 is\n%s\nwant\n%s", what, show(), want)
			}
			time.Sleep(2 * time.Millisecond)
		}
		if missed > 100*time.Millisecond {
			t.Errorf("%s: not yet followed %v after the change (want within 100 ms)", what, missed)
		}
		slowest = max(slowest, time.Since(start))
	}
	bh := "blackhole 2001:db8:e0::/48 dev lo metric 1024 pref medium\n"
	waitUntil(t, "the first dump", func() bool { return show() == bh })
	follow("add", bh+"2001:db8:e1::/48 via 2001:db8:c1::2 dev lan1 proto bird metric 1024 pref medium\n",
		"add", "2001:db8:e1::/48", "via", "2001:db8:c1::2", "dev", "km1", "table", "100", "proto", "bird")
	follow("replace", bh+"2001:db8:e1::/48 via 2001:db8:c1::3 dev lan1 proto bird metric 1024 pref medium\n",
		"replace", "2001:db8:e1::/48", "via", "2001:db8:c1::3", "dev", "km1", "table", "100", "proto", "bird")
	mp := "2001:db8:e2::/48 metric 5 pref medium\n" +
		"\tnexthop via 2001:db8:c1::4 dev lan1 weight 1 \n\tnexthop via 2001:db8:c1::2 dev lan1 weight 1 \n"
	mustRun(t, "ip", "-n", l.r, "-6", "route", "add", "2001:db8:e2::/48", "via", "2001:db8:c1::2", "dev", "km1", "table", "100", "metric", "5")
	follow("append", bh+"2001:db8:e1::/48 via 2001:db8:c1::3 dev lan1 proto bird metric 1024 pref medium\n"+mp,
		"append", "2001:db8:e2::/48", "via", "2001:db8:c1::4", "dev", "km1", "table", "100", "metric", "5")
	follow("delete one path", bh+"2001:db8:e1::/48 via 2001:db8:c1::3 dev lan1 proto bird metric 1024 pref medium\n"+
		"2001:db8:e2::/48 via 2001:db8:c1::2 dev lan1 metric 5 pref medium\n",
		"del", "2001:db8:e2::/48", "via", "2001:db8:c1::4", "dev", "km1", "table", "100", "metric", "5")
	follow("delete", bh+"2001:db8:e2::/48 via 2001:db8:c1::2 dev lan1 metric 5 pref medium\n",
		"del", "2001:db8:e1::/48", "table", "100")
	// a route through a kernel nexthop object, and the object replaced
	mustRun(t, "ip", "-n", l.r, "-6", "nexthop", "add", "id", "50", "via", "2001:db8:c1::5", "dev", "km1")
	nh := bh + "2001:db8:e2::/48 via 2001:db8:c1::2 dev lan1 metric 5 pref medium\n"
	follow("route through a nexthop object", nh+"2001:db8:e4::/48 nhid 50 via 2001:db8:c1::5 dev lan1 metric 1024 pref medium\n",
		"add", "2001:db8:e4::/48", "nhid", "50", "table", "100")
	follow("nexthop replace", nh+"2001:db8:e4::/48 nhid 50 via 2001:db8:c1::6 dev lan1 metric 1024 pref medium\n",
		"nexthop", "replace", "id", "50", "via", "2001:db8:c1::6", "dev", "km1")
	// other tables, and the kernel's own routes, are not followed
	mustRun(t, "ip", "-n", l.r, "-6", "route", "add", "2001:db8:e3::/48", "via", "2001:db8:c1::2", "dev", "km1", "table", "200")
	follow("delete the route through the object", nh, "del", "2001:db8:e4::/48", "table", "100") // iproute2 6.1 cannot flush it
	follow("flush", "", "flush", "table", "100")
	if out, _, _ := l.d.run("nexthop", "show", "id", "50"); !strings.Contains(out, "via 2001:db8:c1::6 dev lan1") {
		t.Errorf("the kernel's nexthop object 50 in urouter: %q", out)
	}
	if out, _, _ := l.d.run("route", "show", "table", "200"); out != "" {
		t.Errorf("table 200 was followed:\n%s", out)
	}
	t.Logf("urouter's table 100 followed each change within %v (a poll of route show included)", slowest)
	out, _, _ := l.d.run("mirror", "show")
	if !strings.Contains(out, "kernel table 100 synced") || !strings.Contains(out, "malformed 0") {
		t.Errorf("mirror show:\n%s", out)
	}
}

// cpuTicks is the CPU time process pid has used, in clock ticks
// (/proc/PID/stat's utime and stime).
func cpuTicks(t testing.TB, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:])) // after the command's name
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}

// idleCPU is the share of a core the daemon uses over a second of quiet.
func (d *daemon) idleCPU(t *testing.T) float64 {
	before := cpuTicks(t, d.cmd.Process.Pid)
	time.Sleep(time.Second)
	return float64(cpuTicks(t, d.cmd.Process.Pid)-before) / 100 // USER_HZ
}

// TestMirrorNone: a mirror set and taken away 20 times leaves no reader
// behind: the daemon's goroutines and its idle CPU are what they were.
func TestMirrorNone(t *testing.T) {
	measures(t)
	l := newMirrorLab(t, []string{"--metrics", "127.0.0.1:9108"})
	goroutines := func() float64 {
		v, _ := metricValue(scrape(t, l.r, "127.0.0.1:9108"), "go_goroutines", nil)
		return v
	}
	l.d.run("link", "set", "lan1", "mirror", "none")
	time.Sleep(200 * time.Millisecond)
	base, cpu := goroutines(), l.d.idleCPU(t)
	for i := 0; i < 20; i++ {
		for _, m := range []string{"km1", "none"} {
			if _, e, st := l.d.run("link", "set", "lan1", "mirror", m); st != 0 {
				t.Fatalf("mirror %s: %s", m, e)
			}
		}
	}
	var after float64
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if after = goroutines(); after <= base || time.Now().After(deadline) {
			break
		}
	}
	now := l.d.idleCPU(t)
	t.Logf("goroutines %v, idle CPU %.2f of a core; after 20 mirrors set and removed: %v, %.2f", base, cpu, after, now)
	if after > base {
		t.Errorf("goroutines: %v before, %v after 20 mirrors set and removed", base, after)
	}
	if now > cpu+0.1 {
		t.Errorf("idle CPU: %.2f of a core before, %.2f after 20 mirrors set and removed", cpu, now)
	}
}
