package filter

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Arithmetic relations (`ip6[6] == 17`, `len > 1000`, `icmp6[0] != 135`):
// each side into the accumulator, the right one first into scratch memory
// unless it is a constant, then one comparison.

type arith struct {
	op    string // "n" a number, "len", "load", "neg", or a binary operator
	n     uint32
	a, b  *arith
	size  int    // load: 1, 2 or 4 bytes
	base  uint32 // load: where its header starts (40 past the fixed header)
	proto uint32 // load: the next header it needs; 0: any IPv6
}

var errDivZero = errors.New("division by zero")

// fold computes the constant parts of x.
func fold(x *arith) (*arith, error) {
	if x.a != nil {
		a, err := fold(x.a)
		if err != nil {
			return nil, err
		}
		x.a = a
	}
	if x.b != nil {
		b, err := fold(x.b)
		if err != nil {
			return nil, err
		}
		x.b = b
	}
	switch {
	case x.op == "neg" && x.a.op == "n":
		return &arith{op: "n", n: -x.a.n}, nil
	case x.a != nil && x.b != nil && x.a.op == "n" && x.b.op == "n" && x.op != "load":
		a, b := x.a.n, x.b.n
		var v uint32
		switch x.op {
		case "+":
			v = a + b
		case "-":
			v = a - b
		case "*":
			v = a * b
		case "/", "%":
			if b == 0 {
				return nil, errDivZero
			}
			if v = a / b; x.op == "%" {
				v = a % b
			}
		case "&":
			v = a & b
		case "|":
			v = a | b
		case "^":
			v = a ^ b
		case "<<":
			v = a << (b & 31)
		case ">>":
			v = a >> (b & 31)
		}
		return &arith{op: "n", n: v}, nil
	case x.b != nil && x.b.op == "n" && x.b.n == 0 && (x.op == "/" || x.op == "%"):
		return nil, errDivZero
	}
	return x, nil
}

var aluOps = map[string]uint16{"+": unix.BPF_ADD, "-": unix.BPF_SUB, "*": unix.BPF_MUL, "/": unix.BPF_DIV,
	"%": unix.BPF_MOD, "&": unix.BPF_AND, "|": unix.BPF_OR, "^": unix.BPF_XOR, "<<": unix.BPF_LSH, ">>": unix.BPF_RSH}

var errScratch = errors.New("expression too complex: it needs more than 16 scratch words")

// value computes x into the accumulator.
func (g *gen) value(x *arith) error {
	switch x.op {
	case "n":
		g.op(unix.BPF_LD|unix.BPF_IMM, x.n)
	case "len":
		g.op(unix.BPF_LD|unix.BPF_W|unix.BPF_LEN, 0)
	case "neg":
		if err := g.value(x.a); err != nil {
			return err
		}
		g.op(unix.BPF_ALU|unix.BPF_NEG, 0)
	case "load":
		size := map[int]uint16{1: unix.BPF_B, 2: unix.BPF_H, 4: unix.BPF_W}[x.size]
		if x.a.op == "n" {
			g.op(unix.BPF_LD|size|unix.BPF_ABS, x.base+x.a.n)
			return nil
		}
		if err := g.value(x.a); err != nil {
			return err
		}
		g.op(unix.BPF_MISC|unix.BPF_TAX, 0)
		g.op(unix.BPF_LD|size|unix.BPF_IND, x.base)
	default:
		alu := aluOps[x.op]
		if x.b.op == "n" {
			if err := g.value(x.a); err != nil {
				return err
			}
			g.op(unix.BPF_ALU|alu|unix.BPF_K, x.b.n)
			return nil
		}
		if g.mem == 16 {
			return errScratch
		}
		if err := g.value(x.b); err != nil {
			return err
		}
		m := g.mem
		g.op(unix.BPF_ST, uint32(m))
		g.mem++
		err := g.value(x.a)
		g.mem--
		if err != nil {
			return err
		}
		g.op(unix.BPF_LDX|unix.BPF_MEM, uint32(m))
		g.op(unix.BPF_ALU|alu|unix.BPF_X, 0)
	}
	return nil
}

// guards are the loads' needs: IPv6, and the next header their protocol's.
func guards(x *arith, ip6 *bool, protos *[]uint32) {
	if x == nil {
		return
	}
	if x.op == "load" {
		*ip6 = true
		if x.proto != 0 {
			*protos = append(*protos, x.proto)
		}
	}
	guards(x.a, ip6, protos)
	guards(x.b, ip6, protos)
}

var swapped = map[string]string{"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}

func relation(l *arith, rel string, r *arith) func(g *gen, t, f label) {
	return func(g *gen, t, f label) {
		ip6, protos := false, []uint32(nil)
		guards(l, &ip6, &protos)
		guards(r, &ip6, &protos)
		if ip6 {
			isIPv6(g, f)
		}
		for _, p := range protos {
			ldb(g, 6)
			g.jump(unix.BPF_JEQ, p, next, f)
		}
		if l.op == "n" && r.op != "n" {
			l, r, rel = r, l, swapped[rel]
		}
		src, k := uint16(unix.BPF_K), uint32(0)
		if r.op == "n" {
			k = r.n
			g.err = errors.Join(g.err, g.value(l))
		} else {
			g.err = errors.Join(g.err, g.value(r))
			g.op(unix.BPF_MISC|unix.BPF_TAX, 0)
			g.err = errors.Join(g.err, g.valueKeepX(l))
			src = unix.BPF_X
		}
		switch rel {
		case "==", "=":
			g.jump(unix.BPF_JEQ|src, k, t, f)
		case "!=":
			g.jump(unix.BPF_JEQ|src, k, f, t)
		case ">":
			g.jump(unix.BPF_JGT|src, k, t, f)
		case ">=":
			g.jump(unix.BPF_JGE|src, k, t, f)
		case "<":
			g.jump(unix.BPF_JGE|src, k, f, t)
		case "<=":
			g.jump(unix.BPF_JGT|src, k, f, t)
		}
	}
}

// valueKeepX computes x into the accumulator with X kept: X is stored
// in scratch memory around it.
func (g *gen) valueKeepX(x *arith) error {
	if g.mem == 16 {
		return errScratch
	}
	m := g.mem
	g.op(unix.BPF_STX, uint32(m))
	g.mem++
	err := g.value(x)
	g.mem--
	g.op(unix.BPF_LDX|unix.BPF_MEM, uint32(m))
	return err
}
