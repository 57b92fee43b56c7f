package integration

import (
	"encoding/binary"
	"net"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// lab is urouter between host namespaces on TUN links:
//
//	h1 (2001:db8:1::2) --ta-- urouter --tb (mtu 1280)-- h2 (2001:db8:2::2)
//	                             \--tc (gso off)-- h3 (2001:db8:3::2)
//
// The daemon runs in its own namespace and moves the kernel side of each
// TUN into its host's.
type lab struct {
	d          *daemon
	h1, h2, h3 string
}

func newLab(t *testing.T) *lab {
	t.Helper()
	needRoot(t)
	l := &lab{h1: newNetns(t, "uro-h1"), h2: newNetns(t, "uro-h2"), h3: newNetns(t, "uro-h3")}
	r := newNetns(t, "uro-r")
	for _, h := range []string{l.h1, l.h2, l.h3} {
		mustRun(t, "ip", "netns", "exec", h, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
	}
	l.d = startDaemon(t, r,
		"link add ta type tun netns "+l.h1+" queues 2",
		"link add tb type tun netns "+l.h2+" mtu 1280",
		"link add tc type tun netns "+l.h3+" gso off",
		"link set ta up", "link set tb up", "link set tc up",
		"address add 2001:db8:1::1/64 dev ta",
		"address add 2001:db8:2::1/64 dev tb",
		"address add 2001:db8:3::1/64 dev tc",
		"route add unreachable 2001:db8:66::/48",
		"route add prohibit 2001:db8:67::/48",
		"route add blackhole 2001:db8:68::/48")
	for i, h := range []string{l.h1, l.h2, l.h3} {
		dev := []string{"ta", "tb", "tc"}[i]
		n := strconv.Itoa(i + 1)
		mustRun(t, "ip", "-n", h, "link", "set", dev, "up")
		mustRun(t, "ip", "-n", h, "addr", "add", "2001:db8:"+n+"::2/64", "dev", dev, "nodad")
		mustRun(t, "ip", "-n", h, "-6", "route", "add", "default", "dev", dev)
	}
	// the kernel side of tb keeps 1500: only the router knows the smaller MTU
	return l
}

func (l *lab) in(ns string, args ...string) (string, string, int) {
	return runCmd("ip", append([]string{"netns", "exec", ns}, args...)...)
}

func TestForwarding(t *testing.T) {
	parallel(t)
	l := newLab(t)
	check := func(what string, ok bool, out string) {
		t.Helper()
		if !ok {
			t.Errorf("%s:\n%s", what, out)
		}
	}
	out, _, st := l.in(l.h1, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", "2001:db8:2::2")
	check("ping6 through the router", st == 0 && strings.Contains(out, "ttl=63"), out)
	out, _, st = l.in(l.h1, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", "2001:db8:1::1")
	check("ping6 to the router", st == 0 && strings.Contains(out, "2 received"), out)
	out, _, st = l.in(l.h2, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", "2001:db8:1::1")
	check("ping6 to the router's address on another link", st == 0 && strings.Contains(out, "2 received"), out)

	out, _, _ = l.in(l.h1, "traceroute6", "-n", "-q", "1", "-w", "2", "2001:db8:2::2")
	check("traceroute6 shows the router's hop", regexp.MustCompile(`(?m)^ 1 +2001:db8:1::1 `).MatchString(out) &&
		regexp.MustCompile(`(?m)^ 2 +2001:db8:2::2 `).MatchString(out), out)

	out, _, _ = l.in(l.h1, "ping", "-6", "-c", "1", "-W", "2", "2001:db8:66::1")
	check("an unreachable route", strings.Contains(out, "Destination unreachable: No route"), out)
	out, _, _ = l.in(l.h1, "ping", "-6", "-c", "1", "-W", "2", "2001:db8:99::1")
	check("no route", strings.Contains(out, "Destination unreachable: No route"), out)
	out, _, _ = l.in(l.h1, "ping", "-6", "-c", "1", "-W", "2", "2001:db8:67::1")
	check("a prohibit route", strings.Contains(out, "Destination unreachable: Administratively prohibited"), out)
	out, _, st = l.in(l.h1, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "1", "2001:db8:68::1")
	check("a blackhole is silent", st != 0 && strings.Contains(out, "100% packet loss") && !strings.Contains(out, "nreachable"), out)
	out, _, _ = l.in(l.h1, "ping", "-6", "-c", "1", "-W", "2", "-t", "1", "2001:db8:2::2")
	check("hop limit 1 expires", strings.Contains(out, "Time exceeded: Hop limit"), out)
	out, _, _ = l.in(l.h1, "ping", "-6", "-c", "1", "-W", "2", "-s", "1400", "-M", "do", "2001:db8:2::2")
	check("too big for the egress", strings.Contains(out, "Packet too big: mtu=1280"), out)
	out, _, _ = l.in(l.h1, "tracepath", "-6", "-n", "2001:db8:2::2")
	check("tracepath6 finds the path MTU", strings.Contains(out, "pmtu 1280"), out)
	out, _, _ = l.in(l.h1, "ping", "-6", "-c", "1", "-W", "2", "2001:db8:3::2")
	check("ping6 over the link without offloads", strings.Contains(out, "1 received"), out)

	stats, _, _ := l.d.run("-s", "link", "show", "ta")
	for _, want := range []string{"drop no_route ", "drop prohibited 1", "drop blackhole 2", "drop hop_limit ", "drop too_big "} {
		if !strings.Contains(stats, want) {
			t.Errorf("link show -s ta lacks %q:\n%s", want, stats)
		}
	}
}

// TestThroughput pushes TCP through the router with iperf3, into the
// link with offloads (super-packets pass whole) and the one without
// (the router segments them).
func TestThroughput(t *testing.T) {
	measures(t)
	l := newLab(t)
	for _, c := range []struct{ ns, addr string }{{l.h2, "2001:db8:2::2"}, {l.h3, "2001:db8:3::2"}} {
		srv := "-s -1 -D -p 5299"
		l.in(c.ns, strings.Fields("iperf3 "+srv)...)
		time.Sleep(300 * time.Millisecond)
		out, errs, st := l.in(l.h1, "iperf3", "-6", "-c", c.addr, "-p", "5299", "-t", "2", "-J")
		if st != 0 {
			t.Fatalf("iperf3 to %s: %s %s", c.addr, out, errs)
		}
		bps, ok := iperfReceived(out)
		if !ok {
			t.Fatalf("iperf3 output: %s", out)
		}
		t.Logf("TCP to %s: %.2f Gbit/s", c.addr, bps/1e9)
		if bps < 1e8 {
			t.Errorf("TCP to %s: %.0f bit/s", c.addr, bps)
		}
	}
}

// TestMalformed writes broken packets straight into the TUN (from the
// host side, with a packet socket): they are counted and dropped, while
// valid packets with long or unknown extension-header chains are
// forwarded, and the router goes on forwarding.
func TestMalformed(t *testing.T) {
	parallel(t)
	l := newLab(t)
	src := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 15: 2}
	dst := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 2, 15: 2}
	valid := func(next byte, payload []byte) []byte {
		p := make([]byte, 40+len(payload))
		binary.BigEndian.PutUint32(p, 6<<28)
		binary.BigEndian.PutUint16(p[4:], uint16(len(payload)))
		p[6], p[7] = next, 64
		copy(p[8:], src[:])
		copy(p[24:], dst[:])
		copy(p[40:], payload)
		return p
	}
	udp := func(port uint16) []byte {
		u := make([]byte, 8+4)
		binary.BigEndian.PutUint16(u[0:], 40000)
		binary.BigEndian.PutUint16(u[2:], port)
		binary.BigEndian.PutUint16(u[4:], 12)
		copy(u[8:], "ping")
		return u // checksum 0: the receiver drops it, but the router forwards it
	}
	// a chain of 10 destination-options headers (beyond the walk's bound)
	var chain []byte
	for i := 0; i < 10; i++ {
		next := byte(60)
		if i == 9 {
			next = 17
		}
		chain = append(chain, next, 0, 1, 4, 0, 0, 0, 0) // PadN
	}
	longChain := valid(60, append(chain, udp(7001)...))
	unknown := valid(253, append([]byte{17, 0, 1, 4, 0, 0, 0, 0}, udp(7002)...))
	wrongVersion := valid(17, udp(7003))
	wrongVersion[0] = 0x45
	beyond := valid(17, udp(7004))
	binary.BigEndian.PutUint16(beyond[4:], 1000)
	truncated := valid(17, udp(7005))[:20]

	capture := listenRaw(t, l.h2, "tb")
	send := rawSender(t, l.h1, "ta")
	for _, p := range [][]byte{truncated, wrongVersion, beyond, longChain, unknown} {
		send(p)
	}
	got := capture(2, 3*time.Second)
	var ports []uint16
	for _, p := range got {
		if len(p) >= 2 {
			ports = append(ports, binary.BigEndian.Uint16(p[len(p)-10:]))
		}
	}
	slices.Sort(ports) // ta has two queues: the two may come in either order
	if len(got) != 2 || ports[0] != 7001 || ports[1] != 7002 {
		t.Errorf("forwarded %d packets (ports %v), want the long chain and the unknown header (7001, 7002)", len(got), ports)
	}
	for _, p := range got {
		if p[7] != 63 {
			t.Errorf("forwarded with hop limit %d", p[7])
		}
	}
	stats, _, _ := l.d.run("-s", "link", "show", "ta")
	for _, want := range []string{"drop truncated 1", "drop version 1", "drop length 1"} {
		if !strings.Contains(stats, want) {
			t.Errorf("link show -s ta lacks %q:\n%s", want, stats)
		}
	}
	out, _, st := l.in(l.h1, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", "2001:db8:2::2")
	if st != 0 {
		t.Errorf("the router stopped forwarding:\n%s", out)
	}
}

// inNetns runs f with the calling thread in namespace ns; sockets made
// there stay in it.
func inNetns(t testing.TB, ns string, f func()) {
	t.Helper()
	h, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Close() }()
	inNetnsHandle(t, h, f)
}

// inNetnsHandle is inNetns with the namespace's handle (a container's,
// by its process).
func inNetnsHandle(t testing.TB, h netns.NsHandle, f func()) {
	t.Helper()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = orig.Close() }()
	if err := netns.Set(h); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// a thread that cannot go back stays locked, so the runtime ends it
		// with this goroutine rather than run others in ns
		if err := netns.Set(orig); err == nil {
			runtime.UnlockOSThread()
		}
	}()
	f()
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// rawSender returns a function that writes IPv6 packets as they are onto
// link dev of namespace ns: into the TUN, past every check of the host.
func rawSender(t *testing.T, ns, dev string) func([]byte) {
	var fd int
	var ifi *net.Interface
	inNetns(t, ns, func() {
		var err error
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM, int(htons(unix.ETH_P_IPV6))); err != nil {
			t.Fatal(err)
		}
		if ifi, err = net.InterfaceByName(dev); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { _ = unix.Close(fd) })
	return func(p []byte) {
		sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IPV6), Ifindex: ifi.Index}
		if err := unix.Sendto(fd, p, 0, sa); err != nil {
			t.Fatalf("sendto: %v", err)
		}
	}
}

// listenRaw captures the UDP packets for ports 7000-7099 arriving on link
// dev of namespace ns.
func listenRaw(t *testing.T, ns, dev string) func(n int, wait time.Duration) [][]byte {
	return capture(t, ns, dev, func(p []byte) bool {
		if len(p) < 12 {
			return false
		}
		port := binary.BigEndian.Uint16(p[len(p)-10:])
		return port >= 7000 && port < 7100
	})
}

// capture returns a function that collects, for up to wait, the first n
// IPv6 packets arriving on link dev of namespace ns that keep accepts
// (the socket is open from now on, with room for a test's worth).
func capture(t testing.TB, ns, dev string, keep func(p []byte) bool) func(n int, wait time.Duration) [][]byte {
	var fd int
	inNetns(t, ns, func() {
		var err error
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM, int(htons(unix.ETH_P_IPV6))); err != nil {
			t.Fatal(err)
		}
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IPV6), Ifindex: ifi.Index}); err != nil {
			t.Fatal(err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { _ = unix.Close(fd) })
	return func(n int, wait time.Duration) [][]byte {
		var got [][]byte
		deadline := time.Now().Add(wait)
		buf := make([]byte, 65536)
		for len(got) < n && time.Now().Before(deadline) {
			tv := unix.NsecToTimeval(int64(time.Until(deadline)))
			if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
				t.Fatal(err)
			}
			m, from, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				continue
			}
			if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
				continue // what the host itself sends
			}
			if p := buf[:m]; keep(p) {
				got = append(got, append([]byte(nil), p...))
			}
		}
		return got
	}
}
