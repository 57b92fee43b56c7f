package filter

import (
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"
)

// expressions covers every construct the compiler has, each the way
// libpcap compiles it for raw IPv6 (DLT_RAW): the oracle.
var expressions = []string{
	"ip6", "tcp", "udp", "icmp6", "sctp", "ip6 proto 17", "proto 58", "ip6 proto \\tcp", "proto \\udp",
	"host 2001:db8::1", "src host 2001:db8::1", "dst host 2001:db8::2", "src or dst host 2001:db8::2",
	"src and dst host 2001:db8::1", "ip6 host 2001:db8::1", "host 2001:db8::1 or 2001:db8::2",
	"net 2001:db8::/32", "src net 2001:db8:1::/48", "dst net 2001:db8:0:2::/63", "net ::/0", "net 2001:db8::1/128",
	"net 2001:db8:8000::/33", "port 179", "tcp port 179", "udp port 53", "sctp port 9", "src port 22", "dst port 5000",
	"tcp src port 22 or 80", "udp dst port domain", "tcp port bgp", "portrange 1-100", "tcp portrange 4000-5000",
	"src portrange 1000-2000", "less 100", "greater 200", "len > 100", "len <= 80", "len == 61",
	"ip6[6] == 17", "ip6[7] < 64", "ip6[4:2] > 100", "ip6[0:4] & 0xfffff == 0", "ip6[40] == 128",
	"icmp6[0] == 128", "icmp6[icmp6type] == icmp6-echo", "icmp6[icmp6type] != icmp6-neighborsolicit",
	"icmp6[1] = 0", "icmp6 and host 2001:db8::1", "tcp port 179 and not src host 2001:db8::1",
	"not icmp6", "! udp", "icmp6 && ip6[40] == 129 || tcp", "(udp or tcp) and dst net 2001:db8:2::/48",
	"not (port 53 or port 179)", "ip6[6] + 1 == 18", "ip6[7] * 2 > 100", "ip6[7] / 2 == 32", "ip6[7] % 10 == 4",
	"ip6[7] - 1 == 63", "ip6[7] << 1 == 128", "ip6[7] >> 1 == 32", "ip6[7] | 1 == 65", "ip6[7] ^ 64 == 0",
	"ip6[6] == ip6[40]", "ip6[7] > ip6[6]", "len - 40 > ip6[4:2]", "ip6[ip6[6] - 16] == 0",
	"host 2001:db8::1 and (tcp or icmp6) and greater 60", "dst port 5000 and len > 60 or icmp6[0] == 129",
}

// corpus is IPv6 packets of every kind the expressions tell apart.
func corpus(t *testing.T) [][]byte {
	addrs := []string{"2001:db8::1", "2001:db8::2", "2001:db8:1::5", "2001:db8:2::9", "2001:db8:0:3::1", "2001:db8:8000::1",
		"fe80::1", "2001:db9::1"}
	var out [][]byte
	build := func(ls ...gopacket.SerializableLayer) {
		buf := gopacket.NewSerializeBuffer()
		for _, l := range ls {
			if n, ok := l.(interface {
				SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
			}); ok {
				_ = n.SetNetworkLayerForChecksum(ls[0].(*layers.IPv6))
			}
		}
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		out = append(out, b)
		for _, cut := range []int{1, 7, 39, 40, 41, 43, 45, 54} { // truncated
			if cut < len(b) {
				out = append(out, b[:cut])
			}
		}
	}
	for i, src := range addrs {
		for j, dst := range addrs {
			if (i+j)%3 != 0 && i != 0 && j != 1 {
				continue
			}
			ip := func(next layers.IPProtocol, hl uint8) *layers.IPv6 {
				return &layers.IPv6{Version: 6, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst), NextHeader: next, HopLimit: hl}
			}
			for _, port := range []uint16{22, 53, 80, 179, 1500, 4500, 5000} {
				build(ip(layers.IPProtocolTCP, 64), &layers.TCP{SrcPort: layers.TCPPort(port), DstPort: 179, SYN: port%2 == 0, ACK: true}, gopacket.Payload(make([]byte, int(port)%90)))
				build(ip(layers.IPProtocolUDP, uint8(port)), &layers.UDP{SrcPort: 5000, DstPort: layers.UDPPort(port)}, gopacket.Payload(make([]byte, int(port)%300)))
				build(ip(layers.IPProtocolSCTP, 64), &layers.SCTP{SrcPort: 9, DstPort: layers.SCTPPort(port)})
			}
			for _, ty := range []uint8{1, 3, 128, 129, 135, 136} {
				build(ip(layers.IPProtocolICMPv6, 255), &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(ty, ty%2)}, gopacket.Payload(make([]byte, 8+int(ty)%40)))
			}
			// fragments: first (the transport follows) and later
			for _, off := range []uint16{0, 100} {
				for _, next := range []layers.IPProtocol{layers.IPProtocolUDP, layers.IPProtocolICMPv6, layers.IPProtocolTCP} {
					frag := &layers.IPv6Fragment{NextHeader: next, FragmentOffset: off, MoreFragments: true, Identification: 7}
					build(ip(layers.IPProtocolIPv6Fragment, 64), frag, gopacket.Payload([]byte{0x13, 0x88, 0x00, 0x35, 0, 16, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}))
				}
			}
			hbh := &layers.IPv6HopByHop{}
			hbh.NextHeader = layers.IPProtocolUDP
			hbh.Options = []*layers.IPv6HopByHopOption{{OptionType: 1, OptionLength: 4, OptionData: make([]byte, 4)}}
			build(ip(layers.IPProtocolIPv6HopByHop, 64), hbh, &layers.UDP{SrcPort: 53, DstPort: 53}, gopacket.Payload("x"))
		}
	}
	out = append(out, nil, []byte{0x45, 0, 0, 20}, make([]byte, 100)) // not IPv6
	return out
}

var insnLine = regexp.MustCompile(`\{ (0x[0-9a-f]+), (\d+), (\d+), (0x[0-9a-f]+) \}`)

// libpcap compiles expr with tcpdump -dd for raw IP.
func libpcap(t *testing.T, expr string) []unix.SockFilter {
	out, err := exec.Command("tcpdump", "-y", "RAW", "-dd", expr).CombinedOutput()
	if err != nil {
		t.Fatalf("tcpdump -y RAW -dd %q: %v: %s", expr, err, out)
	}
	var prog []unix.SockFilter
	for _, m := range insnLine.FindAllStringSubmatch(string(out), -1) {
		code, _ := strconv.ParseUint(m[1], 0, 16)
		jt, _ := strconv.Atoi(m[2])
		jf, _ := strconv.Atoi(m[3])
		k, _ := strconv.ParseUint(m[4], 0, 32)
		prog = append(prog, unix.SockFilter{Code: uint16(code), Jt: uint8(jt), Jf: uint8(jf), K: uint32(k)})
	}
	if len(prog) == 0 {
		t.Fatalf("tcpdump -dd %q printed no program: %s", expr, out)
	}
	return prog
}

// TestAgainstLibpcap: for every expression and packet, the compiled
// program decides as libpcap's own program does.
func TestAgainstLibpcap(t *testing.T) {
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Fatal("tcpdump is needed (Debian's tcpdump; .ci/run installs it): libpcap's programs are the oracle")
	}
	pkts := corpus(t)
	for _, expr := range expressions {
		ours, err := Compile(expr)
		if err != nil {
			t.Errorf("%q: %v", expr, err)
			continue
		}
		theirs := libpcap(t, expr)
		matched, differ := 0, 0
		for _, p := range pkts {
			if len(p) > 0 && p[0]>>4 != 6 {
				// not IPv6: libpcap's tcp, udp and port take IPv4 too
				if ours.Match(p) && !strings.HasPrefix(expr, "not") && !strings.HasPrefix(expr, "!") && !strings.Contains(expr, "len") && !strings.Contains(expr, "less") && !strings.Contains(expr, "greater") {
					t.Errorf("%q takes a packet that is not IPv6: % x", expr, p)
				}
				continue
			}
			want := Run(theirs, p) != 0
			if ours.Match(p) != want {
				if differ++; differ <= 3 {
					t.Errorf("%q on % x: ours %v, libpcap %v\nours:\n%s", expr, p[:min(len(p), 48)], !want, want, ours.Dump())
				}
			}
			if want {
				matched++
			}
		}
		if matched == 0 && !strings.Contains(expr, "2001:db8::1/128") {
			t.Logf("%q matched no packet of the corpus", expr)
		}
	}
	t.Logf("%d expressions on %d packets", len(expressions), len(pkts))
}

func TestErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"ip":                     "'ip' never matches here",
		"ip host 10.0.0.1":       "'ip' never matches here",
		"host 10.0.0.1":          "is IPv4",
		"arp":                    "'arp' never matches",
		"ether host 1:2:3:4:5:6": "'ether' is not available",
		"vlan 10":                "'vlan' is not available",
		"host foo":               "unknown host 'foo'",
		"port foo":               "unknown port 'foo'",
		"port 70000":             "illegal port number",
		"tcp host 2001:db8::1":   "'tcp' modifier applied to host",
		"host 2001:db8::/32":     "mask syntax for networks only",
		"net 2001:db8::1/32":     "non-network bits set",
		"icmp6 port 1":           "'icmp6' modifier applied to port",
		"ip6[0:3] == 1":          "data size must be 1, 2, or 4",
		"ip6[0] / 0 == 1":        "division by zero",
		"tcp and":                "syntax error",
		"(tcp":                   "syntax error",
		"tcp)":                   "syntax error",
		"port":                   "syntax error",
		"len >":                  "syntax error",
		"proto foo":              "unknown ip proto 'foo'",
		"host 2001:db8::1 @":     "syntax error",
	} {
		p, err := Compile(expr)
		if err == nil || !strings.Contains(err.Error(), want) || p != nil {
			t.Errorf("%q: %v, want an error with %q", expr, err, want)
		}
	}
}

func TestEmptyTakesAll(t *testing.T) {
	p, err := Compile("  ")
	if err != nil || !p.Match(nil) || !p.Match([]byte{0x60}) {
		t.Errorf("an empty filter: %v", err)
	}
}

func TestMatchAllocs(t *testing.T) {
	p, err := Compile("tcp port 179 and host 2001:db8::1 and ip6[7] * 2 > ip6[6]")
	if err != nil {
		t.Fatal(err)
	}
	pkt := corpus(t)[0]
	if n := testing.AllocsPerRun(100, func() { p.Match(pkt) }); n != 0 {
		t.Errorf("Match allocates %v times", n)
	}
}

func FuzzMatch(f *testing.F) {
	f.Add([]byte{0x60, 0, 0, 0, 0, 8, 17, 64})
	progs := []*Program{}
	for _, e := range expressions {
		p, err := Compile(e)
		if err != nil {
			f.Fatal(err)
		}
		progs = append(progs, p)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		for _, p := range progs {
			p.Match(pkt)
		}
	})
}

func FuzzCompile(f *testing.F) {
	for _, e := range expressions {
		f.Add(e)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		if p, err := Compile(expr); err == nil {
			p.Match([]byte{0x60, 0, 0, 0, 0, 8, 17, 64, 1, 2, 3})
		}
	})
}

func BenchmarkMatch(b *testing.B) {
	p, err := Compile("tcp port 179")
	if err != nil {
		b.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	ip := &layers.IPv6{Version: 6, SrcIP: net.ParseIP("2001:db8::1"), DstIP: net.ParseIP("2001:db8::2"), NextHeader: layers.IPProtocolUDP, HopLimit: 64}
	u := &layers.UDP{SrcPort: 4000, DstPort: 5000}
	_ = u.SetNetworkLayerForChecksum(ip)
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, ip, u, gopacket.Payload(make([]byte, 64))); err != nil {
		b.Fatal(err)
	}
	pkt := buf.Bytes()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if p.Match(pkt) {
			b.Fatal("matched")
		}
	}
}
