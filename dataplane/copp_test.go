package dataplane_test

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"urouter/dataplane"
)

func echoRequest(t testing.TB, src, dst net.IP) []byte {
	return craft(t, ipv6(src, dst, layers.IPProtocolICMPv6, 64),
		&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}, &layers.ICMPv6Echo{Identifier: 1, SeqNumber: 1})
}

func tcpSeg(t testing.TB, src, dst net.IP, sport, dport uint16, seg layers.TCP) []byte {
	seg.SrcPort, seg.DstPort, seg.Window = layers.TCPPort(sport), layers.TCPPort(dport), 1000
	return craft(t, ipv6(src, dst, layers.IPProtocolTCP, 64), &seg)
}

// dataSeg is a TCP segment carrying a few bytes of data.
func dataSeg(t testing.TB, src, dst net.IP, sport, dport uint16, seg layers.TCP) []byte {
	seg.SrcPort, seg.DstPort, seg.Window = layers.TCPPort(sport), layers.TCPPort(dport), 1000
	return craft(t, ipv6(src, dst, layers.IPProtocolTCP, 64), &seg, gopacket.Payload("data"))
}

func udpPorts(t testing.TB, src, dst net.IP, sport, dport uint16) []byte {
	return craft(t, ipv6(src, dst, layers.IPProtocolUDP, 64),
		&layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}, gopacket.Payload("x"))
}

func icmpTo(t testing.TB, src, dst net.IP, typ uint8, body []byte) []byte {
	return craft(t, ipv6(src, dst, layers.IPProtocolICMPv6, 255),
		&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}, gopacket.Payload(body))
}

// proto is a packet of next header next with an 8-byte payload.
func proto(t testing.TB, src, dst net.IP, next layers.IPProtocol) []byte {
	b := craft(t, ipv6(src, dst, layers.IPProtocolNoNextHeader, 64), gopacket.Payload(make([]byte, 8)))
	b[dataplane.VnetHdrLen+6] = byte(next)
	return b
}

// TestCoPPClasses: each kind of packet punted to the router falls in its
// class; a session peer's packets are routing when they go up a mirror,
// and only then.
func TestCoPPClasses(t *testing.T) {
	r := newRig(t)
	peer := net.ParseIP("2001:db8:1::7")
	r.dp.SetCoPP(dataplane.CoPPOther, dataplane.CoPPLimit{}) // the kernel's packets are not policed anyway
	mw := dataplane.NewTestMirrorWorker(r.dp, r.ta, 1)
	mw.ForwardOwn(dataSeg(t, routerAddr, peer, 179, 40000, layers.TCP{ACK: true, PSH: true, Seq: 1, Ack: 1}))
	nd, rt, echo, other := dataplane.CoPPND, dataplane.CoPPRouting, dataplane.CoPPEcho, dataplane.CoPPOther
	cases := []struct {
		name     string
		b        []byte
		toKernel bool
		want     dataplane.CoPPClass
	}{
		{"neighbour solicitation", icmpTo(t, host1, routerAddr, 135, make([]byte, 20)), false, nd},
		{"router solicitation", icmpTo(t, host1, routerAddr, 133, make([]byte, 4)), false, nd},
		{"router advertisement", icmpTo(t, host1, routerAddr, 134, make([]byte, 12)), false, nd},
		{"redirect", icmpTo(t, host1, routerAddr, 137, make([]byte, 36)), false, nd},
		{"echo request", echoRequest(t, host1, routerAddr), false, echo},
		{"a peer's echo request", echoRequest(t, peer, routerAddr), true, echo},
		{"OSPFv3", proto(t, host1, routerAddr, 89), true, rt},
		{"VRRP", proto(t, host1, routerAddr, 112), true, rt},
		{"PIM", proto(t, host1, routerAddr, 103), true, rt},
		{"BFD", udpPorts(t, host1, routerAddr, 49152, 3784), true, rt},
		{"BFD echo", udpPorts(t, host1, routerAddr, 49152, 3785), true, rt},
		{"BFD multihop", udpPorts(t, host1, routerAddr, 49152, 4784), true, rt},
		{"RIPng", udpPorts(t, host1, routerAddr, 521, 521), true, rt},
		{"Babel", udpPorts(t, host1, routerAddr, 6696, 6696), true, rt},
		{"BGP to 179", tcpSeg(t, host1, routerAddr, 40001, 179, layers.TCP{ACK: true, Seq: 5, Ack: 9}), true, rt},
		{"BGP from 179, SYN+ACK", tcpSeg(t, host1, routerAddr, 179, 40001, layers.TCP{SYN: true, ACK: true}), true, rt},
		{"SYN to 179", tcpSeg(t, host1, routerAddr, 40001, 179, layers.TCP{SYN: true}), true, other},
		{"SYN to 22", tcpSeg(t, host1, routerAddr, 40001, 22, layers.TCP{SYN: true}), true, other},
		{"ACK to 22", tcpSeg(t, host1, routerAddr, 40001, 22, layers.TCP{ACK: true}), true, other},
		{"UDP to 53", udpPorts(t, host1, routerAddr, 40000, 53), true, other},
		{"destination unreachable", icmpTo(t, host1, routerAddr, 1, make([]byte, 52)), true, other},
		{"MLDv2 report", icmpTo(t, host1, routerAddr, 143, make([]byte, 4)), true, other},
		{"unknown protocol", proto(t, host1, routerAddr, 253), true, other},
		{"a peer's SYN to 22, to the kernel", tcpSeg(t, peer, routerAddr, 40001, 22, layers.TCP{SYN: true}), true, other},
		{"a peer's SYN to 179, to the kernel", tcpSeg(t, peer, routerAddr, 40001, 179, layers.TCP{SYN: true}), true, other},
		{"a peer's ACK to 22, to the kernel", tcpSeg(t, peer, routerAddr, 40001, 22, layers.TCP{ACK: true}), true, rt},
		{"a peer's RST to 5201, to the kernel", tcpSeg(t, peer, routerAddr, 40001, 5201, layers.TCP{RST: true}), true, rt},
		{"a peer's UDP to 53, to the kernel", udpPorts(t, peer, routerAddr, 40000, 53), true, rt},
		{"a peer's UDP to 53, answered by the router", udpPorts(t, peer, routerAddr, 40000, 53), false, other},
	}
	for _, c := range cases {
		if got := r.w.Class(c.b, c.toKernel); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCoPPPeers: the kernel's TCP data down a mirror makes its
// destination a session peer for 90 s, but not a SYN, a RST or a FIN
// (what the kernel answers a flood with), nor a bare ACK (what it answers
// anyone's data with, even on a connection its daemon refuses), nor a
// multicast destination; a bare ACK keeps a peer alive.
func TestCoPPPeers(t *testing.T) {
	r := newRig(t)
	mw := dataplane.NewTestMirrorWorker(r.dp, r.ta, 1)
	addr := func(s string) net.IP { return net.ParseIP("2001:db8:1::" + s) }
	mw.ForwardOwn(
		dataSeg(t, routerAddr, addr("a"), 179, 40000, layers.TCP{ACK: true, Seq: 1, Ack: 1}),
		tcpSeg(t, routerAddr, addr("b"), 179, 40000, layers.TCP{SYN: true, ACK: true}),
		tcpSeg(t, routerAddr, addr("c"), 22, 40000, layers.TCP{RST: true, ACK: true}),
		dataSeg(t, routerAddr, addr("d"), 179, 40000, layers.TCP{FIN: true, ACK: true}),
		udpPorts(t, routerAddr, addr("e"), 179, 179),
		dataSeg(t, routerAddr, addr("f"), 5201, 40000, layers.TCP{PSH: true, ACK: true}),
		tcpSeg(t, routerAddr, addr("0"), 179, 40000, layers.TCP{ACK: true, Seq: 1, Ack: 2}),
	)
	r.recv(r.ta)
	for s, want := range map[string]bool{"a": true, "b": false, "c": false, "d": false, "e": false, "f": true, "0": false, "9": false} {
		a := netip.MustParseAddr("2001:db8:1::" + s)
		if got := r.dp.IsPeer(a, 0); got != want {
			t.Errorf("%s: a peer %v, want %v", a, got, want)
		}
	}
	a := netip.MustParseAddr("2001:db8:1::a")
	if !r.dp.IsPeer(a, 88*time.Second) || r.dp.IsPeer(a, 91*time.Second) {
		t.Errorf("a peer counts 88 s on: %v, 91 s on: %v; want 90 s", r.dp.IsPeer(a, 88*time.Second), r.dp.IsPeer(a, 91*time.Second))
	}
	// many peers: each that the kernel sent to is remembered
	var many []netip.Addr
	for i := 0; i < 100; i++ {
		ip := net.ParseIP("2001:db8:1::100").To16()
		ip[14], ip[15] = byte(i>>8), byte(i)
		mw.ForwardOwn(dataSeg(t, routerAddr, ip, 179, 40000, layers.TCP{ACK: true}))
		many = append(many, netip.AddrFrom16([16]byte(ip)))
	}
	r.recv(r.ta)
	lost := 0
	for _, a := range many {
		if !r.dp.IsPeer(a, 0) {
			lost++
		}
	}
	if lost > 4 { // five in one way group of four: about 1% for 100
		t.Errorf("%d of 100 peers forgotten", lost)
	}
}

func coppOf(l *dataplane.Link, c dataplane.CoPPClass) dataplane.CoPPCount {
	return l.Stats().CoPP[c]
}

// TestCoPPBucket: beyond its burst (and its rate, a packet a second) a
// class drops; the drops are policed drops, counted per class and link;
// another class, and the same class on another link, still pass.
func TestCoPPBucket(t *testing.T) {
	r := newRig(t)
	r.dp.SetCoPP(dataplane.CoPPEcho, dataplane.CoPPLimit{Rate: 1, Burst: 5})
	r.dp.SetCoPP(dataplane.CoPPOther, dataplane.CoPPLimit{Rate: 1, Burst: 3})
	echo := echoRequest(t, host1, routerAddr)
	var batch [][]byte
	for i := 0; i < 40; i++ {
		batch = append(batch, echo)
	}
	r.run(batch...)
	r.run(batch[:20]...)
	replies := len(r.recv(r.ta))
	e := coppOf(r.ta, dataplane.CoPPEcho)
	// a second may pass in between: one more
	if e.Passed < 5 || e.Passed > 6 || e.Passed+e.Dropped != 60 || uint64(replies) != e.Passed {
		t.Errorf("60 echo requests at burst 5: passed %d, dropped %d, %d replies", e.Passed, e.Dropped, replies)
	}
	if n := r.ta.Stats().Drops[dataplane.DropPoliced].Count; n != e.Dropped {
		t.Errorf("policed drops %d, echo dropped %d", n, e.Dropped)
	}
	if s := r.ta.Stats(); s.RxDropped < e.Dropped {
		t.Errorf("rx dropped %d leaves out %d policed", s.RxDropped, e.Dropped)
	}
	r.run(udpPorts(t, host1, routerAddr, 4000, 53), udpPorts(t, host1, routerAddr, 4000, 3784))
	if o, rt := coppOf(r.ta, dataplane.CoPPOther), coppOf(r.ta, dataplane.CoPPRouting); o.Passed != 1 || rt.Passed != 1 {
		t.Errorf("with echo flooded: other passed %d, routing passed %d", o.Passed, rt.Passed)
	}
	// tb's echo bucket is its own
	wb := dataplane.NewTestWorker(r.dp, r.tb, 2)
	wb.Forward(echoRequest(t, host2, net.ParseIP("2001:db8:2::1")))
	if got := len(r.recv(r.tb)); got != 1 || coppOf(r.tb, dataplane.CoPPEcho).Passed != 1 {
		t.Errorf("tb's echo request: %d replies, %+v", got, coppOf(r.tb, dataplane.CoPPEcho))
	}
	// the limit lifted (rate 0) passes everything
	r.dp.SetCoPP(dataplane.CoPPEcho, dataplane.CoPPLimit{})
	before := coppOf(r.ta, dataplane.CoPPEcho)
	r.run(batch...)
	if after := coppOf(r.ta, dataplane.CoPPEcho); after.Passed != before.Passed+40 || after.Dropped != before.Dropped {
		t.Errorf("no limit: %+v -> %+v", before, after)
	}
	r.recv(r.ta)
	// forwarded packets never meet it
	r.dp.SetCoPP(dataplane.CoPPOther, dataplane.CoPPLimit{Rate: 1, Burst: 1})
	before = coppOf(r.ta, dataplane.CoPPOther)
	var fwd [][]byte
	for i := 0; i < 30; i++ {
		fwd = append(fwd, udpPorts(t, host1, host2, 4000, 53))
	}
	tx := r.tb.Stats().TxPackets
	r.run(fwd...)
	r.recv(r.tb)
	if got := r.tb.Stats().TxPackets - tx; got != 30 || coppOf(r.ta, dataplane.CoPPOther) != before {
		t.Errorf("30 forwarded: %d out, other %+v -> %+v", got, before, coppOf(r.ta, dataplane.CoPPOther))
	}
}

// TestCoPPSharedBucket: workers flooding one link's bucket at once pass
// no more than its burst and rate allow together (go test -race).
func TestCoPPSharedBucket(t *testing.T) {
	r := newRig(t)
	r.dp.SetCoPP(dataplane.CoPPEcho, dataplane.CoPPLimit{Rate: 100, Burst: 50})
	echo := echoRequest(t, host1, routerAddr)
	batch := make([][]byte, 64)
	for i := range batch {
		batch[i] = echo
	}
	const workers, rounds = 4, 40
	var clock atomic.Int64 // each round moves it a millisecond
	r.dp.SetClock(clock.Load)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		w := dataplane.NewTestWorker(r.dp, r.ta, 10+i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < rounds; j++ {
				clock.Add(int64(time.Millisecond))
				w.Forward(batch...)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Duration(clock.Load())
	e := coppOf(r.ta, dataplane.CoPPEcho)
	allowed := 50 + uint64(elapsed.Seconds()*100) + 1
	if e.Passed+e.Dropped != workers*rounds*64 || e.Passed < 50 || e.Passed > allowed {
		t.Errorf("%d workers, %d echo requests in %v: passed %d (at most %d), dropped %d",
			workers, workers*rounds*64, elapsed, e.Passed, allowed, e.Dropped)
	}
}
