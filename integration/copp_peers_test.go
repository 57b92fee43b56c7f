package integration

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCoPPPeerFlood: TCP connections to port 179 from 3,000 of a LAN's
// addresses, each sending a byte (the kernel acknowledges it before the
// listener closes the connection: what a flood of sessions bgpd refuses
// earns), do not make those addresses session peers, nor evict the real
// peer: its packets to the kernel that are not BGP's are still routing.
// (3,000 newcomers in the table's 256 way groups of four: the peer's
// group meets four or more of them but for a chance of 0.3%.)
func TestCoPPPeerFlood(t *testing.T) {
	measures(t)
	l := newSessionLab(t)
	const n = 3000
	var srcs []netip.Addr
	var batch strings.Builder
	for i := 0; i < n; i++ {
		a := netip.MustParseAddr(fmt.Sprintf("2001:db8:c1::1:%x", i))
		srcs = append(srcs, a)
		fmt.Fprintf(&batch, "address add %s/64 dev eth0 nodad\n", a)
	}
	if runWithStdin(t, batch.String(), "ip", "-n", l.h, "-b", "-") != 0 {
		t.Fatal("adding the flood's addresses failed")
	}
	time.Sleep(2 * time.Second) // the flood's stamps are younger than the peer's
	refused, firstErr := dialFlood(t, l.h, srcs)
	if refused > n/10 {
		t.Fatalf("%d of %d connections failed: %v", refused, n, firstErr)
	}
	// UDP to an echo server of the kernel's (no BGP port): a peer's is
	// routing, anyone else's other; each datagram's echo says it was counted
	var echo net.PacketConn
	var err error
	inNetns(t, l.r, func() { echo, err = net.ListenPacket("udp6", "[2001:db8:c1::1]:7") })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = echo.Close() }()
	go func() {
		b := make([]byte, 64)
		for {
			n, from, err := echo.ReadFrom(b)
			if err != nil {
				return
			}
			_, _ = echo.WriteTo(b[:n], from)
		}
	}()
	// others counts what src's n datagrams to the echo server added to
	// lan1's class other
	others := func(src netip.Addr, n int) uint64 {
		var c *net.UDPConn
		inNetns(t, l.h, func() {
			c, err = net.DialUDP("udp6", &net.UDPAddr{IP: src.AsSlice()}, &net.UDPAddr{IP: net.ParseIP("2001:db8:c1::1"), Port: 7})
		})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		before := coppStats(t, l.d, "lan1")["other"]
		b := make([]byte, 64)
		for i := 0; i < n; i++ {
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write([]byte("peer?")); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Read(b); err != nil {
				t.Fatalf("the kernel's echo to %v: %v", src, err)
			}
		}
		after := coppStats(t, l.d, "lan1")["other"]
		return after.Passed + after.Dropped - before.Passed - before.Dropped
	}
	if got := others(netip.MustParseAddr("2001:db8:c1::2"), 10); got != 0 {
		t.Errorf("after a flood of %d refused sessions, %d of the peer's 10 datagrams to the kernel were other, not routing: the peer was evicted", n, got)
	}
	if got := others(srcs[7], 1); got != 1 {
		t.Errorf("a flooder's datagram to the kernel was not other: a flood of refused sessions made it a peer")
	}
}

// dialFlood connects to port 179 of the router from each of srcs in
// namespace ns and sends a byte on each connection, 32 at a time, each
// kept open until all are made; it returns how many failed, and the
// first error.
func dialFlood(t *testing.T, ns string, srcs []netip.Addr) (int, error) {
	// 32 goroutines, each on a thread of its own in the namespace (one
	// started there would not be in it)
	var (
		mu       sync.Mutex
		refused  int
		firstErr error
		conns    []net.Conn
		wg       sync.WaitGroup
	)
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inNetns(t, ns, func() {
				for i := w; i < len(srcs); i += 32 {
					d := net.Dialer{LocalAddr: &net.TCPAddr{IP: srcs[i].AsSlice()}, Timeout: 5 * time.Second, KeepAlive: -1}
					c, err := d.Dial("tcp6", "[2001:db8:c1::1]:179")
					mu.Lock()
					if err != nil {
						refused++
						firstErr = cmp.Or(firstErr, err)
					} else {
						conns = append(conns, c)
					}
					mu.Unlock()
					if err == nil {
						_, _ = c.Write([]byte{1})
					}
				}
			})
		}()
	}
	wg.Wait()
	for _, c := range conns {
		_ = c.Close()
	}
	return refused, firstErr
}
