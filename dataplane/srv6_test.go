package dataplane_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/nexthop"
	"urouter/rules"
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
	in := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:9::1"), layers.IPProtocolUDP, 64)}, udp(100)...)...)
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
	big := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:9::1"), layers.IPProtocolUDP, 64)}, udp(1321-48)...)...)
	r.run(big)
	back := r.recv(r.ta)
	if len(back) != 1 {
		t.Fatalf("%d packets back to ta, want a Packet Too Big", len(back))
	}
	if _, ic := icmpOf(t, back[0]); ic.TypeCode.Type() != layers.ICMPv6TypePacketTooBig || binary.BigEndian.Uint32(ic.Payload[:4]) != 1320 {
		t.Errorf("%v, MTU %d; want Packet Too Big, 1320", ic.TypeCode, binary.BigEndian.Uint32(ic.Payload[:4]))
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
		craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:9::1"), layers.IPProtocolUDP, 64)}, udp(100)...)...),
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

func drops(l *dataplane.Link, reason string) uint64 {
	for _, d := range l.Stats().Drops {
		if d.Reason == reason {
			return d.Count
		}
	}
	return 0
}

// TestSRv6EncapGSO: a TCP super-packet of almost 64 KiB to a seg6 route
// (its outer packet longer than an IPv6 payload length can say) leaves
// tb cut into segments, each encapsulated: the outer and inner payload
// lengths its own, the TCP checksum over the inner pseudo-header, the
// sequence numbers in order. The kernel could not cut IPv6 in IPv6 that
// a virtio_net_hdr cannot mark so.
func TestSRv6EncapGSO(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	const mss, size = 1200, 65400
	r.run(superTCP(t, net.ParseIP("2001:db8:9::1"), mss, size))
	segs := r.recv(r.tb)
	if want := (size + mss - 1) / mss; len(segs) != want {
		t.Fatalf("%d segments on tb, want %d", len(segs), want)
	}
	seq, total := uint32(7), 0
	for i, s := range segs {
		p := s[dataplane.VnetHdrLen:]
		h := seg6.SRHAt(p, 40)
		if h == nil || int(binary.BigEndian.Uint16(p[4:])) != len(p)-40 {
			t.Fatalf("segment %d: SRH % x, outer payload length %d of %d", i, []byte(h), binary.BigEndian.Uint16(p[4:]), len(p)-40)
		}
		in := p[40+h.Len():]
		if int(binary.BigEndian.Uint16(in[4:])) != len(in)-40 || dataplane.TransportSum(in, 40, 6) != 0xffff {
			t.Fatalf("segment %d: inner payload length %d of %d, checksum bad: %v", i, binary.BigEndian.Uint16(in[4:]), len(in)-40,
				dataplane.TransportSum(in, 40, 6) != 0xffff)
		}
		if got := binary.BigEndian.Uint32(in[44:]); got != seq {
			t.Errorf("segment %d: seq %d, want %d", i, got, seq)
		}
		seq += uint32(len(in) - 60)
		total += len(in) - 60
	}
	if total != size {
		t.Errorf("%d bytes of payload through, want %d", total, size)
	}
}

// superTCP is a TCP super-packet of size bytes from host1 to dst, its
// segments mss bytes, its checksum left to offload as a sender leaves it
// (the pseudo-header's sum in the field).
func superTCP(t testing.TB, dst net.IP, mss, size int) []byte {
	tcp := &layers.TCP{SrcPort: 5555, DstPort: 80, Seq: 7, ACK: true, Window: 100, DataOffset: 5}
	b := craft(t, ipv6(host1, dst, layers.IPProtocolTCP, 64), tcp, gopacket.Payload(make([]byte, size)))
	b[0], b[1] = unix.VIRTIO_NET_HDR_F_NEEDS_CSUM, unix.VIRTIO_NET_HDR_GSO_TCPV6
	binary.LittleEndian.PutUint16(b[2:], 60)
	binary.LittleEndian.PutUint16(b[4:], uint16(mss))
	binary.LittleEndian.PutUint16(b[6:], 40)
	binary.LittleEndian.PutUint16(b[8:], 16)
	binary.BigEndian.PutUint16(b[dataplane.VnetHdrLen+40+16:], ^dataplane.TransportSum(b[dataplane.VnetHdrLen:dataplane.VnetHdrLen+40], 40, 6))
	return b
}

// TestSRv6InlineGSO: a super-packet that H.Insert gave an SRH leaves
// whole by a link that takes super-packets (the kernel segments IPv6
// with extension headers itself), its offsets moved past the SRH; by one
// that does not, cut by urouter, each segment's checksum over the final
// destination's pseudo-header (RFC 8200 8.1), not the first segment's.
func TestSRv6InlineGSO(t *testing.T) {
	r := newRig(t)
	for _, rr := range []struct {
		dst, seg string
		l        *dataplane.Link
	}{{"2001:db8:7a::/64", "2001:db8:2::5", r.tb}, {"2001:db8:7b::/64", "2001:db8:3::5", r.tc}} {
		e, err := seg6.NewEncap(seg6.ModeInline, seg6.BuildSRH([]netip.Addr{netip.MustParseAddr(rr.seg), netip.IPv6Unspecified()}))
		if err != nil {
			t.Fatal(err)
		}
		x := r.r.Tables.Main().Begin()
		err = x.Add(fib6.Route{Dst: netip.MustParsePrefix(rr.dst), Attrs: fib6.Attrs{Metric: 1024, Nexthop: nexthop.Nexthop{Link: rr.l.Index, Encap: &seg6.State{Encap: e}}}})
		x.Commit()
		if err != nil {
			t.Fatal(err)
		}
	}
	const mss, size = 1200, 30000
	r.run(superTCP(t, net.ParseIP("2001:db8:7a::1"), mss, size))
	whole := r.recv(r.tb)
	if len(whole) != 1 {
		t.Fatalf("%d packets on tb, want the super-packet whole", len(whole))
	}
	vh, p := whole[0][:dataplane.VnetHdrLen], whole[0][dataplane.VnetHdrLen:]
	h := seg6.SRHAt(p, 40)
	if h == nil || vh[1] != unix.VIRTIO_NET_HDR_GSO_TCPV6 || int(binary.LittleEndian.Uint16(vh[6:])) != 40+h.Len() || len(p) != 40+h.Len()+20+size {
		t.Errorf("on tb: virtio_net_hdr % x, SRH % x, %d bytes", vh, []byte(h), len(p))
	}
	r.run(superTCP(t, net.ParseIP("2001:db8:7b::1"), mss, size))
	segs := r.recv(r.tc)
	if want := (size + mss - 1) / mss; len(segs) != want {
		t.Fatalf("%d segments on tc, want %d", len(segs), want)
	}
	final := tcpip.AddrFrom16Slice(net.ParseIP("2001:db8:7b::1"))
	for i, p := range segs { // tc has no virtio_net_hdr
		h := seg6.SRHAt(p, 40)
		if h == nil || dstOf(p) != netip.MustParseAddr("2001:db8:3::5") {
			t.Fatalf("segment %d: to %v, SRH % x", i, dstOf(p), []byte(h))
		}
		l4 := p[40+h.Len():]
		sum := header.PseudoHeaderChecksum(6, tcpip.AddrFrom16Slice(host1), final, uint16(len(l4)))
		if checksum.Checksum(l4, sum) != 0xffff {
			t.Fatalf("segment %d: TCP checksum not over the final destination's pseudo-header", i)
		}
	}
}

// TestSRv6Trace: a trace records each SRv6 step: the encapsulation, the
// outer packet it made and where that was decided to go; the behaviour,
// its SID, the Segments Left it left; a refused packet, why.
func TestSRv6Trace(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	r.dp.ArmTrace(3, r.ta, nil)
	r.run(craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:9::1"), layers.IPProtocolUDP, 64)}, udp(100)...)...),
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

// TestSRv6Own: the kernel's packets out of a mirror to a seg6 route's
// prefix are encapsulated too (Linux's output redirect), keeping the hop
// limit the kernel gave them.
func TestSRv6Own(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	mw := dataplane.NewTestMirrorWorker(r.dp, r.ta, 1)
	mw.ForwardOwn(craft(t, append([]gopacket.SerializableLayer{ipv6(routerAddr, net.ParseIP("2001:db8:9::1"), layers.IPProtocolUDP, 30)}, udp(100)...)...))
	got := r.recv(r.tb)
	if len(got) != 1 {
		t.Fatalf("tb got %d packets, want the kernel's one, encapsulated", len(got))
	}
	p := got[0][dataplane.VnetHdrLen:]
	if h := seg6.SRHAt(p, 40); h == nil || dstOf(p) != netip.MustParseAddr("2001:db8:2::5") || p[7] != 30 || dstOf(p[40+h.Len():]) != netip.MustParseAddr("2001:db8:9::1") {
		t.Errorf("the kernel's packet left as % x", p[:min(len(p), 80)])
	}
}

// TestSRv6OwnAnswers: the router's own answers to a source behind a seg6
// route leave encapsulated (Linux's seg6_output): an echo reply and a
// Time Exceeded, each inside an outer header to the route's first
// segment, whose hop limit is the inner's (tb's 64: not forwarded).
func TestSRv6OwnAnswers(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	far := net.ParseIP("2001:db8:9::1")
	expired := craft(t, append([]gopacket.SerializableLayer{ipv6(far, net.ParseIP("2001:db8:3::9"), layers.IPProtocolUDP, 1)}, udp(100)...)...)
	r.run(echoRequest(t, far, net.ParseIP("2001:db8:1::1")), expired)
	got := r.recv(r.tb)
	if len(got) != 2 {
		t.Fatalf("tb got %d packets, want the echo reply and the Time Exceeded", len(got))
	}
	for i, want := range []layers.ICMPv6TypeCode{layers.CreateICMPv6TypeCode(129, 0), layers.CreateICMPv6TypeCode(3, 0)} {
		p := got[i][dataplane.VnetHdrLen:]
		h := seg6.SRHAt(p, seg6.Find(p, false))
		if h == nil || dstOf(p) != netip.MustParseAddr("2001:db8:2::5") || p[7] != 64 || h.SegmentsLeft() != 1 {
			t.Errorf("answer %d left as % x", i, p[:min(len(p), 80)])
			continue
		}
		inner := append(make([]byte, dataplane.VnetHdrLen), p[40+h.Len():]...)
		ip, ic := icmpOf(t, inner)
		if ic.TypeCode != want || !ip.DstIP.Equal(far) || ip.HopLimit != 64 {
			t.Errorf("answer %d inside: %v to %v, hop limit %d; want %v to %v", i, ic.TypeCode, ip.DstIP, ip.HopLimit, want, far)
		}
	}
}

// TestSRv6Multipath: each path of a multipath route has its own
// encapsulation; a flow keeps to one path, and flows take both.
func TestSRv6Multipath(t *testing.T) {
	r := newRig(t)
	var ms []nexthop.Member
	for _, sid := range []string{"2001:db8:2::8a", "2001:db8:2::8b"} {
		e, err := seg6.NewEncap(seg6.ModeEncap, seg6.BuildSRH([]netip.Addr{netip.MustParseAddr(sid)}))
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, nexthop.Member{Nexthop: nexthop.Nexthop{Link: r.tb.Index, Encap: &seg6.State{Encap: e}}, Weight: 1})
	}
	x := r.r.Tables.Main().Begin()
	err := x.Add(fib6.Route{Dst: netip.MustParsePrefix("2001:db8:8::/64"), Attrs: fib6.Attrs{Metric: 1024, Group: nexthop.NewGroup(ms)}})
	x.Commit()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[netip.Addr]int{}
	for i := range 32 {
		src := net.ParseIP(fmt.Sprintf("2001:db8:1::%x", 0x100+i)) // the default hash is L3's
		var sids []netip.Addr
		for range 2 {
			r.run(udpPorts(t, src, net.ParseIP("2001:db8:8::1"), 1000, 53))
			for _, b := range r.recv(r.tb) {
				sids = append(sids, dstOf(b[dataplane.VnetHdrLen:]))
			}
		}
		if len(sids) != 2 || sids[0] != sids[1] {
			t.Fatalf("flow from %v left by %v, want twice the same SID", src, sids)
		}
		seen[sids[0]]++
	}
	if len(seen) != 2 {
		t.Errorf("32 flows took %v, want both paths' SIDs", seen)
	}
}

// TestSRv6RulesSeeOuter: rules with ipproto see an encapsulated packet
// as Linux's flow dissector does (past the SRH, stopping at the inner
// IPv6): H.Encaps's outer packet is ipproto ipv6, and goes by the table
// a rule on that gives it; H.Insert's keeps the packet's own, udp.
func TestSRv6RulesSeeOuter(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	ins, err := seg6.NewEncap(seg6.ModeInline, seg6.BuildSRH([]netip.Addr{netip.MustParseAddr("2001:db8:2::5"), netip.IPv6Unspecified()}))
	if err != nil {
		t.Fatal(err)
	}
	for table, rt := range map[uint32]fib6.Route{
		300: {Dst: netip.MustParsePrefix("2001:db8:2::5/128"), Attrs: fib6.Attrs{Metric: 1, Nexthop: nexthop.Nexthop{Link: r.tc.Index}}},
		254: {Dst: netip.MustParsePrefix("2001:db8:7c::/64"), Attrs: fib6.Attrs{Metric: 1, Nexthop: nexthop.Nexthop{Link: r.tb.Index, Encap: &seg6.State{Encap: ins}}}},
	} {
		x := r.r.Tables.Ensure(table).Begin()
		err := x.Add(rt)
		x.Commit()
		if err != nil {
			t.Fatal(err)
		}
	}
	// the first segment's own route is main's (tb); table 300's (tc) is
	// for what the rules give it
	rx := r.r.Rules.Begin()
	_, err1 := rx.Add(rules.Rule{Pref: 100, IPProto: seg6.ProtoIPv6, Action: rules.ToTable, Table: 300}, true)
	_, err2 := rx.Add(rules.Rule{Pref: 101, IPProto: 17, Dst: netip.MustParsePrefix("2001:db8:2::5/128"), Action: rules.ToTable, Table: 300}, true)
	rx.Commit()
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	r.run(udpTo(t, net.ParseIP("2001:db8:9::1"), 100))
	if got := r.recv(r.tc); len(got) != 1 || dstOf(got[0]) != netip.MustParseAddr("2001:db8:2::5") {
		t.Errorf("H.Encaps's outer packet: %d on tc, want 1 by table 300 (ipproto ipv6)", len(got))
	}
	r.run(udpTo(t, net.ParseIP("2001:db8:7c::1"), 100))
	if got := r.recv(r.tc); len(got) != 1 || dstOf(got[0]) != netip.MustParseAddr("2001:db8:2::5") {
		t.Errorf("H.Insert's packet: %d on tc, want 1 by table 300 (ipproto udp past the SRH)", len(got))
	}
}

// TestSRv6MovedBuffers: a port that moved its read buffers around (an
// Ethernet reader keeps a batch's frames together when it takes some
// for ND) leaves each packet its room all the same.
func TestSRv6MovedBuffers(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	r.w.SwapBuffers(0, 1)
	in := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:9::1"), layers.IPProtocolUDP, 64)}, udp(100)...)...)
	r.run(in, srPacket(t, tenant, 1, sidEnd, nextSID))
	if got := r.recv(r.tb); len(got) != 2 {
		t.Errorf("tb got %d packets, want both (seg6 drops: %d)", len(got), drops(r.ta, "seg6"))
	}
}
