package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// frrLab is urouter as the forwarding plane of FRR, with BIRD as its BGP
// peers:
//
//	uro-fp1 BIRD AS 65001 2001:db8:d1::2 ==veth== lan1 \
//	uro-fp2 BIRD AS 65002 2001:db8:d2::2 ==veth== lan2  [urouter in uro-fr, mirrors km1..km3; zebra -M dplane_fpm_nl, bgpd AS 65000]
//	uro-fh  host          2001:db8:d3::2 ==veth== lan3 /
//
// zebra and bgpd run on the kernel's stack in uro-fr and see urouter's
// links as km1..km3; bgpd's sessions cross urouter's links through the
// mirrors; zebra programs the kernel of uro-fr and, over FPM, urouter.
// BIRD announces prefixes 2001:db8:a000:I::/64 (I in hex): peer 1 the
// first half and 50 more, peer 2 the second half and 50 more, so the 100
// in the middle have two equal paths.
type frrLab struct {
	t          testing.TB
	d          *daemon
	r, h       string
	p          [2]string
	dir        string
	n          int
	zebra      *proc
	bgpd       *proc
	bird       [2]*proc
	withdrawn  map[int]bool
	kernelOnly bool
	// announce, if set, is what each peer announces instead of its share
	// of the n lab prefixes
	announce [2][]string
	// bgpExtra are lines more for bgpd's router bgp (timers, say)
	bgpExtra string
}

const (
	frrDir  = "/usr/lib/frr"
	frrPeer = "2001:db8:d%d::2"
)

func needFRR(t testing.TB) {
	t.Helper()
	needRoot(t)
	for _, p := range []string{frrDir + "/zebra", frrDir + "/bgpd", "/usr/sbin/bird"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("needs FRR and BIRD (Debian's frr and bird2; .ci/run installs them): %v", err)
		}
	}
}

func prefixOf(i int) string { return fmt.Sprintf("2001:db8:a000:%x::/64", i) }

// newFRRLab builds the lab with n prefixes; kernelOnly runs zebra without
// FPM and no urouter daemon (the kernel of uro-fr forwards: the reference).
func newFRRLab(t testing.TB, n int, kernelOnly bool, announce ...[]string) *frrLab {
	t.Helper()
	return newFRRLabWith(t, n, kernelOnly, "", announce...)
}

// newFRRLabWith is newFRRLab with bgpExtra added to bgpd's router bgp.
func newFRRLabWith(t testing.TB, n int, kernelOnly bool, bgpExtra string, announce ...[]string) *frrLab {
	t.Helper()
	return newFRRLabOf(t, urouter, n, kernelOnly, bgpExtra, announce...)
}

// newFRRLabOf is newFRRLabWith running urouter's binary bin.
func newFRRLabOf(t testing.TB, bin string, n int, kernelOnly bool, bgpExtra string, announce ...[]string) *frrLab {
	t.Helper()
	return newFRRLabFlags(t, bin, nil, n, kernelOnly, bgpExtra, announce...)
}

// newFRRLabFlags is newFRRLabOf with these flags more for the daemon.
func newFRRLabFlags(t testing.TB, bin string, flags []string, n int, kernelOnly bool, bgpExtra string, announce ...[]string) *frrLab {
	t.Helper()
	needFRR(t)
	l := &frrLab{t: t, r: newNetns(t, "uro-fr"), h: newNetns(t, "uro-fh"), n: n, dir: t.TempDir(),
		withdrawn: map[int]bool{}, kernelOnly: kernelOnly, bgpExtra: bgpExtra}
	copy(l.announce[:], announce)
	if err := os.Chmod(l.dir, 0o755); err != nil { // FRR's daemons drop to user frr
		t.Fatal(err)
	}
	for i := range l.p {
		l.p[i] = newNetns(t, fmt.Sprintf("uro-fp%d", i+1))
	}
	for i, ns := range []string{l.p[0], l.p[1], l.h} {
		r := fmt.Sprintf("r%d", i+1)
		mustRun(t, "ip", "-n", l.r, "link", "add", r, "type", "veth", "peer", "name", "eth0", "netns", ns)
		mustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0")
		mustRun(t, "ip", "-n", ns, "addr", "add", fmt.Sprintf("2001:db8:d%d::2/64", i+1), "dev", "eth0", "nodad")
		mustRun(t, "ip", "-n", ns, "link", "set", "eth0", "up")
		mustRun(t, "ip", "-n", ns, "-6", "route", "add", "default", "via", fmt.Sprintf("2001:db8:d%d::1", i+1))
	}
	// What traffic is sent to: one address of a prefix peer 1 alone
	// announces, and one of a prefix both announce (on both peers).
	mustRun(t, "ip", "-n", l.p[0], "addr", "add", "2001:db8:a000:5::1/128", "dev", "lo")
	for _, p := range l.p {
		mustRun(t, "ip", "-n", p, "addr", "add", fmt.Sprintf("2001:db8:a000:%x::1/128", n/2), "dev", "lo")
	}
	if kernelOnly {
		mustRun(t, "ip", "netns", "exec", l.r, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
		for i := 1; i <= 3; i++ {
			k := fmt.Sprintf("r%d", i)
			mustRun(t, "ip", "-n", l.r, "addr", "add", fmt.Sprintf("2001:db8:d%d::1/64", i), "dev", k, "nodad")
			mustRun(t, "ip", "-n", l.r, "link", "set", k, "up")
		}
	} else {
		var conf []string
		for i := 1; i <= 3; i++ {
			conf = append(conf, fmt.Sprintf("link add lan%d type host dev r%d", i, i), fmt.Sprintf("link set lan%d up", i),
				fmt.Sprintf("address add 2001:db8:d%d::1/64 dev lan%d", i, i), fmt.Sprintf("link set lan%d mirror km%d", i, i))
		}
		l.d = startBinary(t, bin, l.r, filepath.Join(t.TempDir(), "urouter.sock"), append([]string{"--fpm", "127.0.0.1:2620"}, flags...), conf...)
	}
	l.writeFRR()
	l.startZebra()
	l.bgpd = l.frr("bgpd")
	if l.announce[0] == nil {
		l.startBIRD()
	}
	return l
}

// startBIRD starts the two peers.
func (l *frrLab) startBIRD() {
	for i := range l.p {
		l.writeBIRD(i)
		l.bird[i] = startIn(l.t, l.p[i], "bird", "-f", "-c", l.path(i, "bird.conf"), "-s", l.path(i, "bird.ctl"))
	}
}

func (l *frrLab) path(peer int, name string) string {
	return filepath.Join(l.dir, fmt.Sprintf("p%d-%s", peer+1, name))
}

func (l *frrLab) writeFRR() {
	fpm := "fpm address 127.0.0.1 port 2620\n"
	if l.kernelOnly {
		fpm = ""
	}
	files := map[string]string{
		"zebra.conf": "hostname uro-fr\nlog file " + l.dir + "/zebra.log informational\n" + fpm,
		"bgpd.conf": "hostname uro-fr\nlog file " + l.dir + "/bgpd.log informational\n" +
			"router bgp 65000\n bgp router-id 192.0.2.1\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n" +
			" bgp bestpath as-path multipath-relax\n" +
			" neighbor 2001:db8:d1::2 remote-as 65001\n neighbor 2001:db8:d2::2 remote-as 65002\n" +
			" neighbor 2001:db8:d1::2 timers connect 1\n neighbor 2001:db8:d2::2 timers connect 1\n" + l.bgpExtra +
			" address-family ipv6 unicast\n  neighbor 2001:db8:d1::2 activate\n  neighbor 2001:db8:d2::2 activate\n" +
			"  maximum-paths 2\n exit-address-family\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(l.dir, name), []byte(body), 0o644); err != nil {
			l.t.Fatal(err)
		}
	}
}

// frr starts an FRR daemon of uro-fr in the foreground, its sockets and
// pid file in the lab's directory.
func (l *frrLab) frr(name string, extra ...string) *proc {
	args := append([]string{"-u", "root", "-g", "frrvty", "--vty_socket", l.dir, "-f", filepath.Join(l.dir, name+".conf"),
		"-i", filepath.Join(l.dir, name+".pid"), "-z", filepath.Join(l.dir, "zserv.api")}, extra...)
	return startIn(l.t, l.r, filepath.Join(frrDir, name), args...)
}

// startZebra starts zebra and waits for its zserv socket: a bgpd that
// comes first retries only 10 s later, and meanwhile takes the routes its
// peers send with a link-local next hop for withdrawals (it knows no
// interfaces yet), which they never send again.
func (l *frrLab) startZebra() {
	zserv := filepath.Join(l.dir, "zserv.api")
	_ = os.Remove(zserv) // a killed zebra's
	if l.kernelOnly {
		l.zebra = l.frr("zebra")
	} else {
		l.zebra = l.frr("zebra", "-M", "dplane_fpm_nl")
	}
	waitUntil(l.t, "zebra's zserv socket", func() bool { _, err := os.Stat(zserv); return err == nil })
	time.Sleep(200 * time.Millisecond) // and its interfaces read
}

// writeBIRD writes peer i's configuration: its share of the prefixes,
// less those withdrawn, exported over eBGP to bgpd.
func (l *frrLab) writeBIRD(i int) {
	lo, hi := 0, l.n/2+50
	if i == 1 {
		lo, hi = l.n/2-50, l.n
	}
	var b strings.Builder
	fmt.Fprintf(&b, "router id 192.0.2.%d;\nprotocol device { }\nprotocol static s6 {\n ipv6;\n", i+10)
	for j := lo; j < hi && l.announce[i] == nil; j++ {
		if !l.withdrawn[j] {
			fmt.Fprintf(&b, " route %s blackhole;\n", prefixOf(j))
		}
	}
	for _, p := range l.announce[i] {
		fmt.Fprintf(&b, " route %s blackhole;\n", p)
	}
	fmt.Fprintf(&b, "}\nprotocol bgp r {\n local 2001:db8:d%d::2 as 6500%d;\n neighbor 2001:db8:d%d::1 as 65000;\n"+
		" connect delay time 1;\n connect retry time 1;\n error wait time 1, 5;\n ipv6 { import none; export all; };\n}\n", i+1, i+1, i+1)
	if err := os.WriteFile(l.path(i, "bird.conf"), []byte(b.String()), 0o644); err != nil {
		l.t.Fatal(err)
	}
}

// withdraw takes prefix j out of what peer i announces.
func (l *frrLab) withdraw(i, j int) {
	l.withdrawn[j] = true
	l.writeBIRD(i)
	mustRun(l.t, "ip", "netns", "exec", l.p[i], "birdc", "-s", l.path(i, "bird.ctl"), "configure")
}

// kernelRoutes is uro-fr's kernel's BGP routes as `ip -6 route` prints
// them, with the mirrors' names changed to their links'.
func (l *frrLab) kernelRoutes() string {
	out := mustRun(l.t, "ip", "-n", l.r, "-6", "route", "show", "proto", "bgp")
	return regexp.MustCompile(`dev km(\d)`).ReplaceAllString(out, "dev lan$1")
}

func (l *frrLab) urouterRoutes() string {
	out, _, _ := l.d.run("route", "show", "proto", "bgp")
	return out
}

// count is how many routes a `route show` output has.
func count(out string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "2001:") {
			n++
		}
	}
	return n
}

// converge waits until both planes have want BGP routes, and returns when
// each got there, from start.
func (l *frrLab) converge(want int, start time.Time, limit time.Duration) (urouter, kernel time.Duration) {
	l.t.Helper()
	for urouter == 0 || kernel == 0 {
		if time.Since(start) > limit {
			l.t.Fatalf("after %v: urouter has %d BGP routes, the kernel %d; want %d\n%s\ndaemon: %s",
				limit, count(l.urouterRoutes()), count(l.kernelRoutes()), want, l.state(), l.d.log)
		}
		if kernel == 0 && count(l.kernelRoutes()) == want {
			kernel = time.Since(start)
		}
		if urouter == 0 && count(l.urouterRoutes()) == want {
			urouter = time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return urouter, kernel
}

func (l *frrLab) ping(dst string) error { return pingAcross(l.h, dst, "2", "2") }

// pingAcross pings dst from namespace ns count times, waiting wait
// seconds for each answer: an answer, one router crossed (hop limit 63).
func pingAcross(ns, dst, count, wait string) error {
	o, e, st := runCmd("ip", "netns", "exec", ns, "ping", "-6", "-c", count, "-i", "0.2", "-W", wait, dst)
	if st != 0 {
		return fmt.Errorf("ping %s: %s%s", dst, o, e)
	}
	if !strings.Contains(o, "ttl=63") {
		return fmt.Errorf("ping %s did not cross one router: %s", dst, o)
	}
	return nil
}

// frrHold is TestFRR's --fpm-hold. The replay after zebra's restart has
// one route fewer than the session before (one was withdrawn meanwhile),
// so it never looks complete: the hold ends it, and the test waits that
// long. Alone, zebra and bgpd say their 10,000 routes again within 5 s
// of the restart.
const frrHold = 15 * time.Second

// TestFRR: FRR programs urouter over FPM. bgpd peers with two BIRDs
// across urouter's links (through the mirrors) and learns 10,000
// prefixes; each appears in urouter as zebra put it in the kernel of the
// same netns (the same nexthop objects; the 100 with two paths through a
// group); traffic crosses urouter; a withdraw removes a prefix; killing
// zebra leaves forwarding up; a prefix withdrawn while zebra is away is
// gone once it is back (with bgpd) and has replayed, and the table is the
// kernel's again.
//
// It runs alone (measures): beside the other labs, zebra's replay after
// its restart, slowed, interleaves with the feed's settle timers, and
// the feed refused some of its routes for a nexthop it did not have
// (rejected 251 and 714 in two runs; never alone).
func TestFRR(t *testing.T) {
	measures(t)
	const n = 10000
	start := time.Now()
	l := newFRRLabFlags(t, urouter, []string{"--fpm-hold", frrHold.String()}, n, false, "")
	ut, kt := l.converge(n, start, 30*time.Second)
	t.Logf("%d prefixes from two BGP peers: in urouter after %v, in the kernel after %v (the same zebra)", n, ut, kt)
	same := func(when string) {
		t.Helper()
		var k, u string
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if k, u = l.kernelRoutes(), l.urouterRoutes(); k == u {
				return
			}
		}
		t.Fatalf("%s: urouter's BGP routes differ from the kernel's:\n%s", when, diffLines(k, u))
	}
	same("after the load")
	routes := l.urouterRoutes()
	if mp := strings.Count(routes, "\tnexthop via fe80::"); mp != 200 {
		t.Errorf("%d multipath legs, want 200 (100 prefixes over two peers)", mp)
	}
	mp := routeBlock(routes, "2001:db8:a000:1388::/64")
	if !regexp.MustCompile(`^2001:db8:a000:1388::/64 nhid \d+ metric 20 pref medium\n\tnexthop via fe80::\S+ dev lan\d weight 1 \n\tnexthop via fe80::\S+ dev lan\d weight 1 \n$`).MatchString(mp) ||
		!strings.Contains(mp, "lan1") || !strings.Contains(mp, "lan2") {
		t.Errorf("the multipath prefix does not point at a group of both peers:\n%q", mp)
	}
	for _, dst := range []string{"2001:db8:a000:5::1", fmt.Sprintf("2001:db8:a000:%x::1", n/2)} {
		if err := l.ping(dst); err != nil {
			t.Fatal(err)
		}
	}
	// through urouter, not the kernel: the kernel of uro-fr has no IPv6 on r1..r3
	if o, _, _ := l.d.run("-s", "link", "show", "lan1"); !strings.Contains(o, "TX:") {
		t.Fatal(o)
	}

	// A withdraw.
	l.withdraw(0, 7)
	waitUntil(t, "the withdrawn prefix to go", func() bool { return !strings.Contains(l.urouterRoutes(), prefixOf(7)) })

	// zebra killed: forwarding stays; a prefix goes while it is away.
	_ = l.zebra.cmd.Process.Kill()
	_ = l.zebra.cmd.Wait()
	waitUntil(t, "FPM to see zebra go", func() bool {
		o, _, _ := l.d.run("fpm", "show")
		return strings.Contains(o, "disconnected")
	})
	if err := l.ping("2001:db8:a000:5::1"); err != nil {
		t.Fatalf("with zebra gone: %v", err)
	}
	if c := count(l.urouterRoutes()); c != n-1 {
		t.Fatalf("with zebra gone urouter has %d BGP routes, want %d", c, n-1)
	}
	l.withdraw(0, 9)
	time.Sleep(2 * time.Second) // bgpd hears it; nobody tells urouter
	if !strings.Contains(l.urouterRoutes(), prefixOf(9)) {
		t.Fatal("a route went while zebra was away")
	}
	// bgpd restarts with zebra: FRR 8.4's bgpd does not send a restarted
	// zebra its multipath routes again.
	_ = l.bgpd.cmd.Process.Kill()
	_ = l.bgpd.cmd.Wait()
	l.startZebra()
	l.bgpd = l.frr("bgpd")
	waitUntil(t, "zebra's new session", func() bool {
		o, _, _ := l.d.run("fpm", "show")
		return strings.Contains(o, "connects 2")
	})
	// Until the replay has settled (as many routes as before, or the
	// hold), the old routes stay: never fewer than the replay's.
	for deadline := time.Now().Add(frrHold + 30*time.Second); ; time.Sleep(200 * time.Millisecond) {
		routes := l.urouterRoutes()
		if !strings.Contains(routes, prefixOf(9)) {
			break
		}
		if c := count(routes); c < n-2 {
			t.Fatalf("during the replay urouter has %d BGP routes, fewer than the %d zebra has", c, n-2)
		}
		if time.Now().After(deadline) {
			o, _, _ := l.d.run("fpm", "show")
			t.Fatalf("the prefix withdrawn while zebra was away is still there after the replay:\n%s", o)
		}
		if err := l.ping("2001:db8:a000:5::1"); err != nil {
			t.Fatalf("during the replay: %v", err)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); count(l.urouterRoutes()) != n-2; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after the replay urouter has %d BGP routes, want %d\n%s", count(l.urouterRoutes()), n-2, l.state())
		}
	}
	same("after zebra's restart")
	o, _, _ := l.d.run("fpm", "show")
	t.Logf("fpm show:\n%s", o)
	if !strings.Contains(o, "malformed 0") || !strings.Contains(o, "rejected 0") {
		t.Errorf("fpm show:\n%s", o)
	}
}

// TestFRRKernelReference: the same lab with the kernel of uro-fr as the
// forwarding plane (zebra without FPM): the routes and the traffic the
// urouter test expects are what Linux does.
func TestFRRKernelReference(t *testing.T) {
	parallel(t)
	const n = 10000
	start := time.Now()
	l := newFRRLab(t, n, true)
	for deadline := time.Now().Add(90 * time.Second); count(l.kernelRoutes()) != n; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the kernel has %d BGP routes, want %d", count(l.kernelRoutes()), n)
		}
	}
	t.Logf("%d prefixes in the kernel after %v", n, time.Since(start))
	if mp := strings.Count(l.kernelRoutes(), "\tnexthop via fe80::"); mp != 200 {
		t.Errorf("%d multipath legs in the kernel, want 200", mp)
	}
	for _, dst := range []string{"2001:db8:a000:5::1", fmt.Sprintf("2001:db8:a000:%x::1", n/2)} {
		if err := l.ping(dst); err != nil {
			t.Fatal(err)
		}
	}
	l.withdraw(0, 7)
	waitUntil(t, "the withdrawn prefix to go", func() bool { return !strings.Contains(l.kernelRoutes(), prefixOf(7)) })
}

// routeBlock is prefix's route in a `route show` output, with its
// nexthop lines.
func routeBlock(out, prefix string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.SplitAfter(out, "\n") {
		switch {
		case strings.HasPrefix(line, prefix+" "):
			in = true
		case !strings.HasPrefix(line, "\t"):
			in = false
		}
		if in {
			b.WriteString(line)
		}
	}
	return b.String()
}

// state is what the lab's daemons say, for a failure.
func (l *frrLab) state() string {
	fpm, _, _ := l.d.run("fpm", "show")
	bgp, _, _ := runCmd("ip", "netns", "exec", l.r, "vtysh", "--vty_socket", l.dir, "-c", "show bgp ipv6 summary", "-c", "show fpm counters")
	zl, _ := os.ReadFile(filepath.Join(l.dir, "zebra.log"))
	bl, _ := os.ReadFile(filepath.Join(l.dir, "bgpd.log"))
	bird, _, _ := runCmd("ip", "netns", "exec", l.p[0], "birdc", "-s", l.path(0, "bird.ctl"), "show", "protocols", "all", "r")
	return fmt.Sprintf("urouter:\n%s\nkernel: %d BGP routes\n%s\nzebra.log:\n%s\nbgpd.log:\n%s\nBIRD 1:\n%s", fpm, count(l.kernelRoutes()), bgp, zl, bl, bird)
}
