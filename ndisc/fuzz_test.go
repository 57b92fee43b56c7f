package ndisc

import (
	"net/netip"
	"sync"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// fakeIface is a link in memory: what ND sends is counted and dropped.
type fakeIface struct {
	mu    sync.Mutex
	addrs []netip.Prefix
	sent  int
}

func (f *fakeIface) Name() string          { return "fake" }
func (f *fakeIface) Addrs() []netip.Prefix { return f.addrs }
func (f *fakeIface) Send(_ MAC, pkts [][]byte) error {
	f.mu.Lock()
	f.sent += len(pkts)
	f.mu.Unlock()
	return nil
}
func (*fakeIface) Unreachable(netip.Addr, [][]byte) {}
func (*fakeIface) Changed(netip.Addr, State, State) {}
func (*fakeIface) Count(Count, int)                 {}

// FuzzNDisc hands arbitrary messages to the ND goroutine's handler: it
// never panics.
func FuzzNDisc(f *testing.F) {
	own := netip.MustParseAddr("2001:db8:91::1")
	host := netip.MustParseAddr("2001:db8:91::2")
	hostMAC := MAC{2, 0, 0, 0, 2, 2}
	ns := make([]byte, header.NDPNSMinimumSize)
	header.NDPNeighborSolicit(ns).SetTargetAddress(tcpip.AddrFrom16(own.As16()))
	ns = append(append(ns, optSourceLL, 1), hostMAC[:]...)
	na := make([]byte, header.NDPNAMinimumSize)
	nav := header.NDPNeighborAdvert(na)
	nav.SetTargetAddress(tcpip.AddrFrom16(host.As16()))
	nav.SetSolicitedFlag(true)
	na = append(append(na, optTargetLL, 1), hostMAC[:]...)
	f.Add(icmp(header.ICMPv6NeighborSolicit, host.As16(), own.As16(), ns)[Headroom:])
	f.Add(icmp(header.ICMPv6NeighborAdvert, host.As16(), own.As16(), na)[Headroom:])
	f.Add(icmp(header.ICMPv6RouterSolicit, host.As16(), allNodes.As16(), make([]byte, 4))[Headroom:])
	link := &fakeIface{addrs: []netip.Prefix{netip.MustParsePrefix("2001:db8:91::1/64"),
		netip.MustParsePrefix("fe80::1/64")}}
	n := New(link, MAC{2, 0, 0, 0, 1, 1}, DefaultParams(), nil)
	n.syncAddrs()
	for _, o := range n.addrs {
		o.tentative = false // past DAD, as the link's addresses are
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		n.handle(hostMAC, header.IPv6(p))
	})
}
