package fib6

import (
	"math/bits"
	"net/netip"
	"unsafe"
)

// The walk in prefix order, behind Dump, Flush's filters and what a
// flushed version tells its watchers. A dump of the full table visits
// tens of thousands of compressed nodes with a handful of entries each,
// so a node's slots are visited only where something can be: its entry
// vector and the slots its short locals start at (and, for a bound, only
// the slots inside it), not all 256 with eight local lengths each.

// walk calls fn for every prefix in the trie that lies within bound, in
// prefix order (by address, shorter first), until fn returns false.
func (t *trie) walk(bound netip.Prefix, fn func(netip.Prefix, *rset) bool) bool {
	return walkFrom(t.root.Load(), bound, fn)
}

// walkFrom is walk of the version whose root is root (a published one:
// a flush walks the version it emptied after publishing the empty one).
func walkFrom(root *dnode, bound netip.Prefix, fn func(netip.Prefix, *rset) bool) bool {
	w := walker{bk: prefixKey(bound), bl: bound.Bits(), fn: fn}
	return w.node(denseEntry(root), key{}, 0)
}

type walker struct {
	bk key
	bl int
	fn func(netip.Prefix, *rset) bool
}

// overlaps reports whether the prefix (k, plen) and the bound overlap.
func (w *walker) overlaps(k key, plen int) bool {
	n := min(plen, w.bl)
	return k.masked(n) == w.bk.masked(n)
}

func (w *walker) emit(k key, plen int, r *rset) bool {
	if r == nil || plen < w.bl || !w.overlaps(k, plen) {
		return true
	}
	return w.fn(k.prefix(plen), r)
}

// slotRange is the slots of a node at depth on the bound's path that lie
// in the bound (all of them once the bound is shorter than the node).
func (w *walker) slotRange(depth int) (lo, hi uint8) {
	rem := w.bl - depth
	if rem <= 0 {
		return 0, 255
	}
	b := w.bk.byteAt(depth / 8)
	if rem >= 8 {
		return b, b
	}
	free := uint8(0xff) >> rem
	return b &^ free, b&^free | free
}

// shortStarts is the set of slots at which l's short locals start: the
// only slots (besides entries) a walk of a compressed node must visit.
func shortStarts(l *locals) (b bitmap256) {
	if l == nil {
		return b
	}
	for wi, word := range l.short {
		for word != 0 {
			idx := wi*64 + bits.TrailingZeros64(word)
			word &= word - 1
			ln := bits.Len(uint(idx)) - 1 // idx = 1<<ln | slot>>(8-ln)
			b.set(uint8((idx - 1<<ln) << (8 - ln)))
		}
	}
	return b
}

// node walks the subtree of entry e, a kid whose node (if any) sits at depth
// with path bits path.
func (w *walker) node(e unsafe.Pointer, path key, depth int) bool {
	if !w.overlaps(path, depth) {
		return true
	}
	var l *locals
	var d *dnode
	var n *cnode
	var visit bitmap256
	switch tagOf(e) {
	case tagTail:
		tl := asTail(e)
		return w.emit(tl.k, int(tl.plen), tl.val)
	case tagDense:
		d = asDense(e)
		l = d.loc
		visit = bitmap256{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
	case tagNode:
		n = asNode(e)
		l = n.cold().loc
		visit = n.vec
	default:
		return true
	}
	starts := shortStarts(l)
	for i := range visit {
		visit[i] |= starts[i]
	}
	lo, hi := w.slotRange(depth)
	bi := depth / 8
	for wi := int(lo >> 6); wi <= int(hi>>6); wi++ {
		word := visit[wi]
		for word != 0 {
			s := wi*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if s < int(lo) {
				continue
			}
			if s > int(hi) {
				return true
			}
			if !w.slot(d, n, l, starts.has(uint8(s)), path.withByte(bi, uint8(s)), depth, uint8(s)) {
				return false
			}
		}
	}
	return true
}

// slot walks slot o of node d or n (whichever is not nil) at depth, whose
// path is sk: the short locals that start there (if any do), shortest
// first, then its fringe, then its kid.
func (w *walker) slot(d *dnode, n *cnode, l *locals, shorts bool, sk key, depth int, o uint8) bool {
	if shorts {
		for ln := 0; ln < 8; ln++ {
			if ln == 0 && depth != 0 || int(o)&(1<<(8-ln)-1) != 0 {
				continue
			}
			if !w.emit(sk, depth+ln, l.shortAt(artIndex(ln, o))) {
				return false
			}
		}
	}
	var kid unsafe.Pointer
	var fr *rset
	if d != nil {
		kid = d.slot(o)
		fr = d.fringeAt(o)
	} else {
		kid = n.slotEntry(o)
		fr = fringeOf(kid)
	}
	if !w.emit(sk, depth+8, fr) {
		return false
	}
	return !isKid(kid) || w.node(kid, sk, depth+8)
}
