package filter

import (
	"strings"

	"golang.org/x/sys/unix"
)

// Program is a compiled filter. It is immutable: one Program serves any
// number of goroutines.
type Program struct {
	expr  string
	insns []unix.SockFilter
}

// Compile compiles expr; "" (or only spaces) gives a program that accepts
// every packet. An error is one line saying what was wrong, in libpcap's
// words where it has them.
func Compile(expr string) (*Program, error) {
	if strings.TrimSpace(expr) == "" {
		return &Program{expr: expr, insns: []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: snapLen}}}, nil
	}
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	root, err := parse(toks)
	if err != nil {
		return nil, err
	}
	g := &gen{}
	body, acc, rej := g.label(), g.label(), g.label()
	// The version test, once for every primitive (libpcap repeats it).
	g.loadAbs(1, 0)
	g.stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0xf0)
	g.jump(unix.BPF_JEQ|unix.BPF_K, 0x60, body, rej)
	g.place(body)
	if err := g.cond(root, acc, rej); err != nil {
		return nil, err
	}
	g.place(acc)
	g.stmt(unix.BPF_RET|unix.BPF_K, snapLen)
	g.place(rej)
	g.stmt(unix.BPF_RET|unix.BPF_K, 0)
	g.optimize()
	insns, err := g.layout()
	if err != nil {
		return nil, err
	}
	return &Program{expr: expr, insns: insns}, nil
}

// Match runs the program on IPv6 packet pkt (pkt[0] holds the version);
// the wire length is len(pkt). A load past the end rejects, as the
// kernel's BPF does.
func (p *Program) Match(pkt []byte) bool {
	return Run(p.insns, pkt) != 0
}

// Instructions are the program as classic BPF, what tcpdump -dd prints
// (a copy: the program's own stay as they are).
func (p *Program) Instructions() []unix.SockFilter {
	return append([]unix.SockFilter(nil), p.insns...)
}

// String is the source expression.
func (p *Program) String() string { return p.expr }
