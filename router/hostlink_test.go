package router

import (
	"bytes"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/nexthop"
)

// inOwnNetns runs the test again in a network namespace of its own (the
// whole process: the router's notifications are read on a thread of their
// own), and reports whether this is that run.
func inOwnNetns(t *testing.T) bool {
	if os.Getenv("UROUTER_TEST_NETNS") == t.Name() {
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (a network namespace, veths, AF_PACKET)")
	}
	cmd := exec.Command("unshare", "--net", os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "UROUTER_TEST_NETNS="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a netns of its own: %v\n%s", err, out)
	}
	t.Logf("in a netns of its own:\n%s", out)
	return false
}

// veth makes interface name (a veth whose peer, name+"p", is up), with
// MTU mtu, and returns it.
func veth(t *testing.T, name string, mtu int) netlink.Link {
	t.Helper()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, MTU: mtu}, PeerName: name + "p"}
	if err := netlink.LinkAdd(v); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{name, name + "p"} {
		l, err := netlink.LinkByName(n)
		if err != nil {
			t.Fatal(err)
		}
		if n != name {
			if err := netlink.LinkSetUp(l); err != nil {
				t.Fatal(err)
			}
		}
	}
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// eventually waits for cond, which the router's notifications make true,
// up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not within 5 s: %s", what)
		}
	}
}

// TestHostLinkWaits: a host link made before its interface waits for it
// (no carrier, its configuration kept), attaches when it appears (taking
// the interface's MTU, giving the interface its MAC and its state),
// detaches when it goes, attaches to a new interface of its name at
// another index (giving it the link's MTU), and follows the name through
// renames: away from it (it waits) and to it (it attaches).
func TestHostLinkWaits(t *testing.T) {
	if !inOwnNetns(t) {
		return
	}
	r := New()
	r.Start()
	defer r.Close()
	l, kept := waitingLink(t, r)
	mac := slices.Clone(l.Hardware().HardwareAddr())
	if !l.Waiting() || l.Carrier() || l.MTU() != 1500 {
		t.Fatalf("made without its interface: waiting %v carrier %v mtu %d", l.Waiting(), l.Carrier(), l.MTU())
	}
	kept("waiting")

	// appears: the link takes its MTU and gives it its MAC and its state
	v := veth(t, "v0", 9000)
	eventually(t, "attached to v0", func() bool { return l.Interface() == v.Attrs().Index && l.Carrier() })
	if l.MTU() != 9000 {
		t.Errorf("attached: MTU %d, want the interface's 9000", l.MTU())
	}
	now, _ := netlink.LinkByIndex(v.Attrs().Index)
	if !bytes.Equal(now.Attrs().HardwareAddr, mac) || now.Attrs().Flags&(1<<0) == 0 {
		t.Errorf("attached: v0 has MAC %v (want the link's %v), flags %v", now.Attrs().HardwareAddr, mac, now.Attrs().Flags)
	}
	kept("attached")

	// vanishes
	if err := netlink.LinkDel(v); err != nil {
		t.Fatal(err)
	}
	eventually(t, "waiting once v0 went", func() bool { return l.Waiting() && !l.Carrier() })
	kept("after v0 went")

	// appears under another index (made by another name, then renamed, as
	// containerlab does): it takes the link's MTU
	w := veth(t, "tmp0", 1500)
	if err := netlink.LinkSetName(w, "v0"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "attached to the new v0", func() bool { return l.Interface() == w.Attrs().Index && l.Carrier() })
	if w.Attrs().Index == v.Attrs().Index {
		t.Fatalf("the new v0 has the old one's index %d", w.Attrs().Index)
	}
	now, _ = netlink.LinkByIndex(w.Attrs().Index)
	if l.MTU() != 9000 || now.Attrs().MTU != 9000 {
		t.Errorf("attached again: the link's MTU %d, the interface's %d; want the link's 9000 on both", l.MTU(), now.Attrs().MTU)
	}
	kept("attached again")

	// renamed away: it waits; another renamed to its name: it attaches
	if err := netlink.LinkSetName(now, "v0old"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "waiting once v0 was renamed", func() bool { return l.Waiting() })
	u := veth(t, "tmp1", 9000)
	if err := netlink.LinkSetName(u, "v0"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "attached to the interface renamed v0", func() bool { return l.Interface() == u.Attrs().Index })
	kept("renamed")

	// its carrier is the interface's: the peer down, no carrier, attached
	peer, _ := netlink.LinkByName("tmp1p")
	if err := netlink.LinkSetDown(peer); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no carrier with its peer down", func() bool { return !l.Carrier() })
	if l.Waiting() {
		t.Error("a link whose peer is down waits: it has its interface")
	}
	if err := r.DeleteLink(l); err != nil {
		t.Fatal(err)
	}
}

// waitingLink adds host link e1 on v0, which is not there, sets it up with
// an address and a route through it, and returns it with a check that it
// keeps them and its MAC.
func waitingLink(t *testing.T, r *Router) (*dataplane.Link, func(when string)) {
	l, err := r.AddHost("e1", "v0", dataplane.EtherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mac := slices.Clone(l.Hardware().HardwareAddr())
	p := netip.MustParsePrefix("2001:db8:1::1/64")
	dst := netip.MustParsePrefix("2001:db8:99::/48")
	if err := r.SetUp(l, true); err != nil {
		t.Fatal(err)
	}
	if err := r.AddAddr(l, p); err != nil {
		t.Fatal(err)
	}
	main := r.Tables.Get(fib6.TableMain)
	x := main.Begin()
	if err := x.Add(fib6.Route{Dst: dst, Attrs: fib6.Attrs{Metric: 1024, Type: fib6.Unicast,
		Nexthop: nexthop.Nexthop{Link: l.Index, Gateway: netip.MustParseAddr("2001:db8:1::2")}}}); err != nil {
		t.Fatal(err)
	}
	x.Commit()
	return l, func(when string) {
		t.Helper()
		if !slices.Contains(l.Addrs(), p) {
			t.Errorf("%s: %v lost its address: %v", when, l.Name, l.Addrs())
		}
		if main.Lookup(dst.Addr(), netip.IPv6Unspecified()) == nil {
			t.Errorf("%s: the route through it went", when)
		}
		if !bytes.Equal(l.Hardware().HardwareAddr(), mac) {
			t.Errorf("%s: its MAC is %v, was %v", when, l.Hardware().HardwareAddr(), mac)
		}
	}
}
