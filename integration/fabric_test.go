package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fabricLab is a router R between FRR peers and a host, for routing
// protocols run across R:
//
//	P1 eth0 ==veth== r1 \
//	P2 eth0 ==veth== r2  R (FRR)
//	H  eth0 ==veth== r3 /  2001:db8:d3::1/64; H 2001:db8:d3::2/64, default via ::1
//
// Each peer runs its own FRR on its kernel's stack. R runs in one of two
// modes: kernel, the reference, where R's kernel forwards and FRR runs on
// r1 and r2; or urouter, where urouter forwards on lan1..lan3 (host links
// on r1..r3) and FRR runs on the mirrors km1, km2 and programs urouter
// over FPM.
type fabricLab struct {
	t      *testing.T
	kernel bool
	opts   fabricOpts
	r, h   string
	d      *daemon
	router *frrNode
	peers  []*frrNode
	// shows are the vtysh commands whose output on R and the peers a
	// failure prints
	shows []string
	// started is when the FRR daemons were started
	started time.Time
}

type fabricOpts struct {
	// base names the namespaces: base-r, base-h, base-p1...
	base  string
	peers int
	// numbered puts 2001:db8:dI::1/64 on R's link I and ::2 on peer I's
	// eth0; otherwise the peer links have their link-local addresses only
	numbered bool
	// mirror ends urouter's mirror lines: "type tap" for a TAP with the
	// link's MAC, "" for a TUN; mirror2, if set, lan2's
	mirror, mirror2 string
	// hostMirror mirrors lan3 too (km3), for FRR on R to see the host's
	// link; otherwise lan3 is urouter's alone
	hostMirror bool
}

// newFabricLab builds the namespaces and links and, in urouter mode,
// starts urouter; the test then writes FRR's configurations and calls
// startFRR.
func newFabricLab(t *testing.T, kernel bool, opts fabricOpts) *fabricLab {
	t.Helper()
	needFRR(t)
	l := &fabricLab{t: t, kernel: kernel, opts: opts, r: newNetns(t, opts.base+"-r"), h: newNetns(t, opts.base+"-h")}
	l.router = newFRRNode(t, l.r)
	for i := 1; i <= opts.peers; i++ {
		p := newFRRNode(t, newNetns(t, fmt.Sprintf("%s-p%d", opts.base, i)))
		l.peers = append(l.peers, p)
		l.veth(fmt.Sprintf("r%d", i), p.ns)
		mustRun(t, "ip", "netns", "exec", p.ns, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
		if opts.numbered {
			mustRun(t, "ip", "-n", p.ns, "addr", "add", fmt.Sprintf("2001:db8:d%d::2/64", i), "dev", "eth0", "nodad")
		}
		mustRun(t, "ip", "-n", p.ns, "link", "set", "eth0", "up")
	}
	l.veth("r3", l.h)
	mustRun(t, "ip", "-n", l.h, "addr", "add", "2001:db8:d3::2/64", "dev", "eth0", "nodad")
	mustRun(t, "ip", "-n", l.h, "link", "set", "eth0", "up")
	mustRun(t, "ip", "-n", l.h, "-6", "route", "add", "default", "via", "2001:db8:d3::1")
	links := l.links()
	if kernel {
		mustRun(t, "ip", "netns", "exec", l.r, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
		for _, i := range links {
			r := fmt.Sprintf("r%d", i)
			mustRun(t, "ip", "netns", "exec", l.r, "sysctl", "-qw", "net.ipv6.conf."+r+".accept_dad=0")
			if a := l.routerAddr(i); a != "" {
				mustRun(t, "ip", "-n", l.r, "addr", "add", a, "dev", r, "nodad")
			}
			mustRun(t, "ip", "-n", l.r, "link", "set", r, "up")
		}
		return l
	}
	var conf []string
	for _, i := range links {
		lan := fmt.Sprintf("lan%d", i)
		conf = append(conf, fmt.Sprintf("link add %s type host dev r%d", lan, i), "link set "+lan+" up")
		if a := l.routerAddr(i); a != "" {
			conf = append(conf, "address add "+a+" dev "+lan)
		}
		kind := opts.mirror
		if i == 2 && opts.mirror2 != "" {
			kind = opts.mirror2
		}
		if i != 3 || opts.hostMirror {
			conf = append(conf, strings.TrimSpace(fmt.Sprintf("link set %s mirror km%d %s", lan, i, kind)))
		}
	}
	l.d = startBinary(t, urouter, l.r, filepath.Join(t.TempDir(), "urouter.sock"), []string{"--fpm", "127.0.0.1:2620"}, conf...)
	for i := 1; i <= opts.peers; i++ {
		// FRR on R needs the mirror's link-local address, as a veth's
		l.waitFor(fmt.Sprintf("km%d's link-local address", i), 10*time.Second, func() bool {
			_, _, st := runCmd("ip", "-n", l.r, "-6", "addr", "show", "dev", fmt.Sprintf("km%d", i), "scope", "link")
			return st == 0 && linkLocalOf(t, l.r, fmt.Sprintf("km%d", i)) != ""
		})
	}
	return l
}

// veth links R's rname to eth0 in ns, neither waiting for DAD (the
// link-local addresses are usable as the links come up).
func (l *fabricLab) veth(rname, ns string) {
	mustRun(l.t, "ip", "-n", l.r, "link", "add", rname, "type", "veth", "peer", "name", "eth0", "netns", ns)
	mustRun(l.t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0")
}

// links are R's link numbers: the peers' and the host's, 3.
func (l *fabricLab) links() []int {
	var ls []int
	for i := 1; i <= l.opts.peers; i++ {
		ls = append(ls, i)
	}
	return append(ls, 3)
}

// routerAddr is R's global address on link i, "" if none.
func (l *fabricLab) routerAddr(i int) string {
	if i == 3 {
		return "2001:db8:d3::1/64"
	}
	if l.opts.numbered {
		return fmt.Sprintf("2001:db8:d%d::1/64", i)
	}
	return ""
}

// ifname is what FRR on R calls link i: its veth, or its mirror.
func (l *fabricLab) ifname(i int) string {
	if l.kernel {
		return fmt.Sprintf("r%d", i)
	}
	return fmt.Sprintf("km%d", i)
}

// dev is what R's routes call link i: the veth in the kernel, urouter's
// link in urouter.
func (l *fabricLab) dev(i int) string {
	if l.kernel {
		return fmt.Sprintf("r%d", i)
	}
	return fmt.Sprintf("lan%d", i)
}

// writeZebra writes zebra's configuration on R (with FPM to urouter in
// urouter mode) and on the peers; peerBody's %s is the peer's interface,
// eth0.
func (l *fabricLab) writeZebra(routerBody, peerBody string) {
	if !l.kernel {
		routerBody = "fpm address 127.0.0.1 port 2620\n" + routerBody
	}
	l.router.write("zebra", routerBody)
	for _, p := range l.peers {
		p.write("zebra", strings.ReplaceAll(peerBody, "%s", "eth0"))
	}
}

// startFRR starts zebra on every node, then daemons (their configurations
// written), and notes the time as started.
func (l *fabricLab) startFRR(daemons ...string) {
	l.started = time.Now()
	var zebraArgs []string
	if !l.kernel {
		zebraArgs = []string{"-M", "dplane_fpm_nl"}
	}
	l.router.start("zebra", zebraArgs...)
	for _, p := range l.peers {
		p.start("zebra")
	}
	for _, n := range append([]*frrNode{l.router}, l.peers...) {
		for _, d := range daemons {
			n.start(d)
		}
	}
}

// routes are R's routes of proto as `ip -6 route` prints them (urouter's
// from its client, the same format).
func (l *fabricLab) routes(proto string) string {
	if l.kernel {
		o, _, _ := runCmd("ip", "-n", l.r, "-6", "route", "show", "proto", proto)
		return o
	}
	o, _, _ := l.d.run("route", "show", "proto", proto)
	return o
}

var viaDev = regexp.MustCompile(`via (\S+) dev (\S+)`)

// nexthops are R's nexthops for prefix of proto, "ADDR dev DEV" sorted.
func (l *fabricLab) nexthops(proto, prefix string) []string {
	var nhs []string
	for _, m := range viaDev.FindAllStringSubmatch(routeBlock(l.routes(proto), prefix), -1) {
		nhs = append(nhs, m[1]+" dev "+m[2])
	}
	slices.Sort(nhs)
	return nhs
}

// via is the nexthop "LLA dev DEV" of R's link i to peer i.
func (l *fabricLab) via(i int) string {
	return linkLocalOf(l.t, l.peers[i-1].ns, "eth0") + " dev " + l.dev(i)
}

// ping pings dst from H, across R: an answer, one router crossed.
func (l *fabricLab) ping(dst string) error { return pingAcross(l.h, dst, "3", "1") }

// waitFor polls cond until it holds and returns how long that took; after
// limit the test fails with what the lab's daemons say.
func (l *fabricLab) waitFor(what string, limit time.Duration, cond func() bool) time.Duration {
	l.t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			l.t.Fatalf("waited %v for %s\n%s", limit, what, l.state())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// waitRoutes is waitFor for R's routes, recording when they were there
// and, in urouter mode, when zebra had put prefix in R's kernel: urouter
// hears of routes over FPM, whose first connection dplane_fpm_nl makes
// 3 s after zebra starts, so a route made sooner waits for it.
func (l *fabricLab) waitRoutes(fig func(string, any), what string, limit time.Duration, prefix string, cond func() bool) {
	l.t.Helper()
	var zebra time.Duration
	l.waitFor(what, limit, func() bool {
		if o, _, _ := runCmd("ip", "-n", l.r, "-6", "route", "show", prefix); zebra == 0 && strings.Contains(o, "via") {
			zebra = time.Since(l.started)
		}
		return cond()
	})
	fig("routes in R's table after", time.Since(l.started))
	fig("  (the first in R's kernel, by zebra, after)", zebra)
}

// state is what the lab's daemons say, for a failure: R's routes, the
// shows of every node, FRR's logs' ends and urouter's log.
func (l *fabricLab) state() string {
	var b strings.Builder
	for _, proto := range []string{"bgp", "isis"} {
		fmt.Fprintf(&b, "R's %s routes:\n%s", proto, l.routes(proto))
	}
	if !l.kernel {
		k, _, _ := runCmd("ip", "-n", l.r, "-6", "route", "show")
		m, _, _ := l.d.run("-s", "link", "show")
		fmt.Fprintf(&b, "R's kernel routes:\n%s\nurouter's links:\n%s\n", k, m)
	}
	for _, n := range append([]*frrNode{l.router}, l.peers...) {
		if len(n.procs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "=== %s\n", n.ns)
		for _, c := range l.shows {
			fmt.Fprintf(&b, "--- %s\n%s", c, n.vtysh(c))
		}
		b.WriteString(n.logs())
	}
	if l.d != nil {
		fmt.Fprintf(&b, "=== urouter's log:\n%s", tail(l.d.log.String(), 60))
	}
	return b.String()
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "")
}

// frrNode is one FRR instance: the daemons of a namespace, with their
// configurations, sockets, pid files and logs in a directory of their own
// and their own pathspace (-N), so that nothing of one is another's.
type frrNode struct {
	t     *testing.T
	ns    string
	dir   string
	procs map[string]*proc
}

func newFRRNode(t *testing.T, ns string) *frrNode {
	n := &frrNode{t: t, ns: ns, dir: t.TempDir(), procs: map[string]*proc{}}
	if err := os.Chmod(n.dir, 0o755); err != nil { // FRR's daemons drop to user frr
		t.Fatal(err)
	}
	return n
}

// write writes daemon's configuration: a log file of its own, then body.
func (n *frrNode) write(daemon, body string) {
	conf := fmt.Sprintf("hostname %s\nlog file %s debugging\n%s", n.ns, n.path(daemon+".log"), body)
	if err := os.WriteFile(n.path(daemon+".conf"), []byte(conf), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

func (n *frrNode) path(name string) string { return filepath.Join(n.dir, name) }

// start starts daemon in the foreground and waits until it answers on
// its vty socket. A daemon serves its vty last: an answering zebra has
// read the interfaces and listens for its clients (a client that came
// too early would retry only seconds later).
func (n *frrNode) start(daemon string, extra ...string) {
	n.t.Helper()
	vty := n.path(daemon + ".vty")
	_ = os.Remove(vty) // a killed daemon's; so that the wait is for the new one's
	args := append([]string{"-N", n.ns, "-u", "root", "-g", "frrvty", "--vty_socket", n.dir,
		"-f", n.path(daemon + ".conf"), "-i", n.path(daemon + ".pid"), "-z", n.path("zserv.api")}, extra...)
	if daemon == "bfdd" {
		args = append(args, "--bfdctl", n.path("bfdd.sock")) // else one under /var/run/frr
	}
	n.procs[daemon] = startIn(n.t, n.ns, filepath.Join(frrDir, daemon), args...)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if o, _, st := runCmd("ip", "netns", "exec", n.ns, "vtysh", "--vty_socket", n.dir, "-d", daemon, "-c", "show version"); st == 0 && strings.Contains(o, "FRRouting") {
			break
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("%s in %s does not answer:\n%s", daemon, n.ns, n.logs())
		}
	}
}

// kill kills daemon with SIGKILL, as a crash.
func (n *frrNode) kill(daemon string) {
	p := n.procs[daemon]
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Wait() // killed: its status is no news
}

// vtysh runs cmds in vtysh on the node and returns what they print.
// vtysh finds the daemons by --vty_socket alone: with -N it would look
// in a directory of that name under it.
func (n *frrNode) vtysh(cmds ...string) string {
	args := []string{"netns", "exec", n.ns, "vtysh", "--vty_socket", n.dir}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	o, e, _ := runCmd("ip", args...)
	return o + e
}

// json runs cmd (a show ... json) and decodes its output into v.
func (n *frrNode) json(cmd string, v any) error {
	o := n.vtysh(cmd)
	if err := json.Unmarshal([]byte(o), v); err != nil {
		return fmt.Errorf("%s in %s: %v: %s", cmd, n.ns, err, o)
	}
	return nil
}

// logs are the ends of the node's daemons' logs.
func (n *frrNode) logs() string {
	var b strings.Builder
	for d, p := range n.procs {
		l, _ := os.ReadFile(n.path(d + ".log"))
		fmt.Fprintf(&b, "--- %s's %s.log:\n%s", n.ns, d, tail(string(l), 60))
		if p.cmd.ProcessState != nil { // only an ended daemon's output can be read
			fmt.Fprintf(&b, "--- %s ended: %s\n%s", d, p.cmd.ProcessState, p.out)
		}
	}
	return b.String()
}

// bgpSummary is R's (or a peer's) BGP IPv6 peers by name, as `show bgp
// ipv6 unicast summary json` says.
func (n *frrNode) bgpSummary() map[string]bgpPeer {
	var sum struct {
		Peers map[string]bgpPeer `json:"peers"`
	}
	if err := n.json("show bgp ipv6 unicast summary json", &sum); err != nil {
		return nil
	}
	return sum.Peers
}

// established says whether the node's BGP sessions to peers are all
// Established.
func (n *frrNode) established(peers ...string) bool {
	sum := n.bgpSummary()
	for _, p := range peers {
		if sum[p].State != "Established" {
			return false
		}
	}
	return true
}

// inModes runs test in each of R's modes as subtests, kernel first, and
// logs at the end the figures they recorded (fig(name, value)) side by
// side.
func inModes(t *testing.T, test func(t *testing.T, kernel bool, fig func(name string, v any))) {
	var names []string
	vals := map[string]map[string]any{}
	for _, mode := range []string{"kernel", "urouter"} {
		t.Run(mode, func(t *testing.T) {
			test(t, mode == "kernel", func(name string, v any) {
				if d, ok := v.(time.Duration); ok {
					v = d.Round(time.Millisecond)
				}
				if vals[name] == nil {
					names = append(names, name)
					vals[name] = map[string]any{}
				}
				vals[name][mode] = v
			})
		})
	}
	show := func(v any) any {
		if v == nil {
			return "-"
		}
		return v
	}
	for _, n := range names {
		t.Logf("%-44s kernel %-10v urouter %v", n, show(vals[n]["kernel"]), show(vals[n]["urouter"]))
	}
}
