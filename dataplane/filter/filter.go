// Package filter owns tcpdump's filter language (pcap-filter(7)) for
// packets that are raw IPv6, as a capture sees them: compiled to classic
// BPF in pure Go, with libpcap's IPv6 semantics (its programs are the
// tests' oracle), and the allocation-free interpreter that runs it.
//
// No pure-Go compiler serves: github.com/packetcap/go-pcap/filter
// compiles `icmp6 and host 2001:db8::1` as `host 2001:db8::1`. libpcap
// itself is C, and a capture must not need cgo or libpcap at run time.
// IPv4 and link-layer primitives are errors: the router carries IPv6 only,
// and its packets have no link header. Where libpcap reads a transport
// header of IPv6 at all, it reads it right after the fixed header (ports;
// icmp6[]), as here; `tcp[]`, `udp[]` and `sctp[]`, which libpcap reads
// only in IPv4, read IPv6's the same way here.
package filter

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Program is a compiled filter.
type Program struct {
	expr string
	ins  []unix.SockFilter
}

// MaxInstructions is classic BPF's own bound (BPF_MAXINSNS).
const MaxInstructions = 4096

// accept is what a program returns for a packet it takes: tcpdump's
// snapshot length.
const accept = 262144

// Compile compiles expr; an empty one takes every packet.
func Compile(expr string) (*Program, error) {
	prog := &Program{expr: expr}
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	if toks[0].kind == tEnd {
		prog.ins = []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: accept}}
		return prog, nil
	}
	p := &parser{toks: toks}
	n, err := p.or()
	if err == nil && p.peek().kind != tEnd {
		err = errSyntax
	}
	if err != nil {
		return nil, err
	}
	g := &gen{}
	yes, no := g.newLabel(), g.newLabel()
	g.bool(n, yes, no)
	if g.err != nil {
		return nil, g.err
	}
	g.place(yes)
	g.op(unix.BPF_RET|unix.BPF_K, accept)
	g.place(no)
	g.op(unix.BPF_RET|unix.BPF_K, 0)
	if err := g.resolve(); err != nil {
		return nil, err
	}
	if len(g.ins) > MaxInstructions {
		return nil, fmt.Errorf("expression too complex: %d instructions, classic BPF takes %d", len(g.ins), MaxInstructions)
	}
	prog.ins = g.ins
	return prog, nil
}

// Match reports whether the program takes IPv6 packet pkt (whose wire
// length is len(pkt)).
func (p *Program) Match(pkt []byte) bool { return Run(p.ins, pkt) != 0 }

// Instructions are the program as classic BPF, as tcpdump -dd prints it.
func (p *Program) Instructions() []unix.SockFilter { return p.ins }

// String is the expression compiled.
func (p *Program) String() string { return p.expr }

// Dump is the program as tcpdump -dd prints it.
func (p *Program) Dump() string {
	var b strings.Builder
	for _, i := range p.ins {
		fmt.Fprintf(&b, "{ 0x%x, %d, %d, 0x%08x },\n", i.Code, i.Jt, i.Jf, i.K)
	}
	return b.String()
}
