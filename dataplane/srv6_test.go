package dataplane_test

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/nexthop"
	"urouter/seg6"
)

var (
	sidEnd  = netip.MustParseAddr("fc00:1::1")
	sidPSP  = netip.MustParseAddr("fc00:1::2")
	sidDT6  = netip.MustParseAddr("fc00:1::6")
	nextSID = netip.MustParseAddr("2001:db8:2::7") // on tb
	tenant  = netip.MustParseAddr("2001:db8:b::1") // table 100's, out of tc
)

// withSRv6 gives the rig an H.Encaps route (2001:db8:9::/64 through
// 2001:db8:2::5 then fc00:9::9, out of tb), End and End with PSP SIDs
// out of tb, and an End.DT6 SID into table 100, whose 2001:db8:b::/64 is
// out of tc.
func withSRv6(t testing.TB, r *rig) {
	t.Helper()
	enc, err := seg6.NewEncap(seg6.ModeEncap, seg6.BuildSRH([]netip.Addr{netip.MustParseAddr("2001:db8:2::5"), netip.MustParseAddr("fc00:9::9")}))
	if err != nil {
		t.Fatal(err)
	}
	psp := &seg6.Local{Action: seg6.ActionEnd, Flavors: seg6.Flavors{Ops: seg6.FlavorPSP}}
	dt6 := &seg6.Local{Action: seg6.ActionEndDT6, Table: 100}
	for _, l := range []*seg6.Local{psp, dt6} {
		if err := l.Check(); err != nil {
			t.Fatal(err)
		}
	}
	tb := r.tb.Index
	for _, rr := range []struct {
		table uint32
		dst   string
		nh    nexthop.Nexthop
	}{
		{254, "2001:db8:9::/64", nexthop.Nexthop{Link: tb, Encap: &seg6.State{Encap: enc}}},
		{254, sidEnd.String() + "/128", nexthop.Nexthop{Link: tb, Encap: &seg6.State{Local: &seg6.Local{Action: seg6.ActionEnd}}}},
		{254, sidPSP.String() + "/128", nexthop.Nexthop{Link: tb, Encap: &seg6.State{Local: psp}}},
		{254, sidDT6.String() + "/128", nexthop.Nexthop{Link: tb, Encap: &seg6.State{Local: dt6}}},
		{100, "2001:db8:b::/64", nexthop.Nexthop{Link: r.tc.Index}},
	} {
		x := r.r.Tables.Ensure(rr.table).Begin()
		err := x.Add(fib6.Route{Dst: netip.MustParsePrefix(rr.dst), Attrs: fib6.Attrs{Metric: 1024, Nexthop: rr.nh}})
		x.Commit()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// srPacket is a UDP packet from host1 to inner, encapsulated towards
// segs (visited in order) with sl segments left.
func srPacket(t testing.TB, inner netip.Addr, sl int, segs ...netip.Addr) []byte {
	t.Helper()
	in := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.IP(inner.AsSlice()), layers.IPProtocolUDP, 64)}, udp(100)...)...)
	e, err := seg6.NewEncap(seg6.ModeEncap, seg6.BuildSRH(segs))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512+len(in))
	copy(buf[512:], in[dataplane.VnetHdrLen:])
	start := e.Apply(buf, 512, [16]byte(host1.To16()))
	buf[start+40+3] = byte(sl)
	return append(make([]byte, dataplane.VnetHdrLen), buf[start:]...)
}

func dstOf(p []byte) netip.Addr { return netip.AddrFrom16([16]byte(p[24:40])) }

// TestSRv6Encap: a packet to a seg6 route leaves tb inside an outer
// header and SRH: to the first segment, from tb's address, its hop limit
// the inner's less one, the inner packet whole; one that would not fit
// tb with the encapsulation earns a Packet Too Big that counts it.
func TestSRv6Encap(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	in := udpTo(t, net.ParseIP("2001:db8:9::1"), 100)
	r.run(in)
	got := r.recv(r.tb)
	if len(got) != 1 {
		t.Fatalf("tb got %d packets, want 1", len(got))
	}
	p := got[0][dataplane.VnetHdrLen:]
	srh := seg6.SRHAt(p, seg6.Find(p, false))
	switch {
	case dstOf(p) != netip.MustParseAddr("2001:db8:2::5") || netip.AddrFrom16([16]byte(p[8:24])) != netip.MustParseAddr("2001:db8:2::1"):
		t.Errorf("outer %v -> %v", netip.AddrFrom16([16]byte(p[8:24])), dstOf(p))
	case p[7] != 63:
		t.Errorf("outer hop limit %d, want 63", p[7])
	case srh == nil || srh.SegmentsLeft() != 1 || srh.NextHeader() != seg6.ProtoIPv6:
		t.Errorf("SRH % x", []byte(srh))
	case string(p[40+srh.Len():]) != string(in[dataplane.VnetHdrLen:]):
		t.Errorf("the inner packet changed")
	}
	// tb's MTU is 1400: 1320 bytes fit with the 80 the encapsulation adds
	big := udpTo(t, net.ParseIP("2001:db8:9::1"), 1321-48)
	r.run(big)
	back := r.recv(r.ta)
	if len(back) != 1 {
		t.Fatalf("%d packets back to ta, want a Packet Too Big", len(back))
	}
	if _, ic := icmpOf(t, back[0]); ic.TypeCode.Type() != layers.ICMPv6TypePacketTooBig || binary.BigEndian.Uint32(ic.Payload[:4]) != 1320 {
		t.Errorf("%v, MTU %d; want Packet Too Big, 1320", ic.TypeCode, binary.BigEndian.Uint32(ic.Payload[:4]))
	}
}

// TestSRv6LongestList: the longest segment list Linux takes (127
// segments) is pushed whole on a packet, by a link whose MTU holds it.
func TestSRv6LongestList(t *testing.T) {
	r := newRig(t)
	if err := r.r.SetMTU(r.tc, 9000); err != nil {
		t.Fatal(err)
	}
	segs := []netip.Addr{netip.MustParseAddr("2001:db8:3::5")}
	for i := range 126 {
		segs = append(segs, netip.AddrFrom16([16]byte{0xfc, 15: byte(i + 1)}))
	}
	e, err := seg6.NewEncap(seg6.ModeEncap, seg6.BuildSRH(segs))
	if err != nil {
		t.Fatal(err)
	}
	x := r.r.Tables.Main().Begin()
	err = x.Add(fib6.Route{Dst: netip.MustParsePrefix("2001:db8:7d::/64"), Attrs: fib6.Attrs{Metric: 1024, Nexthop: nexthop.Nexthop{Link: r.tc.Index, Encap: &seg6.State{Encap: e}}}})
	x.Commit()
	if err != nil {
		t.Fatal(err)
	}
	in := udpTo(t, net.ParseIP("2001:db8:7d::1"), 100)
	r.run(in)
	got := r.recv(r.tc)
	if len(got) != 1 {
		t.Fatalf("tc got %d packets, want 1 (seg6 drops %d)", len(got), drops(r.ta, "seg6"))
	}
	if h := seg6.SRHAt(got[0], 40); h == nil || h.LastEntry() != 126 || string(got[0][40+h.Len():]) != string(in[dataplane.VnetHdrLen:]) {
		t.Errorf("the packet with 127 segments: % x", got[0][:min(len(got[0]), 64)])
	}
}

// TestSRv6End: End moves the destination to the next segment and
// decrements Segments Left (and the hop limit, by forwarding); with none
// left it drops the packet and counts it; PSP pops the SRH at the
// penultimate segment; End.DT6 decapsulates and looks the inner packet up
// in table 100.
func TestSRv6End(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	r.run(srPacket(t, tenant, 1, sidEnd, nextSID))
	got := r.recv(r.tb)
	if len(got) != 1 {
		t.Fatalf("End: tb got %d packets, want 1", len(got))
	}
	p := got[0][dataplane.VnetHdrLen:]
	if h := seg6.SRHAt(p, 40); dstOf(p) != nextSID || h == nil || h.SegmentsLeft() != 0 || p[7] != 63 {
		t.Errorf("End: to %v, SRH % x, hop limit %d", dstOf(p), []byte(h), p[7])
	}
	r.run(srPacket(t, tenant, 0, sidEnd, nextSID))
	if got := r.recv(r.tb); len(got) != 0 {
		t.Errorf("End with no segment left: %d packets out", len(got))
	}
	if n := drops(r.ta, "seg6"); n != 1 {
		t.Errorf("seg6 drops %d, want 1", n)
	}
	r.run(srPacket(t, tenant, 1, sidPSP, nextSID))
	got = r.recv(r.tb)
	if len(got) != 1 {
		t.Fatalf("PSP: tb got %d packets", len(got))
	}
	if p := got[0][dataplane.VnetHdrLen:]; p[6] != seg6.ProtoIPv6 || dstOf(p) != nextSID || dstOf(p[40:]) != tenant {
		t.Errorf("PSP: next header %d to %v", p[6], dstOf(p))
	}
	r.run(srPacket(t, netip.MustParseAddr("2001:db8:b::1"), 0, sidDT6))
	got = r.recv(r.tc)
	if len(got) != 1 {
		t.Fatalf("End.DT6: tc got %d packets, want the inner one", len(got))
	}
	if p := got[0]; dstOf(p) != tenant || p[7] != 63 || p[6] != uint8(layers.IPProtocolUDP) {
		t.Errorf("End.DT6: to %v, hop limit %d, next header %d", dstOf(p), p[7], p[6])
	}
}

// TestSRv6Allocs: encapsulation, End and End.DT6 allocate nothing.
func TestSRv6Allocs(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	pkts := [][]byte{
		udpTo(t, net.ParseIP("2001:db8:9::1"), 100),
		srPacket(t, tenant, 1, sidEnd, nextSID),
		srPacket(t, tenant, 0, sidDT6),
	}
	buf := make([]byte, 1<<16)
	allocs := testing.AllocsPerRun(200, func() {
		r.run(pkts...)
		for _, l := range []*dataplane.Link{r.tb, r.tc} {
			for {
				if _, err := unix.Read(r.peer[l], buf); err != nil {
					break
				}
			}
		}
	})
	if allocs > 0 {
		t.Fatalf("%.1f allocations per batch through SRv6", allocs)
	}
}

// TestSRv6BadSRH: what a SID's behaviour drops, as Linux's seg6local
// does (seg6_get_srh, seg6_validate_srh, decap_and_validate): no ICMPv6
// error (those are ipv6_srh_rcv's, for an SRH to an address of the
// router's, not a SID), a seg6 drop on the link, an error in the route's
// counters.
func TestSRv6BadSRH(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	sid := netip.MustParseAddr("fc00:1::9")
	end := &seg6.Local{Action: seg6.ActionEnd, Counted: true}
	x := r.r.Tables.Main().Begin()
	err := x.Add(fib6.Route{Dst: netip.PrefixFrom(sid, 128), Attrs: fib6.Attrs{Metric: 1024, Nexthop: nexthop.Nexthop{Link: r.tb.Index, Encap: &seg6.State{Local: end}}}})
	x.Commit()
	if err != nil {
		t.Fatal(err)
	}
	mangled := func(sl int, f func(srh []byte)) []byte {
		b := srPacket(t, tenant, sl, sid, nextSID)
		f(b[dataplane.VnetHdrLen+40:])
		return b
	}
	for _, c := range []struct {
		name string
		pkt  []byte
	}{
		{"no SRH", udpTo(t, net.IP(sid.AsSlice()), 100)},
		{"no segment left", srPacket(t, tenant, 0, sid, nextSID)},
		{"Segments Left past the list", srPacket(t, tenant, 5, sid, nextSID)},
		{"an HMAC", mangled(1, func(h []byte) { h[5] = seg6.FlagHMAC })},
		{"longer than the packet", mangled(1, func(h []byte) { h[1] = 200 })},
		{"a type 0 routing header", mangled(1, func(h []byte) { h[2] = 0 })},
		{"a bad list length", mangled(1, func(h []byte) { h[1] = 3 })},
		{"End.DT6 with a segment left", srPacket(t, tenant, 1, sidDT6, nextSID)},
	} {
		before := drops(r.ta, "seg6")
		r.run(c.pkt)
		if n := len(r.recv(r.tb)) + len(r.recv(r.tc)) + len(r.recv(r.ta)); n != 0 {
			t.Errorf("%s: %d packets out, want none", c.name, n)
		}
		if drops(r.ta, "seg6") != before+1 {
			t.Errorf("%s: not counted a seg6 drop", c.name)
		}
	}
	if packets, _, errs := end.Counters(); packets != 0 || errs != 7 {
		t.Errorf("End's counters: %d packets, %d errors; want 0 and 7", packets, errs)
	}
}

func drops(l *dataplane.Link, reason string) uint64 {
	for _, d := range l.Stats().Drops {
		if d.Reason == reason {
			return d.Count
		}
	}
	return 0
}

// TestSRv6Trace: a trace records each SRv6 step: the encapsulation, the
// outer packet it made and where that was decided to go; the behaviour,
// its SID, the Segments Left it left; a refused packet, why.
func TestSRv6Trace(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	r.dp.ArmTrace(3, r.ta, nil)
	r.run(udpTo(t, net.ParseIP("2001:db8:9::1"), 100),
		srPacket(t, tenant, 1, sidEnd, nextSID), srPacket(t, tenant, 0, sidEnd, nextSID))
	recs, _ := r.dp.Traces()
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for i, want := range []string{
		"encap seg6 mode encap: 2001:db8:2::1 > 2001:db8:2::5 segleft 1 hoplimit 63; lookup 2001:db8:2::5 in table 254: forward dev tb",
		"action End sid fc00:1::1: 2001:db8:1::2 > 2001:db8:2::7 segleft 0 hoplimit 63; lookup 2001:db8:2::7 in table 254: forward dev tb",
		"action End sid fc00:1::1: refused (no SRH, none left, or a bad one)",
	} {
		found := false
		for _, st := range recs[i].Steps {
			found = found || st.Stage == dataplane.StageSRv6 && st.Text == want
		}
		if !found {
			t.Errorf("record %d has no seg6 step %q: %+v", i, want, recs[i].Steps)
		}
	}
}

// BenchmarkForwardSRv6: the per-packet cost of each role against plain
// forwarding, 64 flows a batch (so none coalesce): H.Encaps of two SIDs,
// End, End.DT6 into a table.
func BenchmarkForwardSRv6(b *testing.B) {
	udpTo := func(dst netip.Addr, sport uint16) []byte {
		return craft(b, ipv6(host1, net.IP(dst.AsSlice()), layers.IPProtocolUDP, 64), &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: 5000},
			gopacket.Payload(make([]byte, 64)))
	}
	flows := func(mk func(i int) []byte) [][]byte {
		pkts := make([][]byte, 64)
		for i := range pkts {
			pkts[i] = mk(i)
		}
		return pkts
	}
	for _, c := range []struct {
		name string
		out  func(*rig) *dataplane.Link
		pkts func(t testing.TB) [][]byte
	}{
		{"plain", func(r *rig) *dataplane.Link { return r.tb }, func(t testing.TB) [][]byte {
			return flows(func(i int) []byte { return udpTo(netip.AddrFrom16([16]byte(host2.To16())), uint16(1000+i)) })
		}},
		{"encap", func(r *rig) *dataplane.Link { return r.tb }, func(t testing.TB) [][]byte {
			return flows(func(i int) []byte { return udpTo(netip.MustParseAddr("2001:db8:9::1"), uint16(1000+i)) })
		}},
		{"end", func(r *rig) *dataplane.Link { return r.tb }, func(t testing.TB) [][]byte {
			return flows(func(i int) []byte { return srPacket(t, tenant, 1, sidEnd, nextSID) })
		}},
		{"end-dt6", func(r *rig) *dataplane.Link { return r.tc }, func(t testing.TB) [][]byte {
			return flows(func(i int) []byte { return srPacket(t, tenant, 0, sidDT6) })
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := newRig(b)
			withSRv6(b, r)
			pkts, out := c.pkts(b), c.out(r)
			r.run(pkts...)
			if got := r.recv(out); len(got) != 64 {
				b.Fatalf("%d packets out of %s, want 64", len(got), out.Name)
			}
			buf := make([]byte, 4096)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += 64 {
				r.run(pkts...)
				for range 64 {
					_, _ = unix.Read(r.peer[out], buf)
				}
			}
		})
	}
}

// TestSRv6MovedBuffers: a port that moved its read buffers around (an
// Ethernet reader keeps a batch's frames together when it takes some
// for ND) leaves each packet its room all the same.
func TestSRv6MovedBuffers(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	r.w.SwapBuffers(0, 1)
	in := udpTo(t, net.ParseIP("2001:db8:9::1"), 100)
	r.run(in, srPacket(t, tenant, 1, sidEnd, nextSID))
	if got := r.recv(r.tb); len(got) != 2 {
		t.Errorf("tb got %d packets, want both (seg6 drops: %d)", len(got), drops(r.ta, "seg6"))
	}
}
