package dataplane_test

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"

	"urouter/dataplane"
	"urouter/internal/filter"
)

func TestForwardUDP(t *testing.T) {
	r := newRig(t)
	r.run(craft(t, append([]gopacket.SerializableLayer{ipv6(host1, host2, layers.IPProtocolUDP, 64)}, udp(100)...)...))
	got := r.recv(r.tb)
	if len(got) != 1 {
		t.Fatalf("%d packets out of tb", len(got))
	}
	p := decode(t, got[0], true)
	if hl := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6).HopLimit; hl != 63 {
		t.Errorf("hop limit %d, want 63", hl)
	}
	if s := r.tb.Stats(); s.TxPackets != 1 || r.ta.Stats().RxPackets != 1 {
		t.Errorf("counters: tb tx %d, ta rx %d", s.TxPackets, r.ta.Stats().RxPackets)
	}
	// bytes are the IPv6 packet's, as Linux counts them: no virtio_net_hdr
	size := uint64(40 + 8 + 100)
	if tx, rx := r.tb.Stats().TxBytes, r.ta.Stats().RxBytes; tx != size || rx != size {
		t.Errorf("byte counters: tb tx %d, ta rx %d, want %d", tx, rx, size)
	}
}

func TestICMPErrors(t *testing.T) {
	r := newRig(t)
	cases := []struct {
		name       string
		dst        net.IP
		hl         uint8
		size       int
		typ, code  uint8
		param      uint32
		dropReason dataplane.DropReason
	}{
		{"no route", net.ParseIP("2001:db8:99::1"), 64, 100, 1, 0, 0, dataplane.DropNoRoute},
		{"unreachable", net.ParseIP("2001:db8:66::1"), 64, 100, 1, 0, 0, dataplane.DropNoRoute},
		{"prohibit", net.ParseIP("2001:db8:67::1"), 64, 100, 1, 1, 0, dataplane.DropProhibited},
		{"hop limit", host2, 1, 100, 3, 0, 0, dataplane.DropHopLimit},
		{"too big for the link", host2, 64, 1400, 2, 0, 1400, dataplane.DropTooBig},
		{"too big for the route", net.ParseIP("2001:db8:69::1"), 64, 1300, 2, 0, 1300, dataplane.DropTooBig},
		{"closed port", routerAddr, 64, 10, 1, 4, 0, dataplane.DropLocal},
	}
	for _, c := range cases {
		pkt := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, c.dst, layers.IPProtocolUDP, c.hl)}, udp(c.size)...)...)
		before := r.ta.Stats().Drops[c.dropReason].Count
		r.run(pkt)
		got := r.recv(r.ta)
		if len(got) != 1 {
			t.Errorf("%s: %d answers", c.name, len(got))
			continue
		}
		ip, ic := icmpOf(t, got[0])
		if ic.TypeCode.Type() != c.typ || ic.TypeCode.Code() != c.code {
			t.Errorf("%s: %v, want type %d code %d", c.name, ic.TypeCode, c.typ, c.code)
		}
		if !ip.SrcIP.Equal(routerAddr) || !ip.DstIP.Equal(host1) {
			t.Errorf("%s: from %s to %s", c.name, ip.SrcIP, ip.DstIP)
		}
		if param := binary.BigEndian.Uint32(ic.Payload[:4]); param != c.param {
			t.Errorf("%s: param %d, want %d", c.name, param, c.param)
		}
		quoted := ic.Payload[4:]
		if want := min(len(pkt)-dataplane.VnetHdrLen, dataplane.MinMTU-48); len(quoted) != want || string(quoted[:40]) != string(pkt[dataplane.VnetHdrLen:dataplane.VnetHdrLen+40]) {
			t.Errorf("%s: quotes %d bytes, want %d of the packet", c.name, len(quoted), want)
		}
		if n := r.ta.Stats().Drops[c.dropReason].Count - before; n != 1 {
			t.Errorf("%s: %s counted %d times", c.name, c.dropReason, n)
		}
	}
	// never an error about an error
	r.run(craft(t, ipv6(host1, net.ParseIP("2001:db8:99::1"), layers.IPProtocolICMPv6, 64),
		&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(1, 0)}, gopacket.Payload(make([]byte, 44))))
	if got := r.recv(r.ta); len(got) != 0 {
		t.Errorf("an error answered an error")
	}
	// a blackhole is silent
	r.run(craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:68::1"), layers.IPProtocolUDP, 64)}, udp(10)...)...))
	if got := r.recv(r.ta); len(got) != 0 || r.ta.Stats().Drops[dataplane.DropBlackhole].Count != 1 {
		t.Errorf("blackhole answered or not counted")
	}
}

func TestEcho(t *testing.T) {
	r := newRig(t)
	r.run(craft(t, ipv6(host1, net.ParseIP("2001:db8:2::1"), layers.IPProtocolICMPv6, 1),
		&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)},
		&layers.ICMPv6Echo{Identifier: 7, SeqNumber: 9}, gopacket.Payload("hello")))
	got := r.recv(r.ta)
	if len(got) != 1 {
		t.Fatalf("%d replies", len(got))
	}
	ip, ic := icmpOf(t, got[0])
	if ic.TypeCode.Type() != 129 || !ip.SrcIP.Equal(net.ParseIP("2001:db8:2::1")) || !ip.DstIP.Equal(host1) {
		t.Fatalf("reply %v from %s to %s", ic.TypeCode, ip.SrcIP, ip.DstIP)
	}
	if string(ic.Payload[4:]) != "hello" {
		t.Fatalf("echo data %q", ic.Payload)
	}
}

func TestMartiansAndMalformed(t *testing.T) {
	r := newRig(t)
	good := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, host2, layers.IPProtocolUDP, 64)}, udp(20)...)...)
	long := append(append([]byte(nil), good...), make([]byte, 30)...) // longer than its payload length
	short := append([]byte(nil), good...)
	binary.BigEndian.PutUint16(short[dataplane.VnetHdrLen+4:], 500)
	v4 := append([]byte(nil), good...)
	v4[dataplane.VnetHdrLen] = 0x45
	mcast := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("ff0e::1"), layers.IPProtocolUDP, 64)}, udp(20)...)...)
	// a TUN's kernel side as it comes up: a Router Solicitation and an MLD
	// report, to link-scope groups, are the router's, not martians
	rs := craft(t, ipv6(net.ParseIP("fe80::2"), net.ParseIP("ff02::2"), layers.IPProtocolICMPv6, 255),
		&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(133, 0)}, gopacket.Payload(make([]byte, 4)))
	mld := craft(t, ipv6(net.IPv6unspecified, net.ParseIP("ff02::16"), layers.IPProtocolICMPv6, 1),
		&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(143, 0)}, gopacket.Payload(make([]byte, 4)))
	unspec := craft(t, append([]gopacket.SerializableLayer{ipv6(net.IPv6unspecified, host2, layers.IPProtocolUDP, 64)}, udp(20)...)...)
	llsrc := craft(t, append([]gopacket.SerializableLayer{ipv6(net.ParseIP("fe80::2"), host2, layers.IPProtocolUDP, 64)}, udp(20)...)...)
	r.run(good[:dataplane.VnetHdrLen+30], v4, short, long, mcast, unspec, llsrc, rs, mld)
	s := r.ta.Stats()
	for reason, n := range map[dataplane.DropReason]uint64{dataplane.DropTruncated: 1, dataplane.DropVersion: 1, dataplane.DropLength: 1,
		dataplane.DropMartian: 3, dataplane.DropLocal: 2} {
		if s.Drops[reason].Count != n {
			t.Errorf("%s: %d, want %d", reason, s.Drops[reason].Count, n)
		}
	}
	got := r.recv(r.tb)
	if len(got) != 1 || len(got[0]) != len(good) {
		t.Fatalf("the packet longer than its payload length should go out trimmed: %d packets", len(got))
	}
}

// TestGSO: a TCP super-packet goes out whole to a link with offloads,
// judged by its segment size; to a link without, it is cut into valid
// segments.
func TestGSO(t *testing.T) {
	r := newRig(t)
	tc := r.tc
	const mss = 1000
	tcp := &layers.TCP{SrcPort: 5555, DstPort: 80, Seq: 1000, ACK: true, PSH: true, Window: 100, DataOffset: 5}
	mk := func(dst net.IP) []byte {
		b := craft(t, ipv6(host1, dst, layers.IPProtocolTCP, 64), tcp, gopacket.Payload(make([]byte, 4500)))
		b[0], b[1] = unix.VIRTIO_NET_HDR_F_NEEDS_CSUM, unix.VIRTIO_NET_HDR_GSO_TCPV6
		binary.LittleEndian.PutUint16(b[2:], 60)
		binary.LittleEndian.PutUint16(b[4:], mss)
		binary.LittleEndian.PutUint16(b[6:], 40)
		binary.LittleEndian.PutUint16(b[8:], 16)
		return b
	}
	r.run(mk(host2)) // tb: MTU 1400 > 40+20+1000
	if got := r.recv(r.tb); len(got) != 1 || len(got[0]) != dataplane.VnetHdrLen+60+4500 {
		t.Fatalf("super-packet to tb: %d packets", len(got))
	}
	r.run(mk(net.ParseIP("2001:db8:3::2")))
	segs := r.recv(tc)
	if len(segs) != 5 {
		t.Fatalf("%d segments, want 5", len(segs))
	}
	seq := uint32(1000)
	for i, s := range segs {
		p := gopacket.NewPacket(s, layers.LayerTypeIPv6, gopacket.Default)
		tl := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if tl.Seq != seq || len(tl.Payload) != min(mss, 4500-i*mss) || tl.PSH != (i == 4) {
			t.Errorf("segment %d: seq %d len %d psh %v", i, tl.Seq, len(tl.Payload), tl.PSH)
		}
		if dataplane.TransportSum(s, 40, 6) != 0xffff {
			t.Errorf("segment %d: bad TCP checksum", i)
		}
		seq += uint32(len(tl.Payload))
	}
}

// TestNoAllocs: the packet path allocates nothing per packet, whatever
// becomes of the packets, through a resilient group and inline paths too.
func TestNoAllocs(t *testing.T) {
	r := newRig(t)
	batch := [][]byte{
		craft(t, append([]gopacket.SerializableLayer{ipv6(host1, host2, layers.IPProtocolUDP, 64)}, udp(100)...)...),
		craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:99::1"), layers.IPProtocolUDP, 64)}, udp(100)...)...),
		craft(t, ipv6(host1, routerAddr, layers.IPProtocolICMPv6, 64),
			&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}, &layers.ICMPv6Echo{}, gopacket.Payload("x")),
		craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:d::1"), layers.IPProtocolUDP, 64)}, udp(100)...)...),
		craft(t, append([]gopacket.SerializableLayer{ipv6(host1, host2, layers.IPProtocolUDP, 1)}, udp(100)...)...),
		craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:6a::1"), layers.IPProtocolUDP, 64)}, udp(100)...)...),
		craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:6b::1"), layers.IPProtocolUDP, 64)}, udp(100)...)...),
	}
	r.run(batch...) // the worker's counters get made on first use
	buf := make([]byte, 1<<16)
	drain := func() {
		for _, fd := range r.peer {
			for {
				if _, err := unix.Read(fd, buf); err != nil {
					break
				}
			}
		}
	}
	allocs := testing.AllocsPerRun(200, func() {
		r.run(batch...)
		drain()
	})
	if allocs > 0 {
		t.Fatalf("%.1f allocations per batch", allocs)
	}
}

// BenchmarkForward routes batches of 64 UDP packets between two links:
// the packet path's own cost, writes included (-benchmem: no allocation).
// BenchmarkForward forwards batches of 64 UDP packets from ta to tb: with
// nothing watching (nocapture); with a capture of every link, in, out and
// drops, whose filter takes none of them (capture-nomatch: each packet is
// filtered on its way in and out); after a trace has taken its packet
// and disarmed (trace-unarmed); and with ta and tb in a VRF, the packets
// decided through the l3mdev rule in its table (vrf: against nocapture,
// the VRF's cost).
func BenchmarkForward(b *testing.B) {
	b.Run("nocapture", func(b *testing.B) { benchForward(b, func(*rig) {}) })
	b.Run("vrf", func(b *testing.B) { benchForward(b, func(r *rig) { inVRF(b, r) }) })
	b.Run("capture-nomatch", func(b *testing.B) {
		benchForward(b, func(r *rig) {
			f, err := filter.Compile("tcp port 179")
			if err != nil {
				b.Fatal(err)
			}
			c := start(b, r, dataplane.CaptureSpec{In: true, Out: true, Drops: true, Filter: f})
			b.Cleanup(func() { r.dp.StopCapture(c) })
		})
	})
	b.Run("trace-unarmed", func(b *testing.B) {
		benchForward(b, func(r *rig) {
			r.dp.ArmTrace(1, nil, nil)
			r.run(craft(b, ipv6(host1, host2, layers.IPProtocolUDP, 64), &layers.UDP{SrcPort: 1, DstPort: 2}))
			r.recv(r.tb)
			if recs, left := r.dp.Traces(); len(recs) != 1 || left != 0 {
				b.Fatalf("the trace took %d packets and has %d to take, want 1 and 0", len(recs), left)
			}
		})
	})
}

func benchForward(b *testing.B, setup func(*rig)) {
	r := newRig(b)
	setup(r)
	pkts := make([][]byte, 64)
	for i := range pkts {
		pkts[i] = craft(b, append([]gopacket.SerializableLayer{ipv6(host1, host2, layers.IPProtocolUDP, 64)}, udp(64)...)...)
	}
	buf := make([]byte, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 64 {
		r.run(pkts...)
		for j := 0; j < 64; j++ {
			// drained: datagrams coalesced into one super-packet leave
			// reads with nothing to read (EAGAIN)
			_, _ = unix.Read(r.peer[r.tb], buf)
		}
	}
}

// TestCoalesce: a batch of datagrams of one flow leaves for a link with
// USO as one super-packet, which cut back (as the receiving kernel does)
// gives the same datagrams with valid checksums; other flows stay apart.
func TestCoalesce(t *testing.T) {
	r := newRig(t)
	var batch [][]byte
	var want [][]byte
	for i := 0; i < 5; i++ {
		n := 64
		if i == 4 {
			n = 30 // a shorter last one joins too
		}
		p := make([]byte, n)
		p[0] = byte(i)
		pk := craft(t, ipv6(host1, host2, layers.IPProtocolUDP, 64), &layers.UDP{SrcPort: 4000, DstPort: 5000}, gopacket.Payload(p))
		batch = append(batch, pk)
		want = append(want, p)
	}
	other := craft(t, ipv6(host1, host2, layers.IPProtocolUDP, 64), &layers.UDP{SrcPort: 4001, DstPort: 5000}, gopacket.Payload("zz"))
	r.run(append(batch, other)...)
	got := r.recv(r.tb)
	if len(got) != 2 {
		t.Fatalf("%d writes, want 2 (the flow coalesced, the other alone)", len(got))
	}
	if typ, size, start, off := dataplane.VnetGSO(got[0]); typ != unix.VIRTIO_NET_HDR_GSO_UDP_L4 || size != 64 || start != 40 || off != 6 {
		t.Fatalf("virtio header: gso %d size %d csum %d+%d", typ, size, start, off)
	}
	if s := r.tb.Stats(); s.TxPackets != 6 {
		t.Errorf("tb counted %d packets sent, want 6 datagrams", s.TxPackets)
	}
	// cut it back with the routerAddr's own segmenter, towards tc (no offloads)
	tc := r.tc
	r.w.Segment(got[0], tc)
	segs := r.recv(tc)
	if len(segs) != 5 {
		t.Fatalf("cut into %d datagrams, want 5", len(segs))
	}
	for i, s := range segs {
		p := gopacket.NewPacket(s, layers.LayerTypeIPv6, gopacket.Default)
		u := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if string(u.Payload) != string(want[i]) || int(u.Length) != 8+len(want[i]) {
			t.Errorf("datagram %d: %d bytes, length %d", i, len(u.Payload), u.Length)
		}
		if dataplane.TransportSum(s, 40, 17) != 0xffff {
			t.Errorf("datagram %d: bad checksum", i)
		}
	}
}
