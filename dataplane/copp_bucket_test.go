package dataplane

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// TestGCRAAllowShared: goroutines charging one bucket at the same instant
// pass exactly its burst between them; as time goes by, its rate.
func TestGCRAAllowShared(t *testing.T) {
	var g gcra
	g.set(1000, 64) // 1 ms a packet
	const now = int64(1e12)
	var passed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10_000; j++ {
				if g.allow(now) {
					passed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := passed.Load(); n != 64 {
		t.Errorf("8 goroutines at one instant passed %d, want the burst of 64", n)
	}
	// 10 ms on: ten more, then nothing
	n := 0
	for g.allow(now + 10e6) {
		n++
	}
	if n != 10 {
		t.Errorf("10 ms after an empty bucket, %d passed, want 10", n)
	}
	g.set(0, 0)
	if !g.allow(now) {
		t.Error("rate 0 is no limit")
	}
}

// TestPeerTableWays: a way group keeps the four peers it has while they
// live, however many newcomers come (a fifth is not admitted); an expired
// slot is taken; a peer not admitted is only kept alive, not let in.
func TestPeerTableWays(t *testing.T) {
	var p peerTable
	p.init()
	// addresses that fall in one group
	var same [][16]byte
	_, g0 := p.group(&[16]byte{15: 1})
	for i := 2; len(same) < 7; i++ {
		a := [16]byte{14: byte(i >> 8), 15: byte(i)}
		if _, g := p.group(&a); &g[0] == &g0[0] {
			same = append(same, a)
		}
	}
	for i := range 5 {
		p.learn(&same[i], uint64(100+i), true)
	}
	for i := range 4 {
		if !p.has(&same[i], 105) {
			t.Errorf("peer %d of five evicted by a newcomer", i)
		}
	}
	if p.has(&same[4], 105) {
		t.Error("the fifth of a group of four took a live peer's slot")
	}
	// a bare ACK keeps a peer alive, admits no one
	p.learn(&same[1], 150, false)
	p.learn(&same[6], 150, false)
	if !p.has(&same[1], 191) || p.has(&same[6], 150) {
		t.Errorf("kept alive at 150, at 191: %v; not admitted, at 150: %v", p.has(&same[1], 191), p.has(&same[6], 150))
	}
	// 90 s after the first, it has expired; the new one takes its slot,
	// and an expired peer is not brought back but by a segment that admits
	p.learn(&same[5], 191, true)
	p.learn(&same[0], 191, false)
	if p.has(&same[0], 191) || !p.has(&same[1], 191) || !p.has(&same[5], 191) {
		t.Errorf("after expiry: %v %v %v", p.has(&same[0], 191), p.has(&same[1], 191), p.has(&same[5], 191))
	}
}

// TestEtherPolicesND: Neighbour Discovery beyond the nd class's burst is
// dropped before the ND goroutine, counted as received and policed.
func TestEtherPolicesND(t *testing.T) {
	l, e, f := etherLink(t)
	e.dp.SetCoPP(CoPPND, CoPPLimit{Rate: 1, Burst: 3})
	own := netip.MustParseAddr("2001:db8:91::1")
	ns := ndFrame(header.ICMPv6NeighborSolicit, hostAddr, solicitedNode(own), nsBody(own, &hostMAC), 255)
	before := l.Stats()
	for i := 0; i < 20; i++ {
		f.rx <- ns
	}
	waitFor(t, "the solicitations", func() bool {
		c := l.Stats().CoPP[CoPPND]
		return c.Passed+c.Dropped-before.CoPP[CoPPND].Passed-before.CoPP[CoPPND].Dropped == 20
	})
	waitSent(t, f, 3)
	after := l.Stats()
	nd := after.CoPP[CoPPND]
	if nd.Passed < 3 || nd.Passed > 4 || nd.Dropped != 20-nd.Passed {
		t.Errorf("20 NS at burst 3: passed %d dropped %d", nd.Passed, nd.Dropped)
	}
	if p := dropsOf(l, DropPoliced); p != nd.Dropped {
		t.Errorf("policed drops %d, nd dropped %d", p, nd.Dropped)
	}
	if rx := after.RxPackets - before.RxPackets; rx != 20 {
		t.Errorf("received %d of 20", rx)
	}
}

// TestMirrorClass: multicast given up a mirror is classed as it comes:
// OSPFv3's hellos are routing, MLD reports and the malformed other.
func TestMirrorClass(t *testing.T) {
	_, e, _ := etherLink(t)
	pkt := func(next uint8, dst string, payload []byte) []byte {
		p := make([]byte, ipv6Len+len(payload))
		header.IPv6(p).Encode(&header.IPv6Fields{PayloadLength: uint16(len(payload)), TransportProtocol: tcpipProto(next),
			HopLimit: 1, SrcAddr: addrOf(netip.MustParseAddr("fe80::2")), DstAddr: addrOf(netip.MustParseAddr(dst))})
		copy(p[ipv6Len:], payload)
		return p
	}
	ospf := pkt(protoOSPF, "ff02::5", make([]byte, 40))
	mld := pkt(protoICMPv6, "ff02::16", append([]byte{143, 0, 0, 0}, make([]byte, 24)...))
	rip := pkt(protoUDP, "ff02::9", []byte{2, 9, 2, 9, 0, 12, 0, 0, 1, 1, 0, 0})
	short := ospf[:ipv6Len+10] // its payload length says 40
	for _, c := range []struct {
		name string
		p    []byte
		want CoPPClass
	}{{"OSPFv3 hello", ospf, CoPPRouting}, {"MLDv2 report", mld, CoPPOther}, {"RIPng", rip, CoPPRouting}, {"truncated", short, CoPPOther}} {
		if got := e.mirrorClass(c.p); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
