package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// etherLab is urouter as a container's router on Ethernet links, with
// Linux hosts as its neighbours:
//
//	e1 2001:db8:a1::2 (static)  ==veth eth0/r1== lan1 (AF_PACKET on r1) [urouter in uro-er]
//	e2 SLAAC from urouter's RAs ==veth eth0/r2== lan2 (AF_PACKET on r2)
//	e3 2001:db8:a3::2 (static)  ~~TAP lan3~~     lan3 (the daemon's TAP, moved into e3)
type etherLab struct {
	d              *daemon
	r, e1, e2, e3  string
	e2addr         string // e2's autoconfigured address
	mac            map[string]string
	lanMAC, lanLLA map[string]string // the router's MAC and link-local address per link
}

func newEtherLab(t *testing.T, flags []string, extra ...string) *etherLab {
	t.Helper()
	needRoot(t)
	l := &etherLab{r: newNetns(t, "uro-er"), e1: newNetns(t, "uro-e1"), e2: newNetns(t, "uro-e2"), e3: newNetns(t, "uro-e3"),
		mac: map[string]string{}, lanMAC: map[string]string{}, lanLLA: map[string]string{}}
	for i, h := range []string{l.e1, l.e2} {
		r := "r" + strconv.Itoa(i+1)
		mustRun(t, "ip", "-n", l.r, "link", "add", r, "type", "veth", "peer", "name", "eth0", "netns", h)
		mustRun(t, "ip", "netns", "exec", h, "sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0")
	}
	l.d = startDaemonFlags(t, l.r, flags, append([]string{
		"link add lan1 type host dev r1",
		"link add lan2 type host dev r2",
		"link add lan3 type tap netns " + l.e3,
		"link set lan1 up", "link set lan2 up", "link set lan3 up",
		"address add 2001:db8:a1::1/64 dev lan1",
		"address add 2001:db8:a2::1/64 dev lan2",
		"address add 2001:db8:a3::1/64 dev lan3",
		"ra set dev lan2 on max-interval 4",
	}, extra...)...)
	mustRun(t, "ip", "netns", "exec", l.e3, "sysctl", "-qw", "net.ipv6.conf.lan3.accept_dad=0")
	for _, h := range []struct{ ns, dev, addr, gw string }{
		{l.e1, "eth0", "2001:db8:a1::2/64", "2001:db8:a1::1"},
		{l.e3, "lan3", "2001:db8:a3::2/64", "2001:db8:a3::1"},
	} {
		mustRun(t, "ip", "-n", h.ns, "addr", "add", h.addr, "dev", h.dev, "nodad")
		mustRun(t, "ip", "-n", h.ns, "link", "set", h.dev, "up")
		mustRun(t, "ip", "-n", h.ns, "-6", "route", "add", "default", "via", h.gw)
	}
	mustRun(t, "ip", "-n", l.e2, "link", "set", "eth0", "up") // solicits urouter's RA
	for _, c := range []struct{ ns, dev string }{{l.e1, "eth0"}, {l.e2, "eth0"}, {l.e3, "lan3"}} {
		l.mac[c.ns] = ifaceMAC(t, c.ns, c.dev)
	}
	out, _, _ := l.d.run("-j", "address", "show")
	var links []struct {
		Ifname  string `json:"ifname"`
		Address string `json:"address"`
		Addrs   []struct {
			Local string `json:"local"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		t.Fatalf("address show -j: %v\n%s", err, out)
	}
	for _, k := range links {
		l.lanMAC[k.Ifname] = k.Address
		for _, a := range k.Addrs {
			if strings.HasPrefix(a.Local, "fe80:") {
				l.lanLLA[k.Ifname] = a.Local
			}
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for l.e2addr == "" {
		out := mustRun(t, "ip", "-n", l.e2, "-6", "addr", "show", "dev", "eth0", "scope", "global")
		if m := regexp.MustCompile(`inet6 (2001:db8:a2:[0-9a-f:]+)/64 scope global dynamic`).FindStringSubmatch(out); m != nil {
			l.e2addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("e2 did not autoconfigure from urouter's RA:\n%s", out)
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	return l
}

func ifaceMAC(t *testing.T, ns, dev string) string {
	out := mustRun(t, "ip", "-n", ns, "-j", "link", "show", dev)
	var ls []struct {
		Address string `json:"address"`
	}
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) != 1 {
		t.Fatalf("ip link show %s: %v %s", dev, err, out)
	}
	return ls[0].Address
}

func (l *etherLab) in(ns string, args ...string) (string, string, int) {
	return runCmd("ip", append([]string{"netns", "exec", ns}, args...)...)
}

// TestEthernetNeighbours: urouter is an IPv6 neighbour and router to
// Linux hosts on veth and TAP links: it answers their solicitations (the
// hosts see it REACHABLE with the router flag), resolves them (its neigh
// show lists them), autoconfigures one by its RAs, forwards ping6 and
// iperf3 between them, answers ndisc6 and rdisc6, holds packets while it
// resolves, answers Address Unreachable when resolution fails, and
// redirects a host to a better first hop.
func TestEthernetNeighbours(t *testing.T) {
	parallel(t)
	l := newEtherLab(t, nil, "ntable change name ndisc_cache dev lan3 retrans 300")
	for _, dst := range []string{l.e2addr, "2001:db8:a3::2"} {
		out, _, st := l.in(l.e1, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", dst)
		if st != 0 || !strings.Contains(out, "ttl=63") {
			t.Fatalf("ping6 e1 -> %s through urouter:\n%s", dst, out)
		}
	}

	checkNeighbourViews(t, l)

	for _, dst := range []struct{ ns, addr string }{{l.e3, "2001:db8:a3::2"}, {l.e2, l.e2addr}} {
		l.in(dst.ns, "iperf3", "-s", "-1", "-D", "-p", "5299")
		time.Sleep(300 * time.Millisecond)
		out, errs, st := l.in(l.e1, "iperf3", "-6", "-c", dst.addr, "-p", "5299", "-t", "2", "-J")
		bps, ok := iperfReceived(out)
		if st != 0 || !ok {
			t.Fatalf("iperf3 to %s: %s %s", dst.addr, out, errs)
		}
		t.Logf("TCP e1 -> %s over Ethernet: %.2f Gbit/s", dst.addr, bps/1e9)
		if bps < 1e8 {
			t.Errorf("TCP to %s: %.0f bit/s", dst.addr, bps)
		}
	}

	// a neighbour that answers only its second solicitation: what waited
	// for it arrives
	l.in(l.e3, "sh", "-c", "sleep 0.4; ip addr add 2001:db8:a3::7/64 dev lan3 nodad")
	out, _, _ := l.in(l.e1, "ping", "-6", "-c", "5", "-i", "0.02", "-W", "3", "2001:db8:a3::7")
	if !strings.Contains(out, " 5 received") {
		t.Errorf("packets queued while urouter resolved 2001:db8:a3::7 were lost:\n%s", out)
	}
	// one that never answers: Address Unreachable, after 3 solicitations
	start := time.Now()
	out, _, _ = l.in(l.e1, "ping", "-6", "-c", "1", "-W", "4", "2001:db8:a3::99")
	if !strings.Contains(out, "From 2001:db8:a3::1 icmp_seq=1 Destination unreachable: Address unreachable") {
		t.Errorf("ping to a neighbour that does not answer:\n%s", out)
	}
	if took := time.Since(start); took < 800*time.Millisecond || took > 3*time.Second {
		t.Errorf("Address Unreachable after %v; mcast_solicit 3 with retrans 300 ms fail at 900 ms", took)
	}
	out, _, _ = l.d.run("neigh", "show", "2001:db8:a3::99")
	if out != "2001:db8:a3::99 dev lan3 FAILED \n" {
		t.Errorf("neigh show of the neighbour that did not answer: %q", out)
	}

	// an address e1 already has fails urouter's DAD
	if _, e, st := l.d.run("address", "add", "2001:db8:a1::2/64", "dev", "lan1"); st != 0 {
		t.Fatalf("address add: %s", e)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _, _ = l.d.run("address", "show", "dev", "lan1")
		if strings.Contains(out, "inet6 2001:db8:a1::2/64 scope global dadfailed tentative") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an address e1 has passed DAD:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	l.d.run("address", "del", "2001:db8:a1::2/64", "dev", "lan1")

	// on the interface: the kernel's IPv6 off, the groups joined; back on
	// once the link goes
	if v := strings.TrimSpace(mustRun(t, "ip", "netns", "exec", l.r, "sysctl", "-n", "net.ipv6.conf.r1.disable_ipv6")); v != "1" {
		t.Errorf("disable_ipv6 on r1 is %s while urouter has it", v)
	}
	out = mustRun(t, "ip", "-n", l.r, "maddress", "show", "dev", "r1")
	for _, g := range []string{"33:33:00:00:00:01", "33:33:00:00:00:02", "33:33:ff:00:00:01"} {
		if !strings.Contains(out, "link  "+g) {
			t.Errorf("r1 has not joined %s:\n%s", g, out)
		}
	}
	if _, e, st := l.d.run("link", "del", "lan1"); st != 0 {
		t.Fatalf("link del: %s", e)
	}
	if v := strings.TrimSpace(mustRun(t, "ip", "netns", "exec", l.r, "sysctl", "-n", "net.ipv6.conf.r1.disable_ipv6")); v != "0" {
		t.Errorf("disable_ipv6 on r1 is %s after the link went; it was 0", v)
	}
}

// checkNeighbourViews: the hosts see urouter as a REACHABLE router (e2's
// default route through its link-local address), urouter's neigh show
// lists the hosts, and ndisc6 and rdisc6 get its answers.
func checkNeighbourViews(t *testing.T, l *etherLab) {
	t.Helper()
	out := mustRun(t, "ip", "-n", l.e1, "-6", "neigh", "show", "2001:db8:a1::1", "dev", "eth0")
	if want := "2001:db8:a1::1 lladdr " + l.lanMAC["lan1"] + " router REACHABLE"; !strings.Contains(out, want) {
		t.Errorf("e1's neighbour entry for urouter: %q, want %q", out, want)
	}
	out = mustRun(t, "ip", "-n", l.e2, "-6", "route", "show", "default")
	if !strings.Contains(out, "via "+l.lanLLA["lan2"]+" dev eth0 proto ra") {
		t.Errorf("e2's default route is not through urouter's link-local %s: %q", l.lanLLA["lan2"], out)
	}
	for _, c := range []struct{ dev, addr, mac string }{{"lan1", "2001:db8:a1::2", l.mac[l.e1]}, {"lan3", "2001:db8:a3::2", l.mac[l.e3]}} {
		out, _, _ := l.d.run("neigh", "show", "dev", c.dev)
		if !regexp.MustCompile(regexp.QuoteMeta(c.addr+" lladdr "+c.mac+" ") + `(REACHABLE|STALE|DELAY|PROBE) \n`).MatchString(out) {
			t.Errorf("urouter's neigh show dev %s lacks %s at %s:\n%s", c.dev, c.addr, c.mac, out)
		}
	}
	out, _, _ = l.d.run("-j", "neigh", "show")
	var entries []struct {
		Dst, Dev, Lladdr string
		State            []string
	}
	if err := json.Unmarshal([]byte(out), &entries); err != nil || len(entries) < 3 {
		t.Errorf("neigh show -j: %v %s", err, out)
	}

	out, _, st := l.in(l.e1, "ndisc6", "-1", "-r", "3", "-w", "1000", "2001:db8:a1::1", "eth0")
	if st != 0 || !strings.Contains(strings.ToLower(out), "target link-layer address: "+l.lanMAC["lan1"]) {
		t.Errorf("ndisc6 2001:db8:a1::1 (urouter's MAC %s):\n%s", l.lanMAC["lan1"], out)
	}
	out, _, st = l.in(l.e2, "rdisc6", "-1", "-r", "3", "-w", "2000", "eth0")
	for _, want := range []string{" Prefix                   : 2001:db8:a2::/64", "Router lifetime           :           12 (0x0000000c) seconds",
		"Hop limit                 :           64 ", "Router preference         :       medium", " from " + l.lanLLA["lan2"]} {
		if st != 0 || !strings.Contains(out, want) {
			t.Errorf("rdisc6 eth0 lacks %q:\n%s", want, out)
		}
	}
}

// TestRedirect: a packet e1 sends urouter that goes back out of lan1
// (through a link-local gateway there) is forwarded and earns e1 a
// Redirect naming that gateway, within Linux's limit of a burst of 6 and
// one a second.
func TestRedirect(t *testing.T) {
	measures(t)
	l := newEtherLab(t, nil)
	e1LL := ""
	if m := regexp.MustCompile(`inet6 (fe80::[0-9a-f:]+)/64`).FindStringSubmatch(mustRun(t, "ip", "-n", l.e1, "-6", "addr", "show", "dev", "eth0")); m != nil {
		e1LL = m[1]
	}
	if _, e, st := l.d.run("route", "add", "2001:db8:c0::/64", "via", e1LL, "dev", "lan1"); st != 0 {
		t.Fatalf("route add: %s", e)
	}
	redirects := capture(t, l.e1, "eth0", func(p []byte) bool { return len(p) > 48 && p[6] == 58 && p[40] == 137 })
	l.in(l.e1, "ping", "-6", "-c", "20", "-i", "0.01", "-W", "1", "2001:db8:c0::1")
	got := redirects(20, 2*time.Second)
	if len(got) < 1 || len(got) > 7 {
		t.Fatalf("%d redirects for 20 packets in 0.2 s; Linux sends a burst of 6 and one a second", len(got))
	}
	p := got[0]
	src, dst := netip.AddrFrom16([16]byte(p[8:24])), netip.AddrFrom16([16]byte(p[24:40]))
	target, dest := netip.AddrFrom16([16]byte(p[48:64])), netip.AddrFrom16([16]byte(p[64:80]))
	if p[7] != 255 || src.String() != l.lanLLA["lan1"] || dst.String() != "2001:db8:a1::2" ||
		target.String() != e1LL || dest.String() != "2001:db8:c0::1" {
		t.Errorf("redirect hop limit %d from %s to %s, target %s, destination %s; want 255, %s, 2001:db8:a1::2, %s, 2001:db8:c0::1",
			p[7], src, dst, target, dest, l.lanLLA["lan1"], e1LL)
	}
	opts := p[80:]
	var kinds []byte
	for len(opts) >= 8 && opts[1] != 0 {
		kinds = append(kinds, opts[0])
		if opts[0] == 2 && net.HardwareAddr(opts[2:8]).String() != l.mac[l.e1] {
			t.Errorf("target link-layer address %s, want e1's %s", net.HardwareAddr(opts[2:8]), l.mac[l.e1])
		}
		opts = opts[int(opts[1])*8:]
	}
	if fmt.Sprint(kinds) != "[2 4]" {
		t.Errorf("redirect options %v, want the target's link-layer address and the redirected header [2 4]", kinds)
	}
}

// TestIPv6GivenBack: an interface urouter takes has its kernel IPv6
// switched off while it is attached and given back as it was, also after
// a daemon killed with SIGKILL: the next daemon on the same socket
// restores it at start, and one that attaches it again gives back what
// the interface had before urouter ever took it.
func TestIPv6GivenBack(t *testing.T) {
	parallel(t)
	needRoot(t)
	r, h := newNetns(t, "uro-er"), newNetns(t, "uro-e1")
	mustRun(t, "ip", "-n", r, "link", "add", "r1", "type", "veth", "peer", "name", "eth0", "netns", h)
	disabled := func() string {
		return strings.TrimSpace(mustRun(t, "ip", "netns", "exec", r, "cat", "/proc/sys/net/ipv6/conf/r1/disable_ipv6"))
	}
	kill := func(d *daemon) {
		_ = syscall.Kill(d.cmd.Process.Pid, syscall.SIGKILL)
		_ = d.cmd.Wait()
	}
	sock := filepath.Join(t.TempDir(), "urouter.sock")
	attach := []string{"link add lan1 type host dev r1", "link set lan1 up"}
	if got := disabled(); got != "0" {
		t.Fatalf("r1's disable_ipv6 before: %s", got)
	}
	d := startDaemonAt(t, r, sock, nil, attach...)
	if got := disabled(); got != "1" {
		t.Fatalf("r1's disable_ipv6 while attached: %s, want 1", got)
	}
	kill(d)
	if got := disabled(); got != "1" {
		t.Fatalf("r1's disable_ipv6 after kill -9: %s (the kernel kept it, as expected: 1)", got)
	}
	// the next daemon attaches it again, then lets it go
	d = startDaemonAt(t, r, sock, nil, attach...)
	if _, e, st := d.run("link", "del", "lan1"); st != 0 {
		t.Fatalf("link del: %s", e)
	}
	if got := disabled(); got != "0" {
		t.Errorf("r1's disable_ipv6 after the next daemon's link del: %s, want what it had before: 0", got)
	}
	// renamed while attached: given back by its new name, and the link
	// deleted without an error
	d.run("link", "add", "lan1", "type", "host", "dev", "r1")
	mustRun(t, "ip", "-n", r, "link", "set", "r1", "down")
	mustRun(t, "ip", "-n", r, "link", "set", "r1", "name", "r1x")
	if _, e, st := d.run("link", "del", "lan1"); st != 0 {
		t.Errorf("link del after the interface was renamed: %d %s", st, e)
	}
	mustRun(t, "ip", "-n", r, "link", "set", "r1x", "name", "r1")
	if got := disabled(); got != "0" {
		t.Errorf("r1's disable_ipv6 after its link was deleted under another name: %s, want 0", got)
	}
	// killed while attached again: the next start gives it back at once
	d.run("link", "add", "lan1", "type", "host", "dev", "r1")
	kill(d)
	startDaemonAt(t, r, sock, nil)
	if got := disabled(); got != "0" {
		t.Errorf("r1's disable_ipv6 after a daemon started without it: %s, want 0", got)
	}
}
