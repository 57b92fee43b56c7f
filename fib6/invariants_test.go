package fib6

import (
	"fmt"
	"math/bits"
	"unsafe"
)

// checkInvariants walks the published trie and reports the first broken
// structural rule: defaults equal the parent's best local, vectors and
// counts agree, no lone prefix keeps a node, visible and hidden fringes
// never coincide.
func (t *trie) checkInvariants() error {
	type want struct {
		r      *rset
		fringe bool
	}
	var walk func(e unsafe.Pointer, path key, depth int, dflt want) error
	walk = func(e unsafe.Pointer, path key, depth int, dflt want) error {
		where := path.prefix(depth)
		switch tagOf(e) {
		case tagTail:
			tl := asTail(e)
			if tl.dflt != dflt.r || tl.fringe != dflt.fringe {
				return fmt.Errorf("tail %s under %s: dflt %p want %p", tl.k.prefix(int(tl.plen)), where, tl.dflt, dflt.r)
			}
			if int(tl.plen) < depth || tl.k.masked(depth) != path.masked(depth) {
				return fmt.Errorf("tail %s misplaced under %s", tl.k.prefix(int(tl.plen)), where)
			}
			return nil
		case tagDense:
			d := asDense(e)
			if depth > 0 && d.dflt != dflt.r {
				return fmt.Errorf("dense %s: dflt %p want %p", where, d.dflt, dflt.r)
			}
			for s := 0; s < 256; s++ {
				k := d.slot(uint8(s))
				b := d.best(uint8(s))
				if isKid(k) {
					if depth >= 16 && tagOf(k) == tagDense || depth < 16 && tagOf(k) == tagNode {
						return fmt.Errorf("dense %s slot %d: wrong kid kind", where, s)
					}
					if err := walk(k, path.withByte(depth/8, uint8(s)), depth+8, want{b, false}); err != nil {
						return err
					}
				} else if entryRset(k) != b {
					return fmt.Errorf("dense %s slot %d: entry %p want local best %p", where, s, entryRset(k), b)
				}
			}
			return nil
		case tagNode:
			n := asNode(e)
			if n.dflt != dflt.r || (n.flags&dfltFringe != 0) != dflt.fringe {
				return fmt.Errorf("node %s: dflt %p want %p", where, n.dflt, dflt.r)
			}
			c := n.cold()
			if n.entries() > capOf[n.cls] {
				return fmt.Errorf("node %s: %d entries, room for %d", where, n.entries(), capOf[n.cls])
			}
			cum := 0
			for w := 0; w < 4; w++ {
				if int(n.cum[w]) != cum {
					return fmt.Errorf("node %s: cum[%d]=%d want %d", where, w, n.cum[w], cum)
				}
				cum += bits.OnesCount64(n.vec[w])
			}
			if (n.flags&hasLocals != 0) != (c.loc.len() > 0) {
				return fmt.Errorf("node %s: hasLocals flag wrong", where)
			}
			total := c.loc.len()
			if c.loc != nil && total == 0 {
				return fmt.Errorf("node %s: empty locals kept", where)
			}
			for s := 0; s < 256; s++ {
				k := n.slotEntry(uint8(s))
				if n.vec.has(uint8(s)) && k == nil {
					return fmt.Errorf("node %s slot %d: nil entry", where, s)
				}
				switch {
				case isKid(k):
					if tagOf(k) == tagDense {
						return fmt.Errorf("node %s slot %d: dense kid", where, s)
					}
					total += 2
					w := want{c.loc.shortBest(uint8(s)), false}
					if kidFringe(k) {
						w = want{kidDflt(k), true}
						if w.r == nil {
							return fmt.Errorf("node %s slot %d: nil hidden fringe", where, s)
						}
					}
					if err := walk(k, path.withByte(depth/8, uint8(s)), depth+8, w); err != nil {
						return err
					}
				case k != nil:
					total++
				}
			}
			if total < 2 {
				return fmt.Errorf("node %s holds %d prefixes: should have collapsed", where, total)
			}
			return nil
		}
		return nil
	}
	return walk(denseEntry(t.root.Load()), key{}, 0, want{})
}
