package filter

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Code generation. A boolean expression is compiled as libpcap's is, into
// tests that jump to where the expression is true or false: a test's
// "next" falls through to the instruction after it. Every jump is
// forward, so a label is placed after every jump to it.

type label int

const next label = -1 // the instruction after the jump

type gen struct {
	ins    []unix.SockFilter
	jt, jf []label // each instruction's targets; none for non-jumps
	pos    []int   // each label's instruction
	mem    int     // scratch words in use
	err    error   // what a test could not generate
}

const noJump label = -2

func (g *gen) newLabel() label { g.pos = append(g.pos, -1); return label(len(g.pos) - 1) }

func (g *gen) place(l label) { g.pos[l] = len(g.ins) }

func (g *gen) op(code uint16, k uint32) {
	g.ins = append(g.ins, unix.SockFilter{Code: code, K: k})
	g.jt, g.jf = append(g.jt, noJump), append(g.jf, noJump)
}

// jump is a conditional jump: to t if true, to f if not.
func (g *gen) jump(code uint16, k uint32, t, f label) {
	g.ins = append(g.ins, unix.SockFilter{Code: unix.BPF_JMP | code, K: k})
	g.jt, g.jf = append(g.jt, t), append(g.jf, f)
}

// always jumps to t.
func (g *gen) always(t label) {
	if t == next {
		return
	}
	g.ins = append(g.ins, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JA})
	g.jt, g.jf = append(g.jt, t), append(g.jf, noJump)
}

var errTooComplex = errors.New("expression too complex: a jump is longer than classic BPF's 255 instructions")

// resolve turns labels into offsets.
func (g *gen) resolve() error {
	for i := range g.ins {
		off := func(l label) (int, error) {
			target := i + 1
			if l != next {
				target = g.pos[l]
			}
			d := target - (i + 1)
			if d < 0 {
				return 0, errors.New("filter: a backward jump") // never: labels are placed after their jumps
			}
			return d, nil
		}
		if g.jt[i] == noJump {
			continue
		}
		t, err := off(g.jt[i])
		if err != nil {
			return err
		}
		if g.ins[i].Code == unix.BPF_JMP|unix.BPF_JA {
			g.ins[i].K = uint32(t)
			continue
		}
		f, err := off(g.jf[i])
		if err != nil {
			return err
		}
		if t > 255 || f > 255 {
			return errTooComplex
		}
		g.ins[i].Jt, g.ins[i].Jf = uint8(t), uint8(f)
	}
	return nil
}

// node is a boolean expression.
type node struct {
	op   byte // '&', '|', '!', or 0 for a test
	a, b *node
	test func(g *gen, t, f label)
}

func (g *gen) bool(n *node, t, f label) {
	switch n.op {
	case '&':
		mid := g.newLabel()
		g.bool(n.a, mid, f)
		g.place(mid)
		g.bool(n.b, t, f)
	case '|':
		mid := g.newLabel()
		g.bool(n.a, t, mid)
		g.place(mid)
		g.bool(n.b, t, f)
	case '!':
		g.bool(n.a, f, t)
	default:
		n.test(g, t, f)
	}
}

// The tests, as libpcap words them for raw IPv6.

func ldb(g *gen, off uint32) { g.op(unix.BPF_LD|unix.BPF_B|unix.BPF_ABS, off) }
func ldh(g *gen, off uint32) { g.op(unix.BPF_LD|unix.BPF_H|unix.BPF_ABS, off) }
func ldw(g *gen, off uint32) { g.op(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }

// isIPv6 goes on if the packet is IPv6, else to f.
func isIPv6(g *gen, f label) {
	ldb(g, 0)
	g.op(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0xf0)
	g.jump(unix.BPF_JEQ, 0x60, next, f)
}

const fragmentHeader = 44

// ip6Proto: the next header is p, or a fragment header whose next is p.
func ip6Proto(p uint32) func(g *gen, t, f label) {
	return func(g *gen, t, f label) {
		isIPv6(g, f)
		ldb(g, 6)
		g.jump(unix.BPF_JEQ, p, t, next)
		g.jump(unix.BPF_JEQ, fragmentHeader, next, f)
		ldb(g, 40)
		g.jump(unix.BPF_JEQ, p, t, f)
	}
}

// address compares the 16 bytes at off with a, under the prefix of bits.
func address(g *gen, off uint32, a [16]byte, bits int, t, f label) {
	words := (bits + 31) / 32
	if words == 0 {
		g.always(t)
		return
	}
	for i := 0; i < words; i++ {
		v := uint32(a[4*i])<<24 | uint32(a[4*i+1])<<16 | uint32(a[4*i+2])<<8 | uint32(a[4*i+3])
		ldw(g, off+uint32(4*i))
		if rest := bits - 32*i; rest < 32 {
			mask := ^uint32(0) << (32 - rest)
			g.op(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, mask)
			v &= mask
		}
		to := next
		if i == words-1 {
			to = t
		}
		g.jump(unix.BPF_JEQ, v, to, f)
	}
}

// Directions of host, net and port.
type direction uint8

const (
	dirSrcOrDst direction = iota
	dirSrc
	dirDst
	dirSrcAndDst
)

// both applies one test at the source's offset and the destination's, as
// the direction says.
func both(g *gen, d direction, t, f label, test func(which int, t, f label)) {
	switch d {
	case dirSrc:
		test(0, t, f)
	case dirDst:
		test(1, t, f)
	case dirSrcOrDst:
		mid := g.newLabel()
		test(0, t, mid)
		g.place(mid)
		test(1, t, f)
	case dirSrcAndDst:
		mid := g.newLabel()
		test(0, mid, f)
		g.place(mid)
		test(1, t, f)
	}
}

func hostTest(d direction, a [16]byte, bits int) func(g *gen, t, f label) {
	return func(g *gen, t, f label) {
		isIPv6(g, f)
		both(g, d, t, f, func(which int, t, f label) { address(g, 8+16*uint32(which), a, bits, t, f) })
	}
}

// portTest: a transport of protos (in libpcap's order) whose port at the
// direction's offset is within [lo, hi]; ports are read right after the
// fixed header, as libpcap reads them.
func portTest(protos []uint32, d direction, lo, hi uint32) func(g *gen, t, f label) {
	return func(g *gen, t, f label) {
		isIPv6(g, f)
		ldb(g, 6)
		body := g.newLabel()
		for i, p := range protos {
			if i == len(protos)-1 {
				g.jump(unix.BPF_JEQ, p, next, f)
			} else {
				g.jump(unix.BPF_JEQ, p, body, next)
			}
		}
		g.place(body)
		both(g, d, t, f, func(which int, t, f label) {
			ldh(g, 40+2*uint32(which))
			if lo == hi {
				g.jump(unix.BPF_JEQ, lo, t, f)
				return
			}
			g.jump(unix.BPF_JGE, lo, next, f)
			g.jump(unix.BPF_JGT, hi, f, t)
		})
	}
}

func lengthTest(greater bool, n uint32) func(g *gen, t, f label) {
	return func(g *gen, t, f label) {
		g.op(unix.BPF_LD|unix.BPF_W|unix.BPF_LEN, 0)
		if greater {
			g.jump(unix.BPF_JGE, n, t, f)
		} else {
			g.jump(unix.BPF_JGT, n, f, t)
		}
	}
}
