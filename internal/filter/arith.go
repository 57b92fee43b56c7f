package filter

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Relations, as libpcap's gen_relation: first every protocol test the
// loads in the expression need (left to right; a load's index before the
// load), then the arithmetic, straight-line, then the comparison. The
// arithmetic is 32-bit unsigned; a load past the end, or a division by a
// zero that only the packet supplies, rejects the packet.
//
// A load is from the IPv6 header for ip6[], from byte 40 for tcp[],
// udp[], sctp[] and icmp6[], each after a test of the IPv6 header's next
// header, as libpcap's icmp6[] (libpcap's tcp[] and udp[] are IPv4 only:
// on IPv6 it never matches).

var relops = map[string]struct {
	code uint16
	neg  bool // the negation of code: swap the targets
}{
	">": {unix.BPF_JGT, false}, ">=": {unix.BPF_JGE, false},
	"=": {unix.BPF_JEQ, false}, "==": {unix.BPF_JEQ, false},
	"<=": {unix.BPF_JGT, true}, "<": {unix.BPF_JGE, true}, "!=": {unix.BPF_JEQ, true},
}

var aluops = map[string]uint16{
	"+": unix.BPF_ADD, "-": unix.BPF_SUB, "*": unix.BPF_MUL, "/": unix.BPF_DIV,
	"%": unix.BPF_MOD, "&": unix.BPF_AND, "|": unix.BPF_OR, "^": unix.BPF_XOR,
	"<<": unix.BPF_LSH, ">>": unix.BPF_RSH,
}

func (g *gen) relation(n relNode, t, f label) error {
	if err := g.guards(n.l, f); err != nil {
		return err
	}
	if err := g.guards(n.r, f); err != nil {
		return err
	}
	op := relops[n.op]
	if op.neg {
		t, f = f, t
	}
	if k, ok := n.r.(numA); ok {
		if err := g.eval(n.l); err != nil {
			return err
		}
		g.jump(op.code|unix.BPF_K, k.v, t, f)
		g.ins[len(g.ins)-1].rel = true
		return nil
	}
	if err := g.evalToX(n.l, n.r); err != nil {
		return err
	}
	g.jump(op.code|unix.BPF_X, 0, t, f)
	g.ins[len(g.ins)-1].rel = true
	return nil
}

// guards writes the protocol tests of a's loads, going to f if one fails.
func (g *gen) guards(a arth, f label) error {
	switch a := a.(type) {
	case binA:
		if err := g.guards(a.l, f); err != nil {
			return err
		}
		return g.guards(a.r, f)
	case negA:
		return g.guards(a.x, f)
	case loadA:
		if err := g.guards(a.idx, f); err != nil {
			return err
		}
		if a.proto == "ip6" {
			return nil
		}
		p, ok := transports[a.proto]
		if !ok || p == protoAH || p == protoESP {
			return fmt.Errorf("'%s[]' is not supported: use ip6[] with an offset", a.proto)
		}
		in := g.label()
		g.cmp(1, offNext, p, in, f)
		g.place(in)
	}
	return nil
}

// eval leaves a's value in A.
func (g *gen) eval(a arth) error {
	switch a := a.(type) {
	case numA:
		g.stmt(unix.BPF_LD|unix.BPF_IMM, a.v)
	case lenA:
		g.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_LEN, 0)
	case negA:
		if err := g.eval(a.x); err != nil {
			return err
		}
		g.stmt(unix.BPF_ALU|unix.BPF_NEG, 0)
	case loadA:
		base := uint32(0)
		if a.proto != "ip6" {
			base = ipv6HdrLen
		}
		if k, ok := a.idx.(numA); ok {
			g.loadAbs(a.size, base+k.v) // wraps at 32 bits, as libpcap's
			return nil
		}
		if err := g.eval(a.idx); err != nil {
			return err
		}
		g.stmt(unix.BPF_MISC|unix.BPF_TAX, 0)
		g.stmt(unix.BPF_LD|sizeCode(a.size)|unix.BPF_IND, base)
	case binA:
		op := aluops[a.op]
		if k, ok := a.r.(numA); ok {
			switch {
			case k.v == 0 && op == unix.BPF_DIV:
				return fmt.Errorf("division by zero")
			case k.v == 0 && op == unix.BPF_MOD:
				return fmt.Errorf("modulus by zero")
			case k.v > 31 && (op == unix.BPF_LSH || op == unix.BPF_RSH):
				return fmt.Errorf("shift by more than 31 bits")
			}
			if err := g.eval(a.l); err != nil {
				return err
			}
			g.stmt(unix.BPF_ALU|op|unix.BPF_K, k.v)
			return nil
		}
		if err := g.evalToX(a.l, a.r); err != nil {
			return err
		}
		g.stmt(unix.BPF_ALU|op|unix.BPF_X, 0)
	default:
		return fmt.Errorf("filter: internal error: arithmetic %T", a)
	}
	return nil
}

// evalToX leaves l in A and r in X, l kept meanwhile in scratch memory
// (so a left-deep chain, as "a + b + c" is, needs one word).
func (g *gen) evalToX(l, r arth) error {
	if g.slots == memWords {
		return fmt.Errorf("too many registers needed to evaluate expression")
	}
	slot := uint32(g.slots)
	if err := g.eval(l); err != nil {
		return err
	}
	g.stmt(unix.BPF_ST, slot)
	g.slots++
	err := g.eval(r)
	g.slots--
	if err != nil {
		return err
	}
	g.stmt(unix.BPF_MISC|unix.BPF_TAX, 0)
	g.stmt(unix.BPF_LD|unix.BPF_MEM, slot)
	return nil
}
