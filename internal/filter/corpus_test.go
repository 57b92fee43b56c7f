package filter

import (
	"math/rand/v2"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// The corpus the differential test runs every expression over: IPv6
// packets of every transport the language names, with and without
// extension headers, at and around the addresses, ports and lengths the
// expressions test, truncated at the lengths where their loads end; and
// IPv4 packets and garbage, which every program rejects.

var (
	corpusAddrs = []string{
		"2001:db8::1", "2001:db8::2", "2001:db8:0:1::5", "2001:db8:7fff::9",
		"2001:db8:8000::1", "2001:db9::1", "2001:dba::7", "fe80::1", "ff02::1",
		"ff05::1:3", "::1", "::", "::ffff:10.0.0.1", "2001:db8::1:0:0:1",
	}
	corpusPorts = []uint16{0, 1, 20, 22, 53, 79, 80, 100, 101, 123, 179, 443, 1000, 3784, 65535}
)

// ext is an extension header: its next header is filled in when the
// packet is built.
type ext struct {
	proto layers.IPProtocol
	body  []byte // the header less its first byte (next header)
}

var (
	hopByHop  = ext{layers.IPProtocolIPv6HopByHop, []byte{0, 1, 4, 0, 0, 0, 0}}
	dstOpts   = ext{layers.IPProtocolIPv6Destination, []byte{0, 1, 4, 0, 0, 0, 0}}
	routing   = ext{layers.IPProtocolIPv6Routing, []byte{2, 0, 0, 0, 0, 0, 0, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9}}
	fragFirst = ext{layers.IPProtocolIPv6Fragment, []byte{0, 0, 1, 0, 0, 0, 42}}       // offset 0, more
	fragLater = ext{layers.IPProtocolIPv6Fragment, []byte{0, 0x05, 0x28, 0, 0, 0, 42}} // offset 165*8
	ah        = ext{layers.IPProtocolAH, []byte{4, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}
)

// build serializes an IPv6 packet of the transport l4 (nil for none,
// with next header nh) behind the extension headers.
func build(t testing.TB, src, dst string, exts []ext, nh layers.IPProtocol, l4 []gopacket.SerializableLayer) []byte {
	t.Helper()
	ip := &layers.IPv6{Version: 6, TrafficClass: 0, FlowLabel: 7, HopLimit: 64,
		SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	first := nh
	var hdrs []byte
	for i, e := range exts {
		if i == 0 {
			first = e.proto
		}
		next := nh
		if i+1 < len(exts) {
			next = exts[i+1].proto
		}
		hdrs = append(hdrs, byte(next))
		hdrs = append(hdrs, e.body...)
	}
	ip.NextHeader = first
	ls := []gopacket.SerializableLayer{ip}
	if len(hdrs) > 0 {
		ls = append(ls, gopacket.Payload(hdrs))
	}
	for _, l := range l4 {
		if c, ok := l.(interface {
			SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
		}); ok {
			if err := c.SetNetworkLayerForChecksum(ip); err != nil {
				t.Fatal(err)
			}
		}
	}
	ls = append(ls, l4...)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func tcpSeg(sport, dport uint16, flags string, payload int) []gopacket.SerializableLayer {
	tcp := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), Seq: 1, Window: 1000}
	for _, f := range flags {
		switch f {
		case 'S':
			tcp.SYN = true
		case 'A':
			tcp.ACK = true
		case 'F':
			tcp.FIN = true
		case 'R':
			tcp.RST = true
		case 'P':
			tcp.PSH = true
		case 'U':
			tcp.URG = true
		}
	}
	return []gopacket.SerializableLayer{tcp, gopacket.Payload(make([]byte, payload))}
}

func udpDgram(sport, dport uint16, payload int) []gopacket.SerializableLayer {
	return []gopacket.SerializableLayer{&layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)},
		gopacket.Payload(make([]byte, payload))}
}

func sctpPkt(sport, dport uint16) []gopacket.SerializableLayer {
	return []gopacket.SerializableLayer{&layers.SCTP{SrcPort: layers.SCTPPort(sport), DstPort: layers.SCTPPort(dport), VerificationTag: 5},
		gopacket.Payload(make([]byte, 16))}
}

func icmp6Msg(typ, code uint8, payload int) []gopacket.SerializableLayer {
	return []gopacket.SerializableLayer{&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, code)},
		gopacket.Payload(make([]byte, 4+payload))}
}

// corpus is the packets, named for the failure messages.
func corpus(t testing.TB) (names []string, pkts [][]byte) {
	add := func(name string, p []byte) {
		names = append(names, name)
		pkts = append(pkts, p)
	}
	a := corpusAddrs
	// TCP across addresses, ports and flags.
	flags := []string{"S", "SA", "A", "FA", "R", "RA", "PA", "U", ""}
	for i, sp := range corpusPorts {
		dp := corpusPorts[(i*7+3)%len(corpusPorts)]
		add("tcp ports", build(t, a[i%len(a)], a[(i+5)%len(a)], nil, layers.IPProtocolTCP, tcpSeg(sp, dp, flags[i%len(flags)], i*37)))
		add("tcp to port", build(t, a[(i+1)%len(a)], a[(i+3)%len(a)], nil, layers.IPProtocolTCP, tcpSeg(40000, sp, flags[(i+4)%len(flags)], 0)))
		add("udp ports", build(t, a[(i+2)%len(a)], a[(i+7)%len(a)], nil, layers.IPProtocolUDP, udpDgram(sp, dp, i*11)))
		add("udp to port", build(t, a[(i+4)%len(a)], a[i%len(a)], nil, layers.IPProtocolUDP, udpDgram(50000, sp, 8)))
		add("sctp", build(t, a[(i+6)%len(a)], a[(i+2)%len(a)], nil, layers.IPProtocolSCTP, sctpPkt(sp, dp)))
	}
	for _, f := range flags {
		add("tcp flags "+f, build(t, "2001:db8::1", "2001:db8::2", nil, layers.IPProtocolTCP, tcpSeg(179, 50000, f, 0)))
	}
	// Every address as source and as destination.
	for i, s := range a {
		for j, d := range a {
			if (i+j)%3 == 0 {
				add("addrs", build(t, s, d, nil, layers.IPProtocolUDP, udpDgram(53, 53, 0)))
			}
		}
	}
	// ICMPv6 of many types.
	types := [][2]uint8{{128, 0}, {129, 0}, {135, 0}, {136, 0}, {133, 0}, {134, 0}, {137, 0},
		{1, 0}, {1, 3}, {1, 4}, {2, 0}, {3, 0}, {3, 1}, {4, 0}, {130, 0}, {143, 0}, {200, 7}}
	for i, tc := range types {
		add("icmp6", build(t, a[i%len(a)], a[(i+1)%len(a)], nil, layers.IPProtocolICMPv6, icmp6Msg(tc[0], tc[1], i*13)))
	}
	// Extension headers before each transport.
	chains := [][]ext{{hopByHop}, {dstOpts}, {routing}, {fragFirst}, {fragLater}, {ah},
		{hopByHop, fragFirst}, {hopByHop, dstOpts}, {fragFirst, dstOpts}, {routing, fragLater}, {hopByHop, ah}}
	for i, c := range chains {
		add("ext tcp", build(t, a[i%len(a)], a[(i+1)%len(a)], c, layers.IPProtocolTCP, tcpSeg(179, 22, "S", 0)))
		add("ext udp", build(t, a[(i+1)%len(a)], a[i%len(a)], c, layers.IPProtocolUDP, udpDgram(53, 123, 10)))
		add("ext icmp6", build(t, a[(i+2)%len(a)], a[i%len(a)], c, layers.IPProtocolICMPv6, icmp6Msg(128, 0, 8)))
		add("ext sctp", build(t, a[i%len(a)], a[(i+3)%len(a)], c, layers.IPProtocolSCTP, sctpPkt(179, 443)))
		add("ext none", build(t, a[i%len(a)], a[(i+3)%len(a)], c, layers.IPProtocolNoNextHeader, nil))
	}
	add("esp", build(t, "2001:db8::1", "2001:db8::2", nil, layers.IPProtocolESP, []gopacket.SerializableLayer{gopacket.Payload(make([]byte, 24))}))
	add("no next", build(t, "2001:db8::1", "2001:db8::2", nil, layers.IPProtocolNoNextHeader, nil))
	add("proto 255", build(t, "2001:db8::1", "2001:db8::2", nil, 255, []gopacket.SerializableLayer{gopacket.Payload(make([]byte, 8))}))
	// AH whose length word points back at itself: libpcap's protochain
	// loops for ever on it.
	loop := build(t, "2001:db8::1", "2001:db8::2", []ext{{layers.IPProtocolAH, []byte{8, 0, 0, 0, 0, 0, 0}}}, layers.IPProtocolAH, nil)
	add("ah loop", loop)
	// Lengths around the less/greater bounds.
	for _, n := range []int{0, 1, 19, 20, 21, 59, 60, 61, 99, 100, 101, 1000, 1400} {
		add("length", build(t, "2001:db8::1", "2001:db8::2", nil, layers.IPProtocolUDP, udpDgram(1000, 2000, n)))
	}
	// Truncations where the programs' loads end.
	whole := [][]byte{pkts[0], pkts[2], pkts[4], build(t, "2001:db8::1", "ff02::1", nil, layers.IPProtocolICMPv6, icmp6Msg(135, 0, 20)),
		build(t, "2001:db8::2", "2001:db8::1", []ext{fragFirst}, layers.IPProtocolTCP, tcpSeg(179, 179, "S", 0)),
		build(t, "2001:db8::2", "2001:db8::1", []ext{hopByHop, dstOpts}, layers.IPProtocolTCP, tcpSeg(179, 179, "S", 0))}
	for i, w := range whole {
		for _, n := range []int{0, 1, 5, 6, 7, 10, 12, 20, 24, 27, 28, 36, 39, 40, 41, 42, 43, 44, 48, 53, 54, 56, 60} {
			if n < len(w) && (n%3 == i%3 || n >= 39) {
				add("truncated", w[:n])
			}
		}
	}
	for _, p := range ipv4Corpus(t) {
		add("ipv4", p)
	}
	add("ipv4 icmp", ipv4ICMP(t))
	for _, g := range garbage() {
		add("garbage", g)
	}
	add("zeros", make([]byte, 80))
	return names, pkts
}

// ipv4Corpus are IPv4 TCP and UDP packets, which libpcap's DLT_RAW
// programs test and ours reject.
func ipv4Corpus(t testing.TB) (pkts [][]byte) {
	for i, p := range []uint16{179, 53, 80} {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP,
			SrcIP: net.IPv4(10, 0, 0, byte(i+1)), DstIP: net.IPv4(10, 0, 0, 9)}
		tcp := &layers.TCP{SrcPort: layers.TCPPort(p), DstPort: 179, SYN: true}
		udp := &layers.UDP{SrcPort: layers.UDPPort(p), DstPort: 53}
		for _, l4 := range []gopacket.SerializableLayer{tcp, udp} {
			if _, ok := l4.(*layers.UDP); ok {
				ip.Protocol = layers.IPProtocolUDP
			}
			if err := l4.(interface {
				SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
			}).SetNetworkLayerForChecksum(ip); err != nil {
				t.Fatal(err)
			}
			buf := gopacket.NewSerializeBuffer()
			if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ip, l4); err != nil {
				t.Fatal(err)
			}
			pkts = append(pkts, append([]byte(nil), buf.Bytes()...))
		}
	}
	return pkts
}

// ipv4ICMP is an IPv4 echo request.
func ipv4ICMP(t testing.TB) []byte {
	icmp4 := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(icmp4, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		&layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: net.IPv4(10, 0, 0, 1), DstIP: net.IPv4(10, 0, 0, 2)},
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0)}); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), icmp4.Bytes()...)
}

// garbage are random bytes, some with an IPv6 version nibble.
func garbage() (gs [][]byte) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		g := make([]byte, r.IntN(90))
		for j := range g {
			g[j] = byte(r.Uint32())
		}
		if i%2 == 0 && len(g) > 0 {
			g[0] = 0x60 | g[0]&0x0f
			if len(g) > 6 {
				g[6] = []byte{6, 17, 58, 132, 44, 0, 60}[i%7]
			}
		}
		gs = append(gs, g)
	}
	return gs
}
