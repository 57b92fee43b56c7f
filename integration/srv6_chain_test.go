package integration

import (
	"regexp"
	"strings"
	"testing"
)

// The kernel as SRv6's oracle, in a chain A — R1 — R2 — R3 — B: R1 is
// the head-end (H.Encaps through R2's End SID fc00:2::e and R3's
// decapsulating SID fc00:3::d6), R2 is End, R3 decapsulates and
// forwards to B. This machine's kernel has no seg6 routes, so it cannot
// be the head-end (R1 is urouter in every run), but it is End and the
// decapsulation for SIDs that are its own addresses (ipv6_srh_rcv,
// seg6_enabled): urouter takes R2, R3, both, or neither, and every run
// must look the same on every link.

// chainSeen is what a run of the chain showed: each link's first packet
// of the echo (tcpdump -v, the flow label and echo id left out), the
// Time Exceeded that R2 sends R1, and traceroute6 from A.
type chainSeen struct {
	links    [3]string // R1 to R2, R2 to R3, R3 to B
	exceeded string
	trace    string
}

// TestSRv6ChainOracle: with urouter as R2, R3, both or neither, A pings
// and traceroutes B and pushes TCP to it, and tcpdump on each link sees
// the same headers (SRH, Segments Left, destination, hop limits) and the
// same Time Exceeded, as with the kernel in that place.
func TestSRv6ChainOracle(t *testing.T) {
	parallel(t)
	needRoot(t)
	runs := []struct {
		name   string
		r2, r3 bool // urouter's
	}{{"kernel R2 R3", false, false}, {"urouter R2", true, false}, {"urouter R3", false, true}, {"urouter R2 R3", true, true}}
	seen := make([]chainSeen, len(runs))
	for i, run := range runs {
		t.Run(run.name, func(t *testing.T) { seen[i] = runChain(t, run.r2, run.r3) })
	}
	ref := seen[0]
	if !strings.Contains(ref.links[1], "segleft=0") || !strings.Contains(ref.links[2], "2001:db8:a::2 > 2001:db8:b::2: [icmp6 sum ok] ICMP6, echo request") ||
		!strings.Contains(ref.trace, "2001:db8:b::2") {
		t.Fatalf("the kernel's run did not cross the chain:\n%+v", ref)
	}
	for i, s := range seen[1:] {
		for l, name := range []string{"R1 to R2", "R2 to R3", "R3 to B"} {
			if s.links[l] != ref.links[l] {
				t.Errorf("%s, link %s:\n%s\nthe kernel's:\n%s", runs[i+1].name, name, s.links[l], ref.links[l])
			}
		}
		if s.exceeded != ref.exceeded {
			t.Errorf("%s: R2's Time Exceeded:\n%s\nthe kernel's:\n%s", runs[i+1].name, s.exceeded, ref.exceeded)
		}
		if s.trace != ref.trace {
			t.Errorf("%s: traceroute6:\n%s\nthe kernel's:\n%s", runs[i+1].name, s.trace, ref.trace)
		}
	}
}

// chainHop is one router of the chain: its namespace, its links' peers
// and addresses, its routes (urouter's words; the kernel's are the same
// after `ip -6 route add`), and its SID.
type chainHop struct {
	ns     string
	addrs  [2]string // e1's, e2's
	routes []string
	sid    string // the SID, a /128
	action string // its behaviour as urouter's seg6local
}

// runChain builds the chain, urouter as R2 and R3 as said, and returns
// what it showed.
func runChain(t *testing.T, r2urouter, r3urouter bool) chainSeen {
	a, b := newNetns(t, "uro-ca"), newNetns(t, "uro-cb")
	r1 := chainHop{ns: newNetns(t, "uro-c1"), addrs: [2]string{"2001:db8:a::1/64", "2001:db8:12::1/64"},
		routes: []string{"fc00::/16 via 2001:db8:12::2 dev e2", "2001:db8:23::/64 via 2001:db8:12::2 dev e2",
			"2001:db8:b::/64 encap seg6 mode encap segs fc00:2::e,fc00:3::d6 dev e2"}}
	r2 := chainHop{ns: newNetns(t, "uro-c2"), addrs: [2]string{"2001:db8:12::2/64", "2001:db8:23::2/64"},
		routes: []string{"fc00:3::/48 via 2001:db8:23::3 dev e2", "2001:db8:b::/64 via 2001:db8:23::3 dev e2",
			"2001:db8:a::/64 via 2001:db8:12::1 dev e1"}, sid: "fc00:2::e", action: "End"}
	r3 := chainHop{ns: newNetns(t, "uro-c3"), addrs: [2]string{"2001:db8:23::3/64", "2001:db8:b::1/64"},
		routes: []string{"2001:db8:a::/64 via 2001:db8:23::2 dev e1", "2001:db8:12::/64 via 2001:db8:23::2 dev e1"},
		sid:    "fc00:3::d6", action: "End.DT6 table 254"}
	mustRun(t, "ip", "-n", r1.ns, "link", "add", "e1", "type", "veth", "peer", "name", "eth0", "netns", a)
	mustRun(t, "ip", "-n", r1.ns, "link", "add", "e2", "type", "veth", "peer", "name", "e1", "netns", r2.ns)
	mustRun(t, "ip", "-n", r2.ns, "link", "add", "e2", "type", "veth", "peer", "name", "e1", "netns", r3.ns)
	mustRun(t, "ip", "-n", r3.ns, "link", "add", "e2", "type", "veth", "peer", "name", "eth0", "netns", b)
	for _, h := range []struct{ ns, addr, gw string }{{a, "2001:db8:a::2/64", "2001:db8:a::1"}, {b, "2001:db8:b::2/64", "2001:db8:b::1"}} {
		mustRun(t, "ip", "netns", "exec", h.ns, "sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0")
		mustRun(t, "ip", "-n", h.ns, "addr", "add", h.addr, "dev", "eth0", "nodad")
		mustRun(t, "ip", "-n", h.ns, "link", "set", "eth0", "up")
		mustRun(t, "ip", "-n", h.ns, "link", "set", "lo", "up")
		mustRun(t, "ip", "-n", h.ns, "-6", "route", "add", "default", "via", h.gw)
	}
	r1.urouter(t)
	for _, h := range []struct {
		hop     chainHop
		urouter bool
	}{{r2, r2urouter}, {r3, r3urouter}} {
		if h.urouter {
			h.hop.urouter(t)
		} else {
			h.hop.kernel(t)
		}
	}
	var s chainSeen
	dumps := []*proc{
		startIn(t, r2.ns, "tcpdump", "-nn", "-v", "-t", "-l", "-c", "1", "-i", "e1", "ip6 dst fc00:2::e"),
		startIn(t, r3.ns, "tcpdump", "-nn", "-v", "-t", "-l", "-c", "1", "-i", "e1", "ip6 dst fc00:3::d6"),
		startIn(t, b, "tcpdump", "-nn", "-v", "-t", "-l", "-c", "1", "-i", "eth0", "icmp6 and ip6[40] == 128"),
		startIn(t, r1.ns, "tcpdump", "-nn", "-v", "-t", "-l", "-c", "1", "-i", "e2", "icmp6 and ip6[40] == 3"),
	}
	for _, d := range dumps {
		defer d.stop()
		waitUntil(t, "tcpdump to listen", func() bool { return strings.Contains(d.out.String(), "listening") })
	}
	if out, _, st := runCmd("ip", "netns", "exec", a, "ping", "-6", "-c", "3", "-i", "0.05", "-W", "2", "2001:db8:b::2"); st != 0 {
		t.Fatalf("A to B through the chain:\n%s", out)
	}
	trace, _, _ := runCmd("ip", "netns", "exec", a, "traceroute6", "-n", "-q", "1", "-w", "1", "-m", "5", "2001:db8:b::2")
	_, hops, _ := strings.Cut(trace, "\n") // the first line names a random port
	s.trace = regexp.MustCompile(`  [0-9.]+ ms`).ReplaceAllString(hops, "")
	for i, d := range dumps {
		waitUntil(t, "tcpdump to see its packet", func() bool { return strings.Contains(d.out.String(), "packet captured") })
		if i < 3 {
			s.links[i] = seenPacket(d.out.String())
		} else {
			s.exceeded = seenPacket(d.out.String())
		}
	}
	if bps, ok, out := iperfTo(t, a, b, "2001:db8:b::2"); !ok || bps < 1e6 { // functional, as TestSRv6HeadEnd's
		t.Errorf("iperf3 from A to B through the chain: %.0f bit/s\n%s", bps, out)
	}
	return s
}

// seenPacket is tcpdump's lines of a packet, without what differs from
// run to run of the same packets: flow labels (auto_flowlabels hashes
// with a seed of each namespace's), echo identifiers, checksums.
func seenPacket(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "IP6") || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
			lines = append(lines, l)
		}
	}
	s := strings.Join(lines, "\n")
	s = regexp.MustCompile(`flowlabel 0x[0-9a-f]+`).ReplaceAllString(s, "flowlabel X")
	s = regexp.MustCompile(`id \d+, seq \d+`).ReplaceAllString(s, "id X, seq X")
	return regexp.MustCompile(`cksum 0x[0-9a-f]+`).ReplaceAllString(s, "cksum X")
}

// urouter runs the hop as urouter: its links on the veths, its routes,
// its SID a seg6local route.
func (h chainHop) urouter(t *testing.T) {
	var conf []string
	for i, dev := range []string{"e1", "e2"} {
		conf = append(conf, "link add "+dev+" type host dev "+dev, "link set "+dev+" up", "address add "+h.addrs[i]+" dev "+dev)
	}
	for _, r := range h.routes {
		conf = append(conf, "route add "+r)
	}
	if h.sid != "" {
		conf = append(conf, "route add "+h.sid+"/128 encap seg6local action "+h.action+" dev e2")
	}
	startDaemon(t, h.ns, conf...)
}

// kernel runs the hop as the kernel: forwarding, SRHs taken on every
// link (seg6_enabled), its SID an address of its own.
func (h chainHop) kernel(t *testing.T) {
	mustRun(t, "ip", "netns", "exec", h.ns, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1", "net.ipv6.conf.all.seg6_enabled=1",
		"net.ipv6.conf.e1.seg6_enabled=1", "net.ipv6.conf.e2.seg6_enabled=1", "net.ipv6.conf.e1.accept_dad=0", "net.ipv6.conf.e2.accept_dad=0")
	for i, dev := range []string{"e1", "e2"} {
		mustRun(t, "ip", "-n", h.ns, "addr", "add", h.addrs[i], "dev", dev, "nodad")
		mustRun(t, "ip", "-n", h.ns, "link", "set", dev, "up")
	}
	mustRun(t, "ip", "-n", h.ns, "link", "set", "lo", "up")
	mustRun(t, "ip", "-n", h.ns, "addr", "add", h.sid+"/128", "dev", "lo")
	for _, r := range h.routes {
		mustRun(t, "ip", append([]string{"-n", h.ns, "-6", "route", "add"}, strings.Fields(r)...)...)
	}
}
