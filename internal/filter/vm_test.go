package filter

import (
	"testing"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"
)

func tcpTo(t testing.TB, port uint16) []byte {
	return build(t, "2001:db8::1", "2001:db8::2", nil, layers.IPProtocolTCP, tcpSeg(40000, port, "S", 0))
}

func udpTo(t testing.TB, port uint16) []byte {
	return build(t, "2001:db8::1", "2001:db8::2", nil, layers.IPProtocolUDP, udpDgram(40000, port, 32))
}

func ins(code uint16, jt, jf uint8, k uint32) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// TestRun checks the interpreter where programs stop early: what the
// kernel and libpcap's bpf_filter do, and the bounds of its own.
func TestRun(t *testing.T) {
	pkt := []byte{0x60, 1, 2, 3, 4, 5, 6, 7}
	retA := ins(unix.BPF_RET|unix.BPF_A, 0, 0, 0)
	for _, c := range []struct {
		name string
		prog []unix.SockFilter
		want uint32
	}{
		{"empty program", nil, 0},
		{"ret k", []unix.SockFilter{ins(unix.BPF_RET|unix.BPF_K, 0, 0, 77)}, 77},
		{"falls off the end", []unix.SockFilter{ins(unix.BPF_LD|unix.BPF_IMM, 0, 0, 5)}, 0},
		{"ld w", []unix.SockFilter{ins(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, 0, 0, 4), retA}, 0x04050607},
		{"ld w past the end", []unix.SockFilter{ins(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, 0, 0, 5), retA}, 0},
		{"ld h at the end", []unix.SockFilter{ins(unix.BPF_LD|unix.BPF_H|unix.BPF_ABS, 0, 0, 6), retA}, 0x0607},
		{"ld b huge", []unix.SockFilter{ins(unix.BPF_LD|unix.BPF_B|unix.BPF_ABS, 0, 0, 0xffffffff), retA}, 0},
		// X+K past 4 GiB is past the end, as libpcap's bpf_filter says
		{"ind does not wrap", []unix.SockFilter{ins(unix.BPF_LDX|unix.BPF_W|unix.BPF_IMM, 0, 0, 0xffffffff),
			ins(unix.BPF_LD|unix.BPF_B|unix.BPF_IND, 0, 0, 3), retA}, 0},
		{"msh", []unix.SockFilter{ins(unix.BPF_LDX|unix.BPF_B|unix.BPF_MSH, 0, 0, 1),
			ins(unix.BPF_MISC|unix.BPF_TXA, 0, 0, 0), retA}, 4},
		{"len", []unix.SockFilter{ins(unix.BPF_LD|unix.BPF_W|unix.BPF_LEN, 0, 0, 0), retA}, 8},
		{"div by zero x", []unix.SockFilter{ins(unix.BPF_LD|unix.BPF_IMM, 0, 0, 5),
			ins(unix.BPF_ALU|unix.BPF_DIV|unix.BPF_X, 0, 0, 0), ins(unix.BPF_RET|unix.BPF_K, 0, 0, 1)}, 0},
		{"mod by zero k", []unix.SockFilter{ins(unix.BPF_ALU|unix.BPF_MOD|unix.BPF_K, 0, 0, 0), ins(unix.BPF_RET|unix.BPF_K, 0, 0, 1)}, 0},
		{"mem", []unix.SockFilter{ins(unix.BPF_LD|unix.BPF_IMM, 0, 0, 9), ins(unix.BPF_ST, 0, 0, 15),
			ins(unix.BPF_LD|unix.BPF_IMM, 0, 0, 0), ins(unix.BPF_LD|unix.BPF_MEM, 0, 0, 15), retA}, 9},
		{"mem out of range", []unix.SockFilter{ins(unix.BPF_ST, 0, 0, 16), ins(unix.BPF_RET|unix.BPF_K, 0, 0, 1)}, 0},
		{"unknown opcode", []unix.SockFilter{ins(0xff, 0, 0, 0), ins(unix.BPF_RET|unix.BPF_K, 0, 0, 1)}, 0},
		{"jump out", []unix.SockFilter{ins(unix.BPF_JMP|unix.BPF_JA, 0, 0, 7)}, 0},
		{"endless loop", []unix.SockFilter{ins(unix.BPF_JMP|unix.BPF_JA, 0, 0, 0xffffffff)}, 0},
		{"jset", []unix.SockFilter{ins(unix.BPF_LD|unix.BPF_B|unix.BPF_ABS, 0, 0, 3),
			ins(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, 0, 1, 2), ins(unix.BPF_RET|unix.BPF_K, 0, 0, 1), ins(unix.BPF_RET|unix.BPF_K, 0, 0, 2)}, 1},
		{"neg", []unix.SockFilter{ins(unix.BPF_LD|unix.BPF_IMM, 0, 0, 1), ins(unix.BPF_ALU|unix.BPF_NEG, 0, 0, 0), retA}, 0xffffffff},
		{"shift mod 32", []unix.SockFilter{ins(unix.BPF_LD|unix.BPF_IMM, 0, 0, 1), ins(unix.BPF_LDX|unix.BPF_W|unix.BPF_IMM, 0, 0, 33),
			ins(unix.BPF_ALU|unix.BPF_LSH|unix.BPF_X, 0, 0, 0), retA}, 2},
	} {
		if got := Run(c.prog, pkt); got != c.want {
			t.Errorf("%s: Run = %#x, want %#x", c.name, got, c.want)
		}
	}
}

func TestMatchAllocs(t *testing.T) {
	for _, e := range []string{"tcp port 179", "ip6 protochain 6", "ip6[4:2] + ip6[6] * 2 > 100 | 3", "host 2001:db8::1 or net fe80::/10"} {
		p, err := Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		pkt := udpTo(t, 53)
		if n := testing.AllocsPerRun(1000, func() { p.Match(pkt) }); n != 0 {
			t.Errorf("%q: Match allocates %v times", e, n)
		}
	}
}

// fuzzExprs are compiled once for FuzzMatch.
var fuzzExprs = []string{"tcp port 179", "icmp6[icmp6type] = icmp6-echo", "ip6 protochain 17",
	"ip6[ip6[6]:4] / ip6[7] > len", "host 2001:db8::1 or net fe80::/10 and udp[2:2] = 53", longOr(70), "less 100"}

func FuzzMatch(f *testing.F) {
	_, pkts := corpus(f)
	for _, p := range pkts {
		f.Add(p)
	}
	var progs []*Program
	for _, e := range fuzzExprs {
		p, err := Compile(e)
		if err != nil {
			f.Fatal(err)
		}
		progs = append(progs, p)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		for _, p := range progs {
			if p.Match(pkt) != (Run(p.Instructions(), pkt) != 0) {
				t.Errorf("%q: Match and Run disagree", p)
			}
		}
	})
}

func FuzzCompile(f *testing.F) {
	for _, c := range differential {
		f.Add(c.expr)
	}
	for _, e := range []string{"(", "not", "host (", "ip6[", "tcp port 22 or", "-", "ip6[0] % ip6[1] ^ 2 = 3",
		"src or dst", "(80)", "port (53)", "\\", "::", "1:2:3:4:5:6:7:8:9", "2001:db8::/"} {
		f.Add(e)
	}
	pkt := tcpTo(f, 179)
	f.Fuzz(func(t *testing.T, expr string) {
		p, err := Compile(expr)
		if err != nil {
			if p != nil {
				t.Errorf("Compile(%q): a program and an error", expr)
			}
			return
		}
		if n := len(p.Instructions()); n == 0 || n > maxInsns {
			t.Errorf("Compile(%q): %d instructions", expr, n)
		}
		p.Match(pkt)
		p.Match(pkt[:41])
		p.Match(nil)
	})
}

// BenchmarkMatch is the common case of a capture filter: a packet it does
// not want.
func BenchmarkMatch(b *testing.B) {
	p, err := Compile("tcp port 179")
	if err != nil {
		b.Fatal(err)
	}
	pkt := udpTo(b, 53)
	b.ReportAllocs()
	for b.Loop() {
		if p.Match(pkt) {
			b.Fatal("matched")
		}
	}
}

// TestProtochainLoopEnds: an AH whose length libpcap's protochain takes
// for the next offset sends the loop round the same header for ever; the
// run ends within maxSteps and rejects.
func TestProtochainLoopEnds(t *testing.T) {
	p, err := Compile("ip6 protochain 6")
	if err != nil {
		t.Fatal(err)
	}
	pkt := make([]byte, 40+64)
	pkt[0], pkt[6] = 0x60, 51 // IPv6, next header AH
	pkt[40], pkt[41] = 51, 8  // AH, next AH, its length
	if p.Match(pkt) {
		t.Error("a looping AH chain matched")
	}
}
