package router

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/ndisc"
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

// routerInOwnNetns is a started router in the test's own network
// namespace (inOwnNetns), closed at the test's end; nil in the run that
// started that one.
func routerInOwnNetns(t *testing.T) *Router {
	if !inOwnNetns(t) {
		return nil
	}
	r := New()
	r.Start()
	t.Cleanup(r.Close)
	return r
}

// veth makes interface name (a veth whose peer, name+"p", is up), with
// MTU mtu, and returns it.
func veth(t *testing.T, name string, mtu int) netlink.Link {
	t.Helper()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, MTU: mtu}, PeerName: name + "p"}
	must(t, netlink.LinkAdd(v))
	peer, err := netlink.LinkByName(name + "p")
	must(t, err)
	must(t, netlink.LinkSetUp(peer))
	l, err := netlink.LinkByName(name)
	must(t, err)
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
	r := routerInOwnNetns(t)
	if r == nil {
		return
	}
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
	if !bytes.Equal(now.Attrs().HardwareAddr, mac) || now.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("attached: v0 has MAC %v (want the link's %v), flags %v", now.Attrs().HardwareAddr, mac, now.Attrs().Flags)
	}
	kept("attached")

	// vanishes
	must(t, netlink.LinkDel(v))
	eventually(t, "waiting once v0 went", func() bool { return l.Waiting() && !l.Carrier() })
	kept("after v0 went")

	// appears under another index (made by another name, then renamed, as
	// containerlab does): it takes the link's MTU
	w := veth(t, "tmp0", 1500)
	must(t, netlink.LinkSetName(w, "v0"))
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
	must(t, netlink.LinkSetName(now, "v0old"))
	eventually(t, "waiting once v0 was renamed", func() bool { return l.Waiting() })
	u := veth(t, "tmp1", 9000)
	must(t, netlink.LinkSetName(u, "v0"))
	eventually(t, "attached to the interface renamed v0", func() bool { return l.Interface() == u.Attrs().Index })
	kept("renamed")

	// its carrier is the interface's: the peer down, no carrier, attached
	peer, _ := netlink.LinkByName("tmp1p")
	must(t, netlink.LinkSetDown(peer))
	eventually(t, "no carrier with its peer down", func() bool { return !l.Carrier() })
	if l.Waiting() {
		t.Error("a link whose peer is down waits: it has its interface")
	}
	must(t, r.DeleteLink(l))
}

// waitingLink adds host link e1 on v0, which is not there, sets it up with
// an address and a route through it, and returns it with a check that it
// keeps them and its MAC.
func waitingLink(t *testing.T, r *Router) (*dataplane.Link, func(when string)) {
	l, err := r.AddHost("e1", "v0", dataplane.EtherOptions{})
	must(t, err)
	mac := slices.Clone(l.Hardware().HardwareAddr())
	p := netip.MustParsePrefix("2001:db8:1::1/64")
	dst := netip.MustParsePrefix("2001:db8:99::/48")
	must(t, r.SetUp(l, true))
	must(t, r.AddAddr(l, p))
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

// TestHostLinkChurn: a host link's interface deleted and made again 30
// times while another link's peer floods packets routed out of it: the
// packet path, its writers and readers, and the attach and detach race
// nothing (under -race), and once it stops, what is routed out of the link
// reaches the last interface.
func TestHostLinkChurn(t *testing.T) {
	r := routerInOwnNetns(t)
	if r == nil {
		return
	}
	veth(t, "w0", 1500)
	e2, err := r.AddHost("e2", "w0", dataplane.EtherOptions{})
	must(t, err)
	e1, _ := waitingLink(t, r) // e1 on v0, 2001:db8:99::/48 through 2001:db8:1::2
	gwMAC := ndisc.MAC{2, 0, 0, 0, 0, 0x99}
	must(t, r.SetUp(e2, true))
	must(t, r.AddAddr(e2, netip.MustParsePrefix("2001:db8:2::1/64")))
	must(t, e1.Neigh().Set(netip.MustParseAddr("2001:db8:1::2"), gwMAC, true, ndisc.Permanent, 0, ndisc.Add))

	frame := make([]byte, 14+40+8)
	copy(frame[0:6], e2.Hardware().HardwareAddr())
	binary.BigEndian.PutUint16(frame[12:], 0x86dd)
	ip := frame[14:]
	ip[0], ip[6], ip[7] = 0x60, 17, 64
	binary.BigEndian.PutUint16(ip[4:], 8)
	copy(ip[8:24], netip.MustParseAddr("2001:db8:2::2").AsSlice())
	copy(ip[24:40], netip.MustParseAddr("2001:db8:99::5").AsSlice())
	binary.BigEndian.PutUint16(ip[44:], 8)
	inPeer, err := netlink.LinkByName("w0p")
	must(t, err)
	tx := packetSocket(t, inPeer.Attrs().Index)
	stop := make(chan struct{})
	var flooded sync.WaitGroup
	flooded.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				_, _ = unix.Write(tx, frame) // ENOBUFS while the router is behind: sent again
			}
		}
	})
	for i := range 30 {
		v := veth(t, fmt.Sprintf("tmp%d", i), 1500)
		must(t, netlink.LinkSetName(v, "v0"))
		eventually(t, "attached", func() bool { return e1.Interface() == v.Attrs().Index })
		must(t, netlink.LinkDel(v))
		eventually(t, "waiting", e1.Waiting)
	}
	v := veth(t, "last", 1500)
	must(t, netlink.LinkSetName(v, "v0"))
	eventually(t, "attached to the last", func() bool { return e1.Interface() == v.Attrs().Index })
	peer, err := netlink.LinkByName("lastp")
	must(t, err)
	rx := packetSocket(t, peer.Attrs().Index)
	must(t, unix.SetsockoptTimeval(rx, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5}))
	buf := make([]byte, 2048)
	n, err := unix.Read(rx, buf)
	close(stop)
	flooded.Wait()
	if err != nil || n < len(frame) || !bytes.Equal(buf[0:6], gwMAC[:]) || !bytes.Equal(buf[14+24:14+40], ip[24:40]) {
		t.Fatalf("nothing routed out of the last interface: %d bytes, %v", n, err)
	}
	st := e1.Stats()
	t.Logf("e1 through 30 interfaces: %d packets written, %d lost while it waited", st.TxPackets, st.TxErrors)
	if st.TxPackets < 30 || st.TxErrors == 0 {
		t.Errorf("the flood did not cross the churn: %d written, %d lost", st.TxPackets, st.TxErrors)
	}
}

// packetSocket is an AF_PACKET socket of every ethertype on interface idx.
// It is made for no protocol, so that it queues nothing of the other
// interfaces' before it is bound.
func packetSocket(t *testing.T, idx int) int {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	must(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	must(t, unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: idx}))
	return fd
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
