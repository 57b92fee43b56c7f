package filter

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// differential are the expressions compiled by us and by libpcap. Where
// the second is given, it is what libpcap must be told for the same
// meaning (its tcp[] and udp[] are IPv4 only: ours read from byte 40).
var differential = []struct{ expr, libpcap string }{
	// protocols
	{"ip6", ""}, {"tcp", ""}, {"udp", ""}, {"sctp", ""}, {"icmp6", ""}, {"ah", ""}, {"esp", ""},
	{"ip6 proto 6", ""}, {"proto 17", ""}, {"ip6 proto 58", ""}, {`ip6 proto \tcp`, ""},
	{`ip6 proto \udp`, ""}, {`proto \ipv6-icmp`, ""}, {`ip6 proto \icmp6`, "ip6 proto 58"},
	{"ip6 proto 44", ""}, {"ip6 proto 0", ""}, {"ip6 proto 59", ""}, {"ip6 proto 300", ""},
	{"ip6 protochain 6", ""}, {"ip6 protochain 17", ""}, {"protochain 58", ""},
	{`ip6 protochain \ah`, ""}, {"ip6 protochain 59", ""},
	// hosts and nets
	{"host 2001:db8::1", ""}, {"src host 2001:db8::1", ""}, {"dst host 2001:db8::2", ""},
	{"src or dst host 2001:db8::1", ""}, {"src and dst host 2001:db8::1", ""},
	{"ip6 host ::1", ""}, {"ip6 src 2001:db8::1", ""}, {"dst ff02::1", ""}, {"host ::", ""},
	{"host ::ffff:10.0.0.1", ""}, {"2001:db8::1", "host 2001:db8::1"},
	{"tcp or 2001:db8::2", "tcp or host 2001:db8::2"},
	{"host 2001:db8::1 or 2001:db8::2", ""},
	{"src host 2001:db8::1 or 2001:db9::1 and not 2001:db8::2", ""},
	{"host 2001:db8::1 or (2001:db8::2 or ::1)", ""},
	{"net 2001:db8::/32", ""}, {"src net 2001:db8::/33", ""}, {"dst net 2001:db8:8000::/33", ""},
	{"net ::/0", ""}, {"ip6 net fe80::/10", ""}, {"net ff00::/8", ""}, {"net 2001:db8::1/128", ""},
	{"net 2001:db8::/32 and not net 2001:db8::/48", ""}, {"dst net 2001:db8::/32 or 2001:dba::/32", ""},
	{"ip6 multicast", ""},
	// ports
	{"port 53", ""}, {"tcp port 179", ""}, {"udp dst port 53", ""}, {"src port 22", ""},
	{"tcp src or dst port 443", ""}, {"tcp src and dst port 179", ""}, {"sctp port 179", ""},
	{"tcp port 22 or 80", ""}, {"tcp port 22 or 80 and not 443", ""}, {"port bgp", ""},
	{"tcp port ssh or http", ""}, {"udp port domain", ""}, {"port ntp", ""}, {"port domain", ""},
	{"portrange 1-100", ""}, {"tcp portrange 20-80", ""}, {"udp src portrange 50-60", ""},
	{"portrange 100-50", ""}, {"dst portrange 443", ""}, {"portrange ssh-ntp", ""},
	{"portrange 1-100 or 200-300", ""}, {"port 0x35", ""}, {"port 0263", ""},
	// lengths
	{"less 60", ""}, {"greater 100", ""}, {"len >= 61", ""}, {"len != 1048", ""},
	{"len - 40 > ip6[4:2]", ""}, {"greater 100 and less 1000", ""}, {"length < 41", ""},
	// loads and arithmetic
	{"ip6[6] = 17", ""}, {"ip6[0:2] & 0x0ff0 != 0", ""}, {"ip6[4:2] > 100", ""}, {"ip6[40] = 128", ""},
	{"ip6[24] = 0xff", ""}, {"ip6[7] < 64", ""}, {"ip6[1:4] & 0xfffff = 7", ""}, {"ip6[40:4] = 0", ""},
	{"ip6[ip6[6]:2] = 0x3500", ""}, {"ip6[40 + ip6[6] % 4] != 0", ""}, {"ip6[4294967295] = 1", ""},
	{"ip6[6] + 1 = 18", ""}, {"ip6[6] * 2 - 1 = 33", ""}, {"ip6[6] / 2 = 8", ""}, {"ip6[6] % 5 = 2", ""},
	{"ip6[6] ^ 0x11 = 0", ""}, {"ip6[6] | 1 = 17", ""}, {"ip6[6] & 0xfe = 16", ""}, {"ip6[6] << 2 = 68", ""},
	{"ip6[6] >> 1 = 8", ""}, {"ip6[7] = -(0 - 64)", ""}, {"ip6[6] * 3 / 2 % 5 = 1", ""},
	{"ip6[4:2] + ip6[6] * 2 > 100 | 3", ""}, {"ip6[6] - 17 ^ 1 = 1", ""},
	{"ip6[0] * 3 / 2 % 5 ^ 1 | 2 & 3 >> 1 << 1 = 1", ""}, {"ip6[5] / (ip6[6] - 17) = 1", ""},
	{"ip6[4:2] - 8 = ip6[44:2]", ""}, {"(ip6[6]) == 6", ""}, {"0x11 = ip6[6]", ""},
	{"icmp6[icmp6type] = icmp6-echo", ""},
	{"icmp6[icmp6type] == icmp6-echoreply or icmp6[0] = icmp6-neighborsolicit", ""},
	{"icmp6[0] >= 128 and icmp6[icmp6code] = 0", ""},
	{"icmp6[icmp6type] = icmp6-destinationunreach and icmp6[icmp6code] = 4", ""},
	{"icmp6[0] = icmp6-packettoobig or icmp6[0] = icmp6-timeexceeded", ""},
	{"icmp6[0] = icmp6-routersolicit or icmp6[0] = icmp6-routeradvert or icmp6[0] = icmp6-redirect or icmp6[0] = icmp6-neighboradvert", ""},
	{"icmp6[4:2] = 0", ""}, {"icmp6[ip6[6] - 58] = 128", ""},
	{"tcp[tcpflags] & tcp-syn != 0", "ip6[6] = 6 and ip6[53] & 2 != 0"},
	{"tcp[13] & (tcp-syn|tcp-ack) = tcp-syn", "ip6[6] = 6 and ip6[53] & (2|16) = 2"},
	{"tcp[tcpflags] & (tcp-rst|tcp-fin|tcp-push|tcp-urg) != 0", "ip6[6] = 6 and ip6[53] & (4|1|8|32) != 0"},
	{"udp[0:2] = 53 or udp[2:2] = 53", "(ip6[6] = 17 and ip6[40:2] = 53) or (ip6[6] = 17 and ip6[42:2] = 53)"},
	{"sctp[2:2] = 443", "ip6[6] = 132 and ip6[42:2] = 443"},
	{"tcp port 179 and tcp[tcpflags] & tcp-ack != 0", "tcp port 179 and ip6[6] = 6 and ip6[53] & 16 != 0"},
	{"udp[4:2] > ip6[4:2]", "ip6[6] = 17 and ip6[44:2] > ip6[4:2]"},
	// booleans
	{"tcp and not port 22", ""}, {"not (tcp or udp)", ""}, {"! icmp6", ""}, {"not not udp", ""},
	{"tcp && port 179 || udp && port 53", ""}, {"icmp6 and host 2001:db8::1", ""},
	{"(tcp or udp) and (src net 2001:db8::/32) and not dst host ff02::1", ""},
	{"host 2001:db8::1 and (port 53 or 179)", ""}, {"ip6 and udp port 53", ""},
	{"udp port 53 or icmp6", ""}, {"src net 2001:db8::/32 or dst port 53", ""},
	{"not tcp port 179 and not icmp6[0] = 135", ""}, {"not port 53 or not host 2001:db8::1", ""},
	{"ip6 dst host 2001:db8::1 or dst host ff02::1", ""}, {"src host 2001:db8::1 and not src port 22", ""},
	// far jumps
	{longOr(70), ""},
}

// longOr is a program longer than a conditional jump reaches (255).
func longOr(n int) string {
	var terms []string
	for i := 1; i <= n; i++ {
		terms = append(terms, fmt.Sprintf("tcp port %d", i*13))
	}
	return strings.Join(terms, " or ")
}

// libpcapProgram is what tcpdump compiles expr to for LINKTYPE_RAW, read
// from an empty capture of that link type (no interface needed).
func libpcapProgram(t *testing.T, pcap, expr string) []unix.SockFilter {
	t.Helper()
	out, err := exec.Command("tcpdump", "-r", pcap, "-dd", expr).CombinedOutput()
	if err != nil {
		t.Fatalf("tcpdump -dd %q: %v: %s", expr, err, out)
	}
	var prog []unix.SockFilter
	line := regexp.MustCompile(`^\{ (0x[0-9a-f]+), (\d+), (\d+), (0x[0-9a-f]+) \},$`)
	for _, l := range strings.Split(string(out), "\n") {
		m := line.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		code, _ := strconv.ParseUint(m[1], 0, 16)
		jt, _ := strconv.ParseUint(m[2], 10, 8)
		jf, _ := strconv.ParseUint(m[3], 10, 8)
		k, _ := strconv.ParseUint(m[4], 0, 32)
		prog = append(prog, unix.SockFilter{Code: uint16(code), Jt: uint8(jt), Jf: uint8(jf), K: uint32(k)})
	}
	if len(prog) == 0 {
		t.Fatalf("tcpdump -dd %q printed no program: %s", expr, out)
	}
	return prog
}

// emptyRawPcap writes a pcap file header of LINKTYPE_RAW (101).
func emptyRawPcap(t *testing.T) string {
	t.Helper()
	hdr := make([]byte, 24)
	binary.LittleEndian.PutUint32(hdr[0:], 0xa1b2c3d4)
	binary.LittleEndian.PutUint16(hdr[4:], 2)
	binary.LittleEndian.PutUint16(hdr[6:], 4)
	binary.LittleEndian.PutUint32(hdr[16:], 262144)
	binary.LittleEndian.PutUint32(hdr[20:], 101)
	path := filepath.Join(t.TempDir(), "raw.pcap")
	if err := os.WriteFile(path, hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLibpcap runs libpcap's program and ours over the corpus: ours must
// give libpcap's verdict for "ip6 and (EXPR)" on every packet, and for
// EXPR itself on every IPv6 packet.
func TestLibpcap(t *testing.T) {
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Fatal("tcpdump is not installed: this test compares our programs with libpcap's " +
			"(tcpdump -dd); install it (apt-get install tcpdump)")
	}
	pcap := emptyRawPcap(t)
	names, pkts := corpus(t)
	if len(pkts) < 200 || len(differential) < 40 {
		t.Fatalf("corpus of %d packets, %d expressions: too few", len(pkts), len(differential))
	}
	pairs := 0
	for _, c := range differential {
		ours, err := Compile(c.expr)
		if err != nil {
			t.Errorf("Compile(%q): %v", c.expr, err)
			continue
		}
		lib := c.libpcap
		if lib == "" {
			lib = c.expr
		}
		gated := libpcapProgram(t, pcap, "ip6 and ("+lib+")")
		plain := libpcapProgram(t, pcap, lib)
		bad := 0
		for i, p := range pkts {
			got := ours.Match(p)
			want := Run(gated, p) != 0
			if p6 := len(p) > 0 && p[0]>>4 == 6; p6 && Run(plain, p) != 0 != want {
				t.Errorf("%q: libpcap's own program and its ip6-gated one disagree on %s %x", lib, names[i], p)
			}
			pairs++
			if got != want {
				if bad++; bad <= 3 {
					t.Errorf("%q on %s (%d bytes) %x: ours %v, libpcap %v", c.expr, names[i], len(p), p, got, want)
				}
			}
		}
	}
	t.Logf("%d expressions x %d packets: %d verdicts compared", len(differential), len(pkts), pairs)
}

func TestErrors(t *testing.T) {
	for _, c := range []struct{ expr, err string }{
		{"foo", "syntax error in filter expression at 'foo'"},
		{"tcp and", "syntax error in filter expression at end of expression"},
		{"(", "syntax error in filter expression at end of expression"},
		{"(tcp or udp", "syntax error in filter expression at end of expression"},
		{"tcp port", "syntax error in filter expression at end of expression"},
		{"host foo", "unknown host 'foo'"},
		{"port foo", "unknown port 'foo'"},
		{"net foo", "unknown network 'foo'"},
		{"ip6 proto \\foo", "unknown ip proto 'foo'"},
		{"portrange 1-x", "unknown port in range '1-x'"},
		{"ether host 1:2:3:4:5:6", "'ether' is not available on a link of raw IPv6 packets"},
		{"vlan", "'vlan' is not available on a link of raw IPv6 packets"},
		{"inbound", "'inbound' is not available on a link of raw IPv6 packets"},
		{"host 1:2:3:4:5:6", "'1:2:3:4:5:6' is an Ethernet address: 'ether' is not available on a link of raw IPv6 packets"},
		{"ip", "'ip' (IPv4) never matches here: the router carries IPv6 only"},
		{"arp", "'arp' (IPv4) never matches here: the router carries IPv6 only"},
		{"icmp", "'icmp' (IPv4) never matches here: the router carries IPv6 only"},
		{"ip host 10.0.0.1", "'ip' (IPv4) never matches here: the router carries IPv6 only"},
		{"icmp[0] = 8", "'icmp' (IPv4) never matches here: the router carries IPv6 only"},
		{"tcp and ip[9] = 6", "'ip' (IPv4) never matches here: the router carries IPv6 only"},
		{"host 10.0.0.1", "'10.0.0.1' is an IPv4 address, which never matches here: the router carries IPv6 only"},
		{"net 10.0.0.0/8", "'10.0.0.0' is an IPv4 address, which never matches here: the router carries IPv6 only"},
		{"net 10.0.0.0 mask 255.0.0.0", "'10.0.0.0' is an IPv4 address, which never matches here: the router carries IPv6 only"},
		{"net 2001:db8:: mask ffff::", "'mask' is IPv4's: give an IPv6 prefix as ADDRESS/LENGTH"},
		{"host 2001:db8::1 and 80", "'80' is an IPv4 address, which never matches here: the router carries IPv6 only"},
		{"net 2001:db8::/129", "mask length must be <= 128"},
		{"net 2001:db8::1/32", `non-network bits set in "2001:db8::1/32"`},
		{"host 2001:db8::/32", "Mask syntax for networks only"},
		{"udp host 2001:db8::1", "'udp' modifier applied to ip6 host"},
		{"tcp net 2001:db8::/32", "'tcp' modifier applied to ip6 net"},
		{"port 53 and 2001:db8::1", "invalid qualifier against IPv6 address"},
		{"ip6 proto 2001:db8::1", "invalid qualifier against IPv6 address"},
		{"ip6 port 53", "illegal qualifier of 'port'"},
		{"icmp6 port 53", "illegal qualifier of 'port'"},
		{"port 70000", "illegal port number 70000 > 65535"},
		{"udp port http", "port 'http' is tcp"},
		{"tcp port ntp", "port 'ntp' is udp"},
		{"tcp proto 6", "'tcp proto' is bogus"},
		{"src proto 6", "syntax error in filter expression at 'proto'"},
		{"tcp or 6", "syntax error in filter expression: '6' has no qualifier to take"},
		{"less 100 or 50", "syntax error in filter expression: '50' has no qualifier to take"},
		{"gateway foo", "'gateway' not supported in this configuration"},
		{"broadcast", "'broadcast' never matches here: IPv6 has no broadcast"},
		{"multicast", "link-layer multicast is not available on a link of raw IPv6 packets: say 'ip6 multicast'"},
		{"ip6[0:3] = 1", "data size must be 1, 2, or 4"},
		{"ah[0] = 1", "'ah[]' is not supported: use ip6[] with an offset"},
		{"ip6[0] / 0 = 1", "division by zero"},
		{"ip6[0] % 0 = 1", "modulus by zero"},
		{"ip6[0] << 32 = 1", "shift by more than 31 bits"},
		{"ip6[0] = 4294967296", "number 4294967296 overflows 32 bits"},
		{"ip6[0] = 09", "number 09 contains non-octal digit"},
		{"ip6[0] = 1 $", `syntax error in filter expression: unexpected "$"`},
		{"len-40 > 5", "syntax error in filter expression at 'len-40'"},
		{"TCP", "syntax error in filter expression at 'TCP'"},
		{"ip6 proto icmp6", "syntax error in filter expression at 'icmp6'"},
		{strings.Repeat("ip6[0] % ", 17) + "ip6[0] = 1", "too many registers needed to evaluate expression"},
		{strings.Repeat("(", 65) + "tcp" + strings.Repeat(")", 65), "expression nested too deeply: more than 64 parentheses open"},
		{strings.Repeat("host 2001:db8::1 or ", 300) + "host ::1", "filter program too long: "},
	} {
		p, err := Compile(c.expr)
		if err == nil || !strings.HasPrefix(err.Error(), c.err) || p != nil {
			t.Errorf("Compile(%.60q) = %v, %v; want error %q", c.expr, p, err, c.err)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Compile(%.60q): error of more than a line: %q", c.expr, err)
		}
	}
}

func TestEmptyAcceptsAll(t *testing.T) {
	for _, e := range []string{"", "   ", "\t\n"} {
		p, err := Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkt := range [][]byte{nil, {0x45}, make([]byte, 60)} {
			if !p.Match(pkt) {
				t.Errorf("Compile(%q) rejects %x", e, pkt)
			}
		}
		if p.String() != e || len(p.Instructions()) != 1 {
			t.Errorf("Compile(%q): String %q, %d instructions", e, p.String(), len(p.Instructions()))
		}
	}
}

func TestInstructionsAreACopy(t *testing.T) {
	p, err := Compile("tcp port 179")
	if err != nil {
		t.Fatal(err)
	}
	ins := p.Instructions()
	for i := range ins {
		ins[i] = unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K}
	}
	if !p.Match(tcpTo(t, 179)) {
		t.Error("the program changed with its copy")
	}
	if p.Instructions()[0] == ins[0] {
		t.Error("Instructions returned the program's own slice")
	}
	if p.String() != "tcp port 179" {
		t.Errorf("String() = %q", p.String())
	}
}

// combos is how many; of 1,000 random ones two disagree, each on a
// truncated packet only (see truncated below).
var combos = 200

// TestLibpcapCombined compares random compositions of primitives, where
// the jumps between them are what could go wrong.
func TestLibpcapCombined(t *testing.T) {
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Fatal("tcpdump is not installed: this test compares our programs with libpcap's " +
			"(tcpdump -dd); install it (apt-get install tcpdump)")
	}
	prims := []string{"tcp", "udp", "icmp6", "host 2001:db8::1", "src net 2001:db8::/32", "dst host ff02::1",
		"port 53", "tcp dst port 179", "portrange 20-80", "less 100", "greater 60", "ip6[6] = 6",
		"icmp6[0] = 135", "ip6 proto 44", "sctp", "udp src port 123", "ip6 multicast", "len > ip6[4:2]"}
	r := rand.New(rand.NewPCG(5, 6))
	var expr func(depth int) string
	expr = func(depth int) string {
		if depth == 0 || r.IntN(3) == 0 {
			return prims[r.IntN(len(prims))]
		}
		switch r.IntN(4) {
		case 0:
			return "not " + expr(depth-1)
		case 1:
			return "(" + expr(depth-1) + ") and (" + expr(depth-1) + ")"
		case 2:
			return "(" + expr(depth-1) + ") or (" + expr(depth-1) + ")"
		}
		return expr(depth-1) + " or " + expr(depth-1) + " and " + expr(depth-1)
	}
	pcap := emptyRawPcap(t)
	names, pkts := corpus(t)
	for range combos {
		e := expr(4)
		ours, err := Compile(e)
		if err != nil {
			t.Errorf("Compile(%q): %v", e, err)
			continue
		}
		out, err := exec.Command("tcpdump", "-r", pcap, "-dd", "ip6 and ("+e+")").CombinedOutput()
		if err != nil && strings.Contains(string(out), "expression rejects all packets") {
			for i, p := range pkts {
				if ours.Match(p) {
					t.Errorf("%q, which libpcap finds rejects all packets, matches %s %x", e, names[i], p)
				}
			}
			continue
		}
		lib := libpcapProgram(t, pcap, "ip6 and ("+e+")")
		for i, p := range pkts {
			got, want := ours.Match(p), Run(lib, p) != 0
			switch {
			case got == want:
			case truncated(p) && !got:
				// libpcap's optimizer reorders tests in ways ours does
				// not, and decides without a load that is past the end.
				t.Logf("%q on %s %x: ours rejects at a load past the end, libpcap accepts", e, names[i], p)
			default:
				t.Errorf("%q on %s %x: ours %v, libpcap %v", e, names[i], p, got, want)
			}
		}
	}
}

// truncated: an IPv6 packet shorter than its header says.
func truncated(p []byte) bool {
	return len(p) > 0 && p[0]>>4 == 6 && (len(p) < 40 || len(p) < 40+int(binary.BigEndian.Uint16(p[4:])))
}

// TestKernelAccepts attaches each program to a socket: the kernel's
// checker (jump ranges, opcodes, memory words) must take it. protochain's
// backward jump is the one the kernel refuses, as it refuses libpcap's.
func TestKernelAccepts(t *testing.T) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Close(fd) }()
	for _, c := range differential {
		p, err := Compile(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		ins := p.Instructions()
		err = unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: uint16(len(ins)), Filter: &ins[0]})
		if chain := strings.Contains(c.expr, "protochain"); (err != nil) != chain {
			t.Errorf("%q: attaching it: %v", c.expr, err)
		}
	}
}
