package integration

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestKernelOracleBrief holds -brief and -oneline to iproute2's: the
// same links, addresses and neighbours in a kernel namespace and in
// urouter (its daemon in a namespace of its own, where its TUN and TAPs
// are), and `ip -br link`, `ip -6 -br addr`, `ip -o link`, `ip -6 -o
// addr`, `ip -6 -br neigh` and the rest, each with -j too, printed by
// both byte for byte. The kernel has no dummy links, so both have TUN
// and TAP ones: lo; t0, a TUN, up, MTU 1400; p0, a TAP, up, MTU 9000,
// two addresses (one with a metric), its link-local and two permanent
// neighbours; p1, a TAP never up, with an address (tentative, as DAD
// waits for the link). The kernel's are made by hand to look as
// urouter's do: held open by the test (their carrier on), noqueue for
// their qdisc (a kernel TUN or TAP gets the default one), no link-local
// of its own for the TUN, and p0's carrier dropped and raised once, so
// that its state is UP, as an Ethernet link's with its carrier (a TAP's
// is UNKNOWN until its carrier changes).
func TestKernelOracleBrief(t *testing.T) {
	parallel(t)
	needRoot(t)
	k := newNetns(t, "uro-brk")
	kernelBriefLinks(t, k)
	u := newNetns(t, "uro-bru")
	// the kernel's side of urouter's TAPs is to say nothing (a Router
	// Solicitation would make urouter a neighbour entry the kernel's
	// TAPs, which no one reads, never get)
	mustRun(t, "ip", "netns", "exec", u, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	d := startDaemonFlags(t, u, nil,
		"link add t0 type tun mtu 1400", "link set t0 up", "address add 2001:db8:1::1/64 dev t0",
		"link add p0 type tap address 02:00:00:00:00:10 mtu 9000", "sysctl -qw net.ipv6.conf.p0.accept_dad=0",
		"address add 2001:db8:2::1/64 dev p0", "address add 2001:db8:3::1/64 dev p0 metric 5", "link set p0 up",
		"neigh add 2001:db8:2::5 lladdr 02:00:00:00:00:05 dev p0 nud permanent",
		"neigh add 2001:db8:2::6 lladdr 02:00:00:00:00:06 dev p0 nud permanent",
		"link add p1 type tap address 02:00:00:00:00:11", "address add 2001:db8:4::1/64 dev p1")
	for _, c := range briefOracle {
		args := strings.Fields(c)
		kout, kerr, kst := runCmd("ip", append([]string{"-n", k}, args...)...)
		uout, uerr, ust := d.run(args...)
		if slices.Contains(args, "neigh") && !slices.Contains(args, "to") {
			// Linux lists a table's neighbours in the order of its hash,
			// seeded at random; urouter by address: compared as sets
			kout, uout = sortedLines(kout), sortedLines(uout)
		}
		if kout != uout || kerr != uerr || kst != ust {
			t.Errorf("%s:\n  ip:      %q %q %d\n  urouter: %q %q %d", c, kout, kerr, kst, uout, uerr, ust)
		}
	}
}

// briefOracle are the commands TestKernelOracleBrief asks both; the
// addresses' and neighbours' with -6, which leaves the kernel's IPv4 out
// (lo's 127.0.0.1), as urouter has none.
var briefOracle = []string{
	"-br link", "-brief link show", "-br link show dev p0", "-br -s -d link show p1", "-br -o link",
	"-br -j link", "-br -j -p link show t0",
	"-o link", "-oneline link show p0", "-o link show dev p1", "-o -j link show t0",
	"-6 -br addr", "-6 -br address show dev p0", "-6 -br addr show scope global", "-6 -br addr show to 2001:db8:3::/48",
	"-6 -br -j addr", "-6 -br -j addr show scope global", "-6 -br -o addr",
	"-6 -o addr", "-6 -o addr show dev p0", "-6 -o addr show scope link", "-6 -o -j addr", "-6 -o -j addr show scope link",
	"-6 addr", "-6 -d addr", "-6 -j addr", "-6 -j -p addr show scope link", "-6 addr show dev p0", "-6 -j addr show dev p1",
	"-6 -br neigh", "-6 -br neigh show dev p0", "-6 -br neigh show to 2001:db8:2::6", "-6 -br -j neigh show to 2001:db8:2::5",
	"-6 -br neigh show dev p0 to 2001:db8:2::5", "-6 -o neigh", "-6 -o neigh show to 2001:db8:2::6",
	"-o link show nosuch", "-br addr show dev nosuch",
}

// kernelBriefLinks makes TestKernelOracleBrief's links in the kernel of
// namespace ns.
func kernelBriefLinks(t *testing.T, ns string) {
	ip := func(args ...string) { mustRun(t, "ip", append([]string{"-n", ns}, args...)...) }
	kernelTun(t, ns, "t0", false)
	ip("link", "set", "t0", "mtu", "1400", "addrgenmode", "none")
	ip("-6", "addr", "add", "2001:db8:1::1/64", "dev", "t0")
	ip("link", "set", "t0", "up")
	p0 := kernelTun(t, ns, "p0", true)
	ip("link", "set", "p0", "address", "02:00:00:00:00:10", "mtu", "9000")
	mustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.p0.accept_dad=0")
	ip("-6", "addr", "add", "2001:db8:2::1/64", "dev", "p0")
	ip("-6", "addr", "add", "2001:db8:3::1/64", "dev", "p0", "metric", "5")
	ip("link", "set", "p0", "up")
	ip("-6", "neigh", "add", "2001:db8:2::5", "lladdr", "02:00:00:00:00:05", "dev", "p0", "nud", "permanent")
	ip("-6", "neigh", "add", "2001:db8:2::6", "lladdr", "02:00:00:00:00:06", "dev", "p0", "nud", "permanent")
	kernelTun(t, ns, "p1", true)
	ip("link", "set", "p1", "address", "02:00:00:00:00:11")
	ip("-6", "addr", "add", "2001:db8:4::1/64", "dev", "p1")
	for _, dev := range []string{"t0", "p0"} {
		mustRun(t, "tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "noqueue")
	}
	for _, on := range []int{0, 1} {
		if err := unix.IoctlSetPointerInt(int(p0.Fd()), unix.TUNSETCARRIER, on); err != nil {
			t.Fatalf("TUNSETCARRIER %d: %v", on, err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(mustRun(t, "ip", "-n", ns, "link", "show", "p0"), " state UP ") { // linkwatch's, in its time
		if time.Now().After(deadline) {
			t.Fatalf("p0 is not UP: %s", mustRun(t, "ip", "-n", ns, "link", "show", "p0"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kernelTun makes a TUN (or a TAP) named name in namespace ns, which the
// test holds open to its end: its carrier is on, as a TUN's that a
// program reads.
func kernelTun(t *testing.T, ns, name string, tap bool) *os.File {
	t.Helper()
	var f *os.File
	inNetns(t, ns, func() {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			t.Fatal(err)
		}
		flags := uint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if tap {
			flags = unix.IFF_TAP | unix.IFF_NO_PI
		}
		ifr.SetUint16(flags)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			_ = unix.Close(fd) // made nothing
			t.Fatalf("TUNSETIFF %s: %v", name, err)
		}
		f = os.NewFile(uintptr(fd), name)
	})
	t.Cleanup(func() { _ = f.Close() }) // the device goes with it
	return f
}

// sortedLines are out's lines in order (a JSON array's elements, one
// line: its elements).
func sortedLines(out string) string {
	if strings.HasPrefix(out, "[") {
		elems := strings.Split(strings.Trim(strings.TrimSpace(out), "[]"), "},{")
		slices.Sort(elems)
		return strings.Join(elems, "},{")
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
