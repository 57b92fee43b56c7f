package filter

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// The code generator writes each primitive as libpcap's gencode.c does for
// DLT_RAW, less its IPv4 half and its per-primitive IPv6 version test
// (one test at the top of the program stands for them all). The verdicts
// depend on which loads a program makes, since a load past the end
// rejects the packet: so each primitive loads what libpcap's optimized
// program loads, in its order, and no more.
//
// Booleans compile to jumps: cond(n, t, f) writes code that goes to label
// t if n holds, else to f. Every test loads what it tests (no test uses
// A from the one before), so the optimizer (opt.go) may skip a test
// without care; it then drops the loads a test repeats. Labels become
// offsets in layout (layout.go).

type label int

// ginsn is an instruction whose jumps name labels.
type ginsn struct {
	code   uint16
	k      uint32
	jt, jf label // a conditional jump's targets; ja's target is jt
	// rel marks a relation's "=": libpcap tests A - B = 0, a value of its
	// own, which its optimizer never finds equal to a plain load's.
	rel bool
}

type gen struct {
	ins   []ginsn
	at    []int // label -> index of the instruction it stands before
	slots int   // scratch memory words in use
	// opaque are the instructions (from, to) the optimizer leaves alone:
	// protochain's loop, whose tests carry A from block to block.
	opaque [][2]int
}

const (
	snapLen    = 262144 // what tcpdump's programs return to accept
	ipv6HdrLen = 40
	offNext    = 6  // the Next Header field
	offSrc     = 8  // the source address
	offDst     = 24 // the destination address
	memWords   = 16 // classic BPF's scratch memory
)

func (g *gen) label() label {
	g.at = append(g.at, -1)
	return label(len(g.at) - 1)
}

func (g *gen) place(l label)              { g.at[l] = len(g.ins) }
func (g *gen) stmt(code uint16, k uint32) { g.ins = append(g.ins, ginsn{code: code, k: k}) }
func (g *gen) ja(t label)                 { g.ins = append(g.ins, ginsn{code: unix.BPF_JMP | unix.BPF_JA, jt: t}) }
func (g *gen) jump(code uint16, k uint32, t, f label) {
	g.ins = append(g.ins, ginsn{code: unix.BPF_JMP | code, k: k, jt: t, jf: f})
}

// loadAbs loads size bytes at off into A. A load past 2 GiB always
// fails, and rejects: it is written so, as the kernel refuses such an
// offset (it reads one of 2^32-4096 and up as an ancillary field).
func (g *gen) loadAbs(size, off uint32) {
	if off > 0x7fffffff {
		g.stmt(unix.BPF_RET|unix.BPF_K, 0)
		return
	}
	g.stmt(unix.BPF_LD|sizeCode(size)|unix.BPF_ABS, off)
}

func sizeCode(size uint32) uint16 {
	switch size {
	case 1:
		return unix.BPF_B
	case 2:
		return unix.BPF_H
	}
	return unix.BPF_W
}

// cmp: the size bytes at off equal v.
func (g *gen) cmp(size, off, v uint32, t, f label) {
	g.loadAbs(size, off)
	g.jump(unix.BPF_JEQ|unix.BPF_K, v, t, f)
}

func (g *gen) cond(n node, t, f label) error {
	switch n := n.(type) {
	case andNode:
		m := g.label()
		if err := g.cond(n.l, m, f); err != nil {
			return err
		}
		g.place(m)
		return g.cond(n.r, t, f)
	case orNode:
		m := g.label()
		if err := g.cond(n.l, t, m); err != nil {
			return err
		}
		g.place(m)
		return g.cond(n.r, t, f)
	case notNode:
		return g.cond(n.x, f, t)
	case protoNode:
		if n.name == "ip6" {
			g.ja(t)
			return nil
		}
		g.proto(transports[n.name], t, f)
		return nil
	case primNode:
		return g.prim(n, t, f)
	case relNode:
		return g.relation(n, t, f)
	case lessNode: // len <= n
		g.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_LEN, 0)
		g.jump(unix.BPF_JGT|unix.BPF_K, n.n, f, t)
		return nil
	case greatNode: // len >= n
		g.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_LEN, 0)
		g.jump(unix.BPF_JGE|unix.BPF_K, n.n, t, f)
		return nil
	case mcastNode:
		if n.tok.text == "broadcast" {
			return fmt.Errorf("'broadcast' never matches here: IPv6 has no broadcast")
		}
		if n.q.proto != "ip6" {
			return fmt.Errorf("link-layer multicast is not available on a link of raw IPv6 packets: say 'ip6 multicast'")
		}
		g.cmp(1, offDst, 0xff, t, f)
		return nil
	}
	return fmt.Errorf("filter: internal error: node %T", n)
}

// proto is libpcap's "ip6 proto v": the next header, or the one after a
// fragment header (libpcap walks no other extension header).
func (g *gen) proto(v uint32, t, f label) {
	frag, after := g.label(), g.label()
	g.loadAbs(1, offNext)
	g.jump(unix.BPF_JEQ|unix.BPF_K, v, t, frag)
	g.place(frag)
	g.cmp(1, offNext, protoFragment, after, f)
	g.place(after)
	g.cmp(1, ipv6HdrLen, v, t, f)
}

// hosts is "host" and "net": the address under mask, by 32-bit words,
// where the mask has bits (libpcap's optimizer drops the other words'
// loads).
func (g *gen) hosts(dir string, a, m [16]byte, t, f label) {
	one := func(off uint32, t, f label) {
		var words []int
		for w := range 4 {
			if be32(m[4*w:]) != 0 {
				words = append(words, w)
			}
		}
		if len(words) == 0 {
			g.ja(t)
			return
		}
		for i, w := range words {
			next := t
			if i < len(words)-1 {
				next = g.label()
			}
			g.loadAbs(4, off+uint32(4*w))
			if mw := be32(m[4*w:]); mw != 0xffffffff {
				g.stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, mw)
			}
			g.jump(unix.BPF_JEQ|unix.BPF_K, be32(a[4*w:])&be32(m[4*w:]), next, f)
			if next != t {
				g.place(next)
			}
		}
	}
	switch dir {
	case "src":
		one(offSrc, t, f)
	case "dst":
		one(offDst, t, f)
	case "and":
		m := g.label()
		one(offSrc, m, f)
		g.place(m)
		one(offDst, t, f)
	default:
		m := g.label()
		one(offSrc, t, m)
		g.place(m)
		one(offDst, t, f)
	}
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// ports is "port" and "portrange": the transport at the IPv6 header's
// next header, its ports at byte 40 (as libpcap: no extension header is
// walked). For any transport it is libpcap's "(sctp and PORTS) or (tcp
// and PORTS) or (udp and PORTS)", whose copies the optimizer skips apart.
func (g *gen) ports(proto uint32, dir string, lo, hi uint32, t, f label) {
	if proto == 0 {
		for i, p := range []uint32{protoSCTP, protoTCP, protoUDP} {
			next := f
			if i < 2 {
				next = g.label()
			}
			g.ports(p, dir, lo, hi, t, next)
			if next != f {
				g.place(next)
			}
		}
		return
	}
	in := g.label()
	g.cmp(1, offNext, proto, in, f)
	g.place(in)
	atom := func(off uint32, t, f label) {
		g.loadAbs(2, ipv6HdrLen+off)
		if lo == hi {
			g.jump(unix.BPF_JEQ|unix.BPF_K, lo, t, f)
			return
		}
		m := g.label()
		g.jump(unix.BPF_JGE|unix.BPF_K, lo, m, f)
		g.place(m)
		g.loadAbs(2, ipv6HdrLen+off)
		g.jump(unix.BPF_JGT|unix.BPF_K, hi, f, t)
	}
	switch dir {
	case "src":
		atom(0, t, f)
	case "dst":
		atom(2, t, f)
	case "and":
		m := g.label()
		atom(0, m, f)
		g.place(m)
		atom(2, t, f)
	default:
		m := g.label()
		atom(0, t, m)
		g.place(m)
		atom(2, t, f)
	}
}

// protochain is libpcap's gen_protochain for IPv6, instruction for
// instruction as its optimizer leaves it: a loop over hop-by-hop,
// destination options, routing and fragment headers (length in 8-byte
// units) and AH (length in 4-byte units; libpcap sets the offset to
// the AH's length alone, not added to where it stood, and so does this).
// The loop jumps backwards, which the kernel would refuse; Run allows it.
func (g *gen) protochain(v uint32, t, f label) {
	loop, ext, notExt, ah, done := g.label(), g.label(), g.label(), g.label(), g.label()
	mem := uint32(0)
	start := len(g.ins)
	defer func() { g.opaque = append(g.opaque, [2]int{start, len(g.ins)}) }()
	g.loadAbs(1, offNext)
	g.stmt(unix.BPF_LDX|unix.BPF_W|unix.BPF_IMM, ipv6HdrLen)
	g.place(loop)
	k := func(v uint32, t, f label) { g.jump(unix.BPF_JEQ|unix.BPF_K, v, t, f) }
	n1, n2, n3, n4, n5 := g.label(), g.label(), g.label(), g.label(), g.label()
	k(v, done, n1)
	g.place(n1)
	k(protoNoNext, done, n2)
	g.place(n2)
	k(protoHopOpts, ext, n3)
	g.place(n3)
	k(protoDstOpts, ext, n4)
	g.place(n4)
	k(protoRouting, ext, n5)
	g.place(n5)
	k(protoFragment, ext, notExt)
	g.place(ext)
	g.stmt(unix.BPF_LD|unix.BPF_B|unix.BPF_IND, 0)
	g.stmt(unix.BPF_ST, mem)
	g.stmt(unix.BPF_LD|unix.BPF_B|unix.BPF_IND, 1)
	g.stmt(unix.BPF_ALU|unix.BPF_ADD|unix.BPF_K, 1)
	g.stmt(unix.BPF_ALU|unix.BPF_MUL|unix.BPF_K, 8)
	g.stmt(unix.BPF_ALU|unix.BPF_ADD|unix.BPF_X, 0)
	g.stmt(unix.BPF_MISC|unix.BPF_TAX, 0)
	g.stmt(unix.BPF_LD|unix.BPF_MEM, mem)
	g.ja(loop)
	g.place(notExt)
	k(protoAH, ah, done)
	g.place(ah)
	g.stmt(unix.BPF_MISC|unix.BPF_TXA, 0)
	g.stmt(unix.BPF_LD|unix.BPF_B|unix.BPF_IND, 0)
	g.stmt(unix.BPF_ST, mem)
	g.stmt(unix.BPF_MISC|unix.BPF_TXA, 0)
	g.stmt(unix.BPF_ALU|unix.BPF_ADD|unix.BPF_K, 1)
	g.stmt(unix.BPF_MISC|unix.BPF_TAX, 0)
	g.stmt(unix.BPF_LD|unix.BPF_B|unix.BPF_IND, 0)
	g.stmt(unix.BPF_ALU|unix.BPF_ADD|unix.BPF_K, 2)
	g.stmt(unix.BPF_ALU|unix.BPF_MUL|unix.BPF_K, 4)
	g.stmt(unix.BPF_MISC|unix.BPF_TAX, 0)
	g.stmt(unix.BPF_LD|unix.BPF_MEM, mem)
	g.ja(loop)
	g.place(done)
	k(v, t, f)
}
