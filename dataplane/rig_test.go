package dataplane_test

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"

	"urouter/dataplane"
	"urouter/dataplane/port"
	"urouter/fib6"
	"urouter/nexthop"
	"urouter/router"
)

// pairPort is a link's port for tests: what the router writes to the link
// comes out of a socket pair's other end. It has no queues of its own to
// read: the test drives a worker with the packets it wants routed.
type pairPort struct {
	fd   int
	vnet bool
}

func (p *pairPort) Queues() int                                 { return 0 }
func (p *pairPort) ReadBatch(int, [][]byte, []int) (int, error) { return 0, errors.ErrUnsupported }
func (p *pairPort) WriteBatch(_ int, pkts [][]byte, _ []netip.Addr) (int, error) {
	for i, b := range pkts {
		if !p.vnet {
			b = b[dataplane.VnetHdrLen:]
		}
		if _, err := unix.Write(p.fd, b); err != nil {
			return i, err
		}
	}
	return len(pkts), nil
}
func (p *pairPort) Offloads() port.Offloads {
	return port.Offloads{TCP: p.vnet, UDP: p.vnet, PartialCsum: p.vnet}
}
func (p *pairPort) SetMTU(int) error               { return nil }
func (p *pairPort) SetUp(bool) error               { return nil }
func (p *pairPort) Close() error                   { return nil }
func (p *pairPort) Kind() string                   { return "pair" }
func (p *pairPort) Flags() port.Flags              { return port.FlagPointToPoint | port.FlagNoARP }
func (p *pairPort) LinkType() string               { return "none" }
func (p *pairPort) HardwareAddr() net.HardwareAddr { return nil }
func (p *pairPort) Broadcast() net.HardwareAddr    { return nil }
func (p *pairPort) TxQueueLen() int                { return 500 }

// rig is a router built as the daemon builds it, with three links whose
// ports are socket pairs (ta, tb with offloads and MTU 1400, tc without),
// a dummy link, addresses (the router derives their routes), some routes,
// and a worker reading "from" ta.
type rig struct {
	r          *router.Router
	dp         *dataplane.Dataplane
	w          *dataplane.TestWorker
	ta, tb, tc *dataplane.Link
	d0         *dataplane.Link
	peer       map[*dataplane.Link]int // the other end of each link's socket pair
}

func newRig(t testing.TB) *rig {
	t.Helper()
	rt := router.New()
	r := &rig{r: rt, dp: rt.DP, peer: map[*dataplane.Link]int{}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mk := func(name string, vnet bool) *dataplane.Link {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK, 0)
		must(err)
		must(unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<22))
		t.Cleanup(func() {
			if err := errors.Join(unix.Close(fds[0]), unix.Close(fds[1])); err != nil {
				t.Error(err)
			}
		})
		l, err := rt.AddLink(name, &pairPort{fd: fds[0], vnet: vnet}, 1500)
		must(err)
		r.peer[l] = fds[1]
		must(rt.SetUp(l, true))
		return l
	}
	r.ta, r.tb, r.tc = mk("ta", true), mk("tb", true), mk("tc", false) // tc: super-packets get segmented
	var err error
	r.d0, err = rt.AddDummy("d0", 1500)
	must(err)
	must(rt.SetUp(r.d0, true))
	must(rt.SetMTU(r.tb, 1400))
	for _, a := range []struct {
		l    *dataplane.Link
		addr string
	}{{r.ta, "2001:db8:1::1/64"}, {r.tb, "2001:db8:2::1/64"}, {r.tc, "2001:db8:3::1/64"}} {
		must(rt.AddAddr(a.l, netip.MustParsePrefix(a.addr)))
	}
	// a resilient group of nexthop objects on tb and tc, and inline paths
	for i, l := range []*dataplane.Link{r.tb, r.tc} {
		_, err := rt.Nexthops.Add(nexthop.Spec{ID: uint32(i + 1), Family: nexthop.FamilyInet6, Nexthop: nexthop.Nexthop{Link: l.Index}}, false)
		must(err)
	}
	grp, err := rt.Nexthops.Add(nexthop.Spec{ID: 10, Group: []nexthop.Entry{{ID: 1, Weight: 1}, {ID: 2, Weight: 1}},
		Type: nexthop.ResilientType, Buckets: 64, BucketsSet: true}, false)
	must(err)
	inline := nexthop.NewGroup([]nexthop.Member{{Nexthop: nexthop.Nexthop{Link: r.tb.Index}, Weight: 1}, {Nexthop: nexthop.Nexthop{Link: r.tc.Index}, Weight: 2}})
	for _, rr := range []fib6.Route{
		{Dst: netip.MustParsePrefix("2001:db8:6a::/48"), Attrs: fib6.Attrs{Metric: 1, Object: grp}},
		{Dst: netip.MustParsePrefix("2001:db8:6b::/48"), Attrs: fib6.Attrs{Metric: 1, Group: inline}},
		{Dst: netip.MustParsePrefix("2001:db8:d::/48"), Attrs: fib6.Attrs{Metric: 1, Nexthop: nexthop.Nexthop{Link: r.d0.Index}}},
		{Dst: netip.MustParsePrefix("2001:db8:66::/48"), Attrs: fib6.Attrs{Metric: 1, Type: fib6.Unreachable}},
		{Dst: netip.MustParsePrefix("2001:db8:67::/48"), Attrs: fib6.Attrs{Metric: 1, Type: fib6.Prohibit}},
		{Dst: netip.MustParsePrefix("2001:db8:68::/48"), Attrs: fib6.Attrs{Metric: 1, Type: fib6.Blackhole}},
		{Dst: netip.MustParsePrefix("2001:db8:69::/48"), Attrs: fib6.Attrs{Metric: 1, MTU: 1300, Nexthop: nexthop.Nexthop{Link: r.tb.Index}}},
	} {
		x := rt.Tables.Main().Begin()
		err := x.Add(rr)
		x.Commit()
		must(err)
	}
	r.w = dataplane.NewTestWorker(rt.DP, r.ta, 0)
	rt.DP.SetICMPRate(0, 0)
	rt.DP.SetICMPDestRate(0, 0)
	return r
}

// run feeds packets (each: a virtio_net_hdr and an IPv6 packet) to the
// worker as one batch.
func (r *rig) run(pkts ...[]byte) { r.w.Forward(pkts...) }

// recv returns what the routerAddr wrote to link l since the last call.
func (r *rig) recv(l *dataplane.Link) [][]byte {
	var out [][]byte
	buf := make([]byte, 1<<17)
	for {
		n, err := unix.Read(r.peer[l], buf)
		if err != nil {
			return out
		}
		out = append(out, append([]byte(nil), buf[:n]...))
	}
}

var (
	host1      = net.ParseIP("2001:db8:1::2")
	host2      = net.ParseIP("2001:db8:2::2")
	routerAddr = net.ParseIP("2001:db8:1::1")
)

// craft serializes layers into an IPv6 packet with a zero virtio header.
func craft(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	for _, l := range ls {
		if ip, ok := l.(*layers.IPv6); ok {
			for _, o := range ls {
				if n, ok := o.(interface {
					SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
				}); ok {
					if err := n.SetNetworkLayerForChecksum(ip); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append(make([]byte, dataplane.VnetHdrLen), buf.Bytes()...)
}

func ipv6(src, dst net.IP, next layers.IPProtocol, hl uint8) *layers.IPv6 {
	return &layers.IPv6{Version: 6, SrcIP: src, DstIP: dst, NextHeader: next, HopLimit: hl}
}

func udp(n int) []gopacket.SerializableLayer {
	return []gopacket.SerializableLayer{&layers.UDP{SrcPort: 4000, DstPort: 5000}, gopacket.Payload(make([]byte, n))}
}

func decode(t testing.TB, b []byte, vnet bool) gopacket.Packet {
	t.Helper()
	if vnet {
		b = b[dataplane.VnetHdrLen:]
	}
	p := gopacket.NewPacket(b, layers.LayerTypeIPv6, gopacket.Default)
	if e := p.ErrorLayer(); e != nil {
		t.Fatalf("bad packet from the routerAddr: %v", e.Error())
	}
	return p
}

// icmpOf checks that b is a valid ICMPv6 message from the routerAddr and
// returns it.
func icmpOf(t testing.TB, b []byte) (*layers.IPv6, *layers.ICMPv6) {
	t.Helper()
	p := decode(t, b, true)
	ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	ic, ok := p.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6)
	if !ok {
		t.Fatalf("not ICMPv6: %v", p)
	}
	if dataplane.TransportSum(b[dataplane.VnetHdrLen:], 40, 58) != 0xffff {
		t.Fatal("bad ICMPv6 checksum")
	}
	return ip, ic
}
