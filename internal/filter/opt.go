package filter

import (
	"fmt"
	"math/bits"
	"slices"

	"golang.org/x/sys/unix"
)

// The optimizer does what libpcap's does (optimize.c) where it changes
// verdicts: a test that cannot change the outcome, or whose outcome is
// known, is skipped, and with it its loads, so a packet too short for
// them is decided by the tests left. That is:
//
//  1. a test whose two targets are one is skipped;
//  2. a test of a constant (no load, or a value anded or multiplied by
//     0) has its outcome known;
//  3. a test whose outcome a test on every path to it decided — the same
//     value, the same comparison (libpcap's fold_edge with its edge
//     dominators) — is skipped to the target that outcome takes.
//
// It repeats them until nothing changes, then drops a test's loads when
// the one test before it, its only way in, loaded the same.

type block struct {
	start  int     // first instruction, the block's identity in g
	stmts  []ginsn // what computes A (and X) for the test
	term   ginsn   // the jump or ret that ends it
	succ   [2]int  // blocks: jt, jf (a ja's target is succ[0]); -1 for ret
	key    string  // the tested value: the statements that compute it
	opaque bool
}

func (b *block) cond() bool { return isCond(b.term.code) }

// optimize rewrites g.ins and g.at.
func (g *gen) optimize() {
	bs := g.blocks()
	for range 4 * len(bs) {
		if !thread(bs) {
			break
		}
	}
	g.emit(bs)
}

// blocks splits the program at labels and jumps.
func (g *gen) blocks() []*block {
	leader := make([]bool, len(g.ins)+1)
	leader[0] = true
	for _, at := range g.at {
		leader[at] = true
	}
	for i, in := range g.ins {
		if in.code&0x07 == unix.BPF_JMP || in.code&0x07 == unix.BPF_RET {
			leader[i+1] = true
		}
	}
	byStart := map[int]int{}
	var bs []*block
	for i := 0; i < len(g.ins); {
		b := &block{start: i, succ: [2]int{-1, -1}}
		for _, r := range g.opaque {
			b.opaque = b.opaque || (i >= r[0] && i < r[1])
		}
		for ; ; i++ {
			in := g.ins[i]
			if c := in.code & 0x07; c == unix.BPF_JMP || c == unix.BPF_RET {
				b.term = in
				i++
				break
			}
			b.stmts = append(b.stmts, in)
			if leader[i+1] { // falls into the next block
				b.term = ginsn{code: unix.BPF_JMP | unix.BPF_JA, jt: -1}
				i++
				break
			}
		}
		byStart[b.start] = len(bs)
		bs = append(bs, b)
	}
	for _, b := range bs {
		b.key = fmt.Sprint(b.stmts)
		if b.term.rel && b.term.code&0xf0 == unix.BPF_JEQ {
			b.key = fmt.Sprint("A-B ", b.stmts, b.term.k)
		}
		if len(b.stmts) == 0 || b.opaque {
			b.key = fmt.Sprintf("unique %d", b.start)
		}
		end := b.start + len(b.stmts) + 1
		switch {
		case b.term.code == unix.BPF_JMP|unix.BPF_JA && b.term.jt == -1:
			b.succ[0] = byStart[end-1]
		case b.term.code == unix.BPF_JMP|unix.BPF_JA:
			b.succ[0] = byStart[g.at[b.term.jt]]
		case b.cond():
			b.succ = [2]int{byStart[g.at[b.term.jt]], byStart[g.at[b.term.jf]]}
		}
	}
	return bs
}

// thread makes one round of the rules over every edge; it says whether
// one changed.
func thread(bs []*block) bool {
	nEdges := 2 * len(bs)
	words := (nEdges + 63) / 64
	// dom[b]: the edges on every path from the first block to b (back
	// edges, protochain's, are passed over: the facts are the packet's,
	// which a loop does not change).
	dom := make([][]uint64, len(bs))
	reached := make([]bool, len(bs))
	reached[0] = true
	for i, b := range bs {
		if !reached[i] {
			continue
		}
		if dom[i] == nil {
			dom[i] = make([]uint64, words)
		}
		for j, s := range b.succ {
			if s <= i || (j == 1 && !b.cond()) {
				continue
			}
			in := slices.Clone(dom[i])
			if b.cond() {
				e := 2*i + j
				in[e/64] |= 1 << (e % 64)
			}
			if !reached[s] {
				reached[s], dom[s] = true, in
			} else {
				for w := range dom[s] {
					dom[s][w] &= in[w]
				}
			}
		}
	}
	changed := false
	for i, b := range bs {
		if !reached[i] {
			continue
		}
		for j, s := range b.succ {
			if s < 0 || (j == 1 && !b.cond()) || s <= i {
				continue
			}
			facts := slices.Clone(dom[i])
			if b.cond() {
				e := 2*i + j
				facts[e/64] |= 1 << (e % 64)
			}
			if t := skip(bs, s, facts); t != s {
				b.succ[j], changed = t, true
			}
		}
	}
	return changed
}

// skip follows block s past the tests the rules skip.
func skip(bs []*block, s int, facts []uint64) int {
	for steps := 0; steps < len(bs); steps++ {
		b := bs[s]
		if b.opaque || (!b.cond() && b.term.code != unix.BPF_JMP|unix.BPF_JA) {
			return s
		}
		if !b.cond() { // an empty ja
			if len(b.stmts) != 0 || b.succ[0] <= s {
				return s
			}
			s = b.succ[0]
			continue
		}
		if b.succ[0] == b.succ[1] {
			s = b.succ[0]
			continue
		}
		if out, ok := constOutcome(b); ok {
			s = b.succ[btoi(!out)]
			continue
		}
		next := -1
		for w, word := range facts {
			for word != 0 {
				e := w*64 + bits.TrailingZeros64(word)
				word &= word - 1
				if out, ok := fold(b, bs[e/2], e%2 == 0); ok {
					next = b.succ[btoi(!out)]
					break
				}
			}
			if next >= 0 {
				break
			}
		}
		if next < 0 {
			return s
		}
		s = next
	}
	return s
}

// fold is libpcap's fold_edge: what b's test gives where d's test went
// the way taken says.
func fold(b, d *block, taken bool) (bool, bool) {
	if b.key != d.key || b.term.code != d.term.code {
		return false, false
	}
	if b.term.k == d.term.k || b.term.code&unix.BPF_X != 0 {
		return taken, true
	}
	if taken && b.term.code == unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K {
		return false, true // A was d's constant, so not b's
	}
	return false, false
}

// constOutcome evaluates a test of a value the packet does not change.
func constOutcome(b *block) (bool, bool) {
	type val struct {
		v  uint32
		ok bool
	}
	var a, x val
	var mem [memWords]val
	for _, in := range b.stmts {
		switch c := in.code; {
		case c == unix.BPF_LD|unix.BPF_IMM:
			a = val{in.k, true}
		case c == unix.BPF_LDX|unix.BPF_W|unix.BPF_IMM:
			x = val{in.k, true}
		case c == unix.BPF_ST:
			mem[in.k] = a
		case c == unix.BPF_LD|unix.BPF_MEM:
			a = mem[in.k]
		case c == unix.BPF_LDX|unix.BPF_W|unix.BPF_MEM:
			x = mem[in.k]
		case c == unix.BPF_MISC|unix.BPF_TAX:
			x = a
		case c == unix.BPF_MISC|unix.BPF_TXA:
			a = x
		case c == unix.BPF_ALU|unix.BPF_NEG:
			a.v = -a.v
		case c&0x07 == unix.BPF_ALU:
			v := val{in.k, true}
			if c&unix.BPF_X != 0 {
				v = x
			}
			op := c & 0xf0
			if v.ok && v.v == 0 && (op == unix.BPF_AND || op == unix.BPF_MUL) {
				a = val{0, true} // libpcap: A & 0 and A * 0 are 0, whatever A was
				continue
			}
			r, ok := alu(op, a.v, v.v)
			a = val{r, a.ok && v.ok && ok}
		case c&0x07 == unix.BPF_LD:
			a = val{}
		default:
			x = val{}
		}
	}
	v := val{b.term.k, true}
	if b.term.code&unix.BPF_X != 0 {
		v = x
	}
	if !a.ok || !v.ok {
		return false, false
	}
	switch b.term.code & 0xf0 {
	case unix.BPF_JEQ:
		return a.v == v.v, true
	case unix.BPF_JGT:
		return a.v > v.v, true
	case unix.BPF_JGE:
		return a.v >= v.v, true
	}
	return a.v&v.v != 0, true
}

// emit writes the blocks still reached back as instructions and labels.
func (g *gen) emit(bs []*block) {
	preds := make([][]int, len(bs))
	reached := make([]bool, len(bs))
	reached[0] = true
	for i, b := range bs {
		if !reached[i] {
			continue
		}
		for j, s := range b.succ {
			if s >= 0 && (j == 0 || b.cond()) {
				reached[s] = true
				if j == 0 || b.succ[0] != b.succ[1] {
					preds[s] = append(preds[s], i)
				}
			}
		}
	}
	g.ins, g.at = nil, nil
	labels := make([]label, len(bs))
	for i := range bs {
		labels[i] = g.label()
	}
	for i, b := range bs {
		g.place(labels[i]) // an unreached block's label names nothing
		if !reached[i] {
			continue
		}
		p := -1
		if len(preds[i]) == 1 {
			p = preds[i][0]
		}
		if b.opaque || p < 0 || bs[p].opaque || !bs[p].cond() || bs[p].key != b.key {
			g.ins = append(g.ins, b.stmts...)
		} // else A (and X) hold what the test before loaded
		t := b.term
		switch {
		case b.cond():
			t.jt, t.jf = labels[b.succ[0]], labels[b.succ[1]]
		case t.code == unix.BPF_JMP|unix.BPF_JA:
			t.jt = labels[b.succ[0]]
		}
		g.ins = append(g.ins, t)
	}
}
