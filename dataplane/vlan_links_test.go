package dataplane

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"slices"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/dataplane/port"
	"urouter/fib6"
	"urouter/ndisc"
	"urouter/nexthop"
)

// vlanRig is a trunk (an Ethernet link over frames, read by the test's
// worker) with VLAN links 100
// and 200 (802.1Q) and 300 (802.1ad) with 10 (802.1Q) inside it, each with
// 2001:db8:VID::1/64, its connected route, and a reachable host ::2.
type vlanRig struct {
	dp    *Dataplane
	trunk *Link
	vlans map[uint16]*Link // by VID (10: the one inside 300)
	e     *ether
}

var vlanHostMAC = ndisc.MAC{2, 0, 0, 0, 7, 7}

func newVLANRig(tb testing.TB, f port.Frames) *vlanRig {
	tb.Helper()
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	dp, tables := testDataplane()
	links := dp.Links
	e, err := newEther("tap", f, routerMAC, EtherOptions{Neigh: ndisc.DefaultParams()})
	must(err)
	trunk, err := dp.Links.add("trunk", 0, e, 1500) // AddLink without its worker: the test reads
	must(err)
	dp.applyCoPP(trunk)
	e.attach(dp, trunk)
	links.SetUp(trunk, true)
	r := &vlanRig{dp: dp, trunk: trunk, vlans: map[uint16]*Link{}, e: e}
	add := func(parent *Link, tpid, vid uint16, net string) *Link {
		d, err := dp.OpenVLAN(VLANInfo{Parent: parent, TPID: tpid, VID: vid}, EtherOptions{Neigh: ndisc.DefaultParams()})
		must(err)
		l, err := dp.AddLink("v"+net, 0, d, 1500)
		must(err)
		links.SetUp(l, true)
		l.SetDADTransmits(0)
		must(links.AddAddr(l, netip.MustParsePrefix("2001:db8:"+net+"::1/64")))
		x := tables.Main().Begin()
		must(x.Add(fib6.Route{Dst: netip.MustParsePrefix("2001:db8:" + net + "::/64"), Attrs: fib6.Attrs{Metric: 256, Nexthop: nexthop.Nexthop{Link: l.Index}}}))
		x.Commit()
		must(l.Neigh().Set(netip.MustParseAddr("2001:db8:"+net+"::2"), vlanHostMAC, true, ndisc.Permanent, 0, ndisc.Add))
		return l
	}
	r.vlans[100] = add(trunk, port.EtherTypeVLAN, 100, "100")
	r.vlans[200] = add(trunk, port.EtherTypeVLAN, 200, "200")
	r.vlans[300] = add(trunk, port.EtherTypeQinQ, 300, "300")
	r.vlans[10] = add(r.vlans[300], port.EtherTypeVLAN, 10, "10")
	tb.Cleanup(func() {
		for _, l := range links.All() {
			if l.Index != LoopbackIndex {
				_ = dp.Remove(l) // closes what it opened; the frames are memory
			}
		}
	})
	return r
}

// udpFrame is a frame of UDP from 2001:db8:SRC::2 to 2001:db8:DST::2 (ports
// sport, 9) to the router's MAC, with tags (outer first; TPID and VID).
func udpFrame(src, dst string, sport uint16, tags ...uint16) []byte {
	b := make([]byte, 12, 14+4*len(tags)/2+ipv6Len+8+16)
	copy(b[0:6], routerMAC[:])
	copy(b[6:12], vlanHostMAC[:])
	for i := 0; i+1 < len(tags); i += 2 {
		b = binary.BigEndian.AppendUint16(b, tags[i])
		b = binary.BigEndian.AppendUint16(b, tags[i+1])
	}
	b = binary.BigEndian.AppendUint16(b, port.EtherTypeIPv6)
	p := make([]byte, ipv6Len+8+16)
	header.IPv6(p).Encode(&header.IPv6Fields{PayloadLength: 24, TransportProtocol: 17, HopLimit: 64,
		SrcAddr: addrOf(netip.MustParseAddr("2001:db8:" + src + "::2")), DstAddr: addrOf(netip.MustParseAddr("2001:db8:" + dst + "::2"))})
	binary.BigEndian.PutUint16(p[ipv6Len:], sport)
	binary.BigEndian.PutUint16(p[ipv6Len+2:], 9)
	binary.BigEndian.PutUint16(p[ipv6Len+4:], 24)
	return append(b, p...)
}

// batchFrames reads the same batch of frames each time (a port's reader
// taking the outer tag out of each), and keeps what is written.
type batchFrames struct {
	*fakeFrames
	frames  [][]byte
	discard bool // what is written is not kept (a benchmark's)
}

func (b *batchFrames) WriteFrames(hdrs []port.EthHdr, pkts [][]byte) (int, error) {
	return b.WriteTagged(nil, hdrs, pkts)
}

func (b *batchFrames) WriteTagged(tags []byte, hdrs []port.EthHdr, pkts [][]byte) (int, error) {
	if b.discard {
		return len(pkts), nil
	}
	return b.fakeFrames.WriteTagged(tags, hdrs, pkts)
}

func (b *batchFrames) ReadFrames(_ int, bufs [][]byte, hdrs []port.EthHdr, tags []port.VLANTag, sizes []int) (int, error) {
	n := min(len(bufs), len(b.frames))
	for i, fr := range b.frames[:n] {
		copy(hdrs[i][:12], fr)
		rest := fr[12:]
		if tpid := binary.BigEndian.Uint16(rest); port.IsVLAN(tpid) {
			tags[i] = port.VLANTag{TPID: tpid, TCI: binary.BigEndian.Uint16(rest[2:]), Type: binary.BigEndian.Uint16(rest[4:])}
			rest = rest[4:]
			binary.BigEndian.PutUint16(hdrs[i][12:], tpid)
		} else {
			binary.BigEndian.PutUint16(hdrs[i][12:], tpid)
		}
		clear(bufs[i][:vnetHdrLen])
		sizes[i] = vnetHdrLen + copy(bufs[i][vnetHdrLen:], rest[2:])
	}
	return n, nil
}

// TestVLANForward: one batch read from a trunk carries frames of several
// VLAN links (and a tag no link is on): each is routed as having come in
// by its own link, counted there, and leaves by the VLAN link its route
// names with that link's tags (an 802.1Q tag inside an 802.1ad one for
// QinQ), its hop limit one less; the unknown tag is dropped and counted on
// the trunk.
func TestVLANForward(t *testing.T) {
	f := &batchFrames{fakeFrames: newFakeFrames(), frames: [][]byte{
		udpFrame("100", "200", 1, port.EtherTypeVLAN, 100),
		udpFrame("200", "100", 2, port.EtherTypeVLAN, 200),
		udpFrame("100", "10", 3, port.EtherTypeVLAN, 100),
		udpFrame("10", "200", 4, port.EtherTypeQinQ, 300, port.EtherTypeVLAN, 10),
		udpFrame("100", "200", 5, port.EtherTypeVLAN, 4000),
		udpFrame("100", "200", 6, port.EtherTypeVLAN, 100),
	}}
	r := newVLANRig(t, f)
	w := newWorker(r.dp, r.trunk, r.e, 0, 99)
	unknown := dropsOf(r.trunk, DropUnknownVLAN)
	w.readBatch()
	want := []struct {
		sport uint16
		tags  []byte
	}{
		// in by 100: its run's writes, egress by egress in the order queued
		{1, []byte{0x81, 0, 0, 200}}, {6, []byte{0x81, 0, 0, 200}},
		{3, []byte{0x88, 0xa8, 0x01, 0x2c, 0x81, 0, 0, 10}},
		{2, []byte{0x81, 0, 0, 100}}, // in by 200
		{4, []byte{0x81, 0, 0, 200}}, // in by 10, inside 300
	}
	got := f.take()
	if len(got) != len(want) {
		t.Fatalf("%d frames written, want %d", len(got), len(want))
	}
	for i, g := range got {
		sport := binary.BigEndian.Uint16(g.pkt[ipv6Len:])
		if sport != want[i].sport || !bytes.Equal(g.tags, want[i].tags) || g.pkt[7] != 63 {
			t.Errorf("frame %d: port %d, tags % x, hop limit %d; want port %d, tags % x, 63",
				i, sport, g.tags, g.pkt[7], want[i].sport, want[i].tags)
		}
	}
	for vid, n := range map[uint16]uint64{100: 3, 200: 1, 10: 1, 300: 0} {
		if rx := r.vlans[vid].Stats().RxPackets; rx != n {
			t.Errorf("VLAN %d received %d, want %d", vid, rx, n)
		}
	}
	if d := dropsOf(r.trunk, DropUnknownVLAN) - unknown; d != 1 {
		t.Errorf("unknown_vlan on the trunk %d, want 1", d)
	}
	if rx := r.trunk.Stats().RxPackets; rx != 1 {
		t.Errorf("the trunk received %d, want the unknown one", rx)
	}
}

// TestVLANNeighbourDiscovery: a VLAN link answers a solicitation that came
// tagged with its VID, with its tag; a link inside an 802.1ad one answers
// with both tags.
func TestVLANNeighbourDiscovery(t *testing.T) {
	f := newFakeFrames()
	r := newVLANRig(t, f)
	w := newWorker(r.dp, r.trunk, r.e, 0, 98)
	go func() {
		for w.readBatch() {
		}
	}()
	for _, c := range []struct {
		net  string
		tags []uint16
		want []byte
	}{
		{"200", []uint16{port.EtherTypeVLAN, 200}, []byte{0x81, 0, 0, 200}},
		{"10", []uint16{port.EtherTypeQinQ, 300, port.EtherTypeVLAN, 10}, []byte{0x88, 0xa8, 0x01, 0x2c, 0x81, 0, 0, 10}},
	} {
		own := netip.MustParseAddr("2001:db8:" + c.net + "::1")
		host := netip.MustParseAddr("2001:db8:" + c.net + "::5")
		ns := ndFrame(header.ICMPv6NeighborSolicit, host, solicitedNode(own), nsBody(own, &hostMAC), 255)
		for i := len(c.tags) - 2; i >= 0; i -= 2 {
			ns = tagged(ns, c.tags[i], c.tags[i+1])
		}
		f.rx <- ns
		got := waitSent(t, f, 1)
		if !bytes.Equal(got[0].tags, c.want) || header.ICMPv6(got[0].pkt[ipv6Len:]).Type() != header.ICMPv6NeighborAdvert {
			t.Errorf("VLAN %s: answered with tags % x, type %d; want an advertisement tagged % x",
				c.net, got[0].tags, got[0].pkt[ipv6Len], c.want)
		}
	}
}

// BenchmarkForwardVLAN routes batches of 64 frames read from a trunk to
// its VLAN link 200: untagged (in by the trunk itself), and tagged,
// between two VLAN links of the trunk (both ways in one batch, so that
// each is routed in runs): 0 allocations either way.
func BenchmarkForwardVLAN(b *testing.B) {
	for _, c := range []struct {
		name string
		a, z func(i int) []byte
	}{
		{"untagged-in", func(i int) []byte { return udpFrame("9", "200", uint16(i)) }, nil},
		{"tagged-in", func(i int) []byte { return udpFrame("100", "200", uint16(i), port.EtherTypeVLAN, 100) },
			func(i int) []byte { return udpFrame("200", "100", uint16(i), port.EtherTypeVLAN, 200) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := &batchFrames{fakeFrames: newFakeFrames()}
			for i := range 64 {
				if c.z != nil && i%2 == 1 {
					f.frames = append(f.frames, c.z(i))
				} else {
					f.frames = append(f.frames, c.a(i))
				}
			}
			r := newVLANRig(b, f)
			f.discard = true
			w := newWorker(r.dp, r.trunk, r.e, 0, 97)
			w.readBatch() // the workers' per-link counters made
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += 64 {
				w.readBatch()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(b.N, 1)), "ns/packet")
		})
	}
}

// TestVLANChurnStress: VLAN links added to and deleted from a trunk while
// its reader routes batches tagged for them (under -race: the demux's
// table is read without a lock while it changes).
func TestVLANChurnStress(t *testing.T) {
	f := &batchFrames{fakeFrames: newFakeFrames(), discard: true}
	for i := range 32 {
		f.frames = append(f.frames, udpFrame("100", "200", uint16(i), port.EtherTypeVLAN, uint16(100+i%2*400)))
	}
	r := newVLANRig(t, f)
	w := newWorker(r.dp, r.trunk, r.e, 0, 96)
	r.dp.mu.Lock()
	ws := append(slices.Clone(r.dp.snapshot()), w) // registered, so that Remove waits for its batches
	r.dp.workers.Store(&ws)
	r.dp.mu.Unlock()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				w.readBatch()
			}
		}
	}()
	for i := range 200 {
		d, err := r.dp.OpenVLAN(VLANInfo{Parent: r.trunk, TPID: port.EtherTypeVLAN, VID: 500}, EtherOptions{Neigh: ndisc.DefaultParams()})
		if err != nil {
			t.Fatal(i, err)
		}
		l, err := r.dp.AddLink("v500", 0, d, 1500)
		if err != nil {
			t.Fatal(i, err)
		}
		r.dp.Links.SetUp(l, true)
		if err := r.dp.Remove(l); err != nil {
			t.Fatal(i, err)
		}
	}
	close(stop)
	<-done
	if r.vlans[100].Stats().RxPackets == 0 || dropsOf(r.trunk, DropUnknownVLAN) == 0 {
		t.Errorf("VLAN 100 received %d, unknown_vlan %d: the batches were not routed as the links came and went",
			r.vlans[100].Stats().RxPackets, dropsOf(r.trunk, DropUnknownVLAN))
	}
}
