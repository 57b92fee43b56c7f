package fib6

import (
	"math/bits"
	"net/netip"
	"slices"
	"sync/atomic"
	"unsafe"
)

// Reading the trie: the lookup of one address, of a batch, every prefix
// containing an address (in either view), and the walk in prefix order.

// trie is one table's prefix map.
type trie struct {
	root atomic.Pointer[dnode]
	_    [lineSize - 8]byte // alone on its line: an 8-byte object would share one with others
}

// lineSize is a cache line's.
const lineSize = 64

func newTrie() *trie {
	t := &trie{}
	t.root.Store(&dnode{})
	return t
}

// lookup returns the route set of the longest prefix containing a.
func (t *trie) lookup(a *[16]byte) *rset {
	var best *rset
	e := t.root.Load().slot(a[0])
	i := 1
	for {
		switch tagOf(e) {
		case tagNode:
			n := asNode(e)
			if d := n.dflt; d != nil {
				best = d
			}
			o := a[i&15]
			i++
			w := o >> 6
			bit := uint64(1) << (o & 63)
			m := n.vec[w&3]
			if m&bit == 0 {
				if n.flags&hasLocals != 0 {
					if r := n.cold().loc.shortBest(o); r != nil {
						return r
					}
				}
				return best
			}
			e = atomic.LoadPointer((*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(n), cnodeSize+uintptr(int(n.cum[w&3])+bits.OnesCount64(m&(bit-1)))*8)))
		case tagDense:
			d := asDense(e)
			if r := d.dflt; r != nil {
				best = r
			}
			e = d.slot(a[i&15])
			i++
		case tagRset:
			return asRset(e)
		case tagTail:
			tl := asTail(e)
			if tl.matches(keyOf(a)) {
				return tl.val
			}
			if tl.dflt != nil {
				return tl.dflt
			}
			return best
		default:
			return best
		}
	}
}

// batchWidth is how many lookups lookupKeys interleaves: a whole packet
// batch, so that there are enough independent misses to keep the memory
// system busy.
const batchWidth = 64

// lookupKeys does lookup for every address (as bytes, the way the
// dataplane takes them from packets), at most batchWidth of them.
// Table.LookupKeys splits larger batches.
//
// A single lookup waits on each of its cache misses in turn. Here the walks
// advance in passes over the list of those still going, and a pass touches
// at most one cold line per walk whose value only the next pass reads: by
// then the line has come in, while the pass itself issued a miss for every
// walk in a few instructions each, so the out-of-order window holds many of
// them at once. A compressed level is two passes: the node's header (its
// vector word, counts and dflt), then its entry. Walks that end in a tail
// or in a node's short locals finish in passes of their own after the others.
func (t *trie) lookupKeys(as [][16]byte, out []*rset) {
	n := len(as)
	if n > batchWidth {
		panic("fib6: lookupKeys batch wider than batchWidth")
	}
	var (
		es     [batchWidth]unsafe.Pointer // walk j's entry
		best   [batchWidth]*rset          // walk j's answer so far
		lv     [batchWidth]uint8          // the byte walk j reads next
		act    [batchWidth]uint8          // walks still going
		tails  [batchWidth]uint8          // walks ended at a tail
		shorts [batchWidth]uint8          // walks ended at a slot without entry, in a node with short locals
	)
	na, nt, ns := 0, 0, 0
	// The root and the dense nodes below it are few and stay in cache:
	// walk them without passes.
	root := t.root.Load()
	for j := range n {
		a := &as[j]
		var b *rset
		e := root.slot(a[0])
		i := 1
		for tagOf(e) == tagDense && i < 16 {
			d := asDense(e)
			if r := d.dflt; r != nil {
				b = r
			}
			e = d.slot(a[i])
			i++
		}
		es[j&(batchWidth-1)], best[j&(batchWidth-1)], lv[j&(batchWidth-1)] = e, b, uint8(i)
		act[na] = uint8(j)
		na++
	}
	for na > 0 {
		// Issue: touch the line each walk reads next; finish those whose
		// entry ends them.
		k := 0
		for _, j := range act[:na] {
			j &= batchWidth - 1
			e := es[j]
			switch tagOf(e) {
			case tagNode:
				nd := asNode(e)
				atomic.LoadUint64((*uint64)(unsafe.Pointer(nd)))
				atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&nd.dflt)))
			case tagDense:
				atomic.LoadPointer(&asDense(e).slots[as[j][lv[j]&15]])
			case tagRset:
				best[j] = asRset(e)
				continue
			case tagTail:
				tl := asTail(e)
				atomic.LoadUint64(&tl.k.hi)
				atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&tl.dflt)))
				tails[nt] = uint8(j)
				nt++
				continue
			default:
				continue
			}
			act[k] = uint8(j)
			k++
		}
		na = k
		// Work: step each walk down one level, loading its next entry.
		k = 0
		for _, j := range act[:na] {
			j &= batchWidth - 1
			e := es[j]
			i := lv[j]
			o := as[j][i&15]
			lv[j] = i + 1
			if tagOf(e) == tagDense {
				d := asDense(e)
				if r := d.dflt; r != nil {
					best[j] = r
				}
				es[j] = d.slot(o)
				act[k] = uint8(j)
				k++
				continue
			}
			nd := asNode(e)
			if d := nd.dflt; d != nil {
				best[j] = d
			}
			w := o >> 6
			bit := uint64(1) << (o & 63)
			m := nd.vec[w&3]
			if m&bit == 0 {
				if nd.flags&hasLocals != 0 {
					c := nd.cold()
					atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&c.loc)))
					es[j] = unsafe.Pointer(c)
					lv[j] = o
					shorts[ns] = uint8(j)
					ns++
				}
				continue
			}
			es[j] = atomic.LoadPointer((*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(nd), cnodeSize+uintptr(int(nd.cum[w&3])+bits.OnesCount64(m&(bit-1)))*8)))
			act[k] = uint8(j)
			k++
		}
		na = k
	}
	// Short locals: the node's cold part was touched; touch its locals,
	// then load the one covering the slot (lv holds the slot now).
	for _, j := range shorts[:ns] {
		j &= batchWidth - 1
		l := (*cnodeCold)(es[j]).loc
		if l != nil {
			atomic.LoadUint64(&l.short[0])
		}
		es[j] = unsafe.Pointer(l)
	}
	for _, j := range shorts[:ns] {
		j &= batchWidth - 1
		if r := (*locals)(es[j]).shortBest(lv[j]); r != nil {
			best[j] = r
		}
	}
	for _, j := range tails[:nt] {
		j &= batchWidth - 1
		tl := asTail(es[j])
		if tl.matches(keyOf(&as[j])) {
			best[j] = tl.val
		} else if tl.dflt != nil {
			best[j] = tl.dflt
		}
	}
	copy(out[:n], best[:n])
}

// match is one prefix that contains an address, as matches reports it.
type match struct {
	p netip.Prefix
	r *rset
}

// matches appends every prefix containing a with its route set, longest
// first. The slow path behind source routes, `route get` and oif lookups.
func (t *trie) matches(a key, out []match) []match {
	return matchesIn(published{}, denseEntry(t.root.Load()), a, out)
}

// view is how a walk reads a trie: as published, or as a transaction sees
// it (its own copies and the stores it has queued).
type view interface {
	// slot is dense node d's slot (at level lvl) for a.
	slot(d *dnode, lvl int, a key) unsafe.Pointer
	// entry is compressed node n's entry for slot o.
	entry(n *cnode, o uint8) unsafe.Pointer
}

// published is the view of readers: what is stored.
type published struct{}

func (published) slot(d *dnode, lvl int, a key) unsafe.Pointer { return d.slot(a.byteAt(lvl)) }
func (published) entry(n *cnode, o uint8) unsafe.Pointer       { return n.slotEntry(o) }

// matchesIn is matches in view v of the trie whose root entry is e: one
// walk down a's path, collecting each node's short locals and fringe for
// a's slot, and the tail it ends in.
func matchesIn(v view, e unsafe.Pointer, a key, out []match) []match {
	start := len(out)
	for depth := 0; depth < 128; depth += 8 {
		o := a.byteAt(depth / 8)
		var kid unsafe.Pointer
		switch tagOf(e) {
		case tagDense:
			d := asDense(e)
			out = appendShorts(out, d.loc, a, depth, o, depth == 0)
			out = appendMatch(out, a, depth+8, d.fringeAt(o))
			kid = v.slot(d, depth/8, a)
		case tagNode:
			n := asNode(e)
			out = appendShorts(out, n.cold().loc, a, depth, o, false)
			kid = v.entry(n, o)
			out = appendMatch(out, a, depth+8, fringeOf(kid))
		case tagTail:
			if tl := asTail(e); tl.matches(a) {
				out = append(out, match{tl.k.prefix(int(tl.plen)), tl.val})
			}
		}
		if !isKid(kid) {
			break
		}
		e = kid
	}
	slices.Reverse(out[start:])
	return out
}

// appendShorts appends a node's short locals (lengths depth+1..depth+7,
// and depth itself for the root) that cover slot o, shortest first.
func appendShorts(out []match, l *locals, a key, depth int, o uint8, root bool) []match {
	for n := 0; n < 8; n++ {
		if n > 0 || root {
			out = appendMatch(out, a, depth+n, l.shortAt(artIndex(n, o)))
		}
	}
	return out
}

func appendMatch(out []match, a key, plen int, r *rset) []match {
	if r == nil {
		return out
	}
	return append(out, match{a.masked(plen).prefix(plen), r})
}

// walk calls fn for every prefix in the trie that lies within bound, in
// prefix order (by address, shorter first), until fn returns false.
func (t *trie) walk(bound netip.Prefix, fn func(netip.Prefix, *rset) bool) bool {
	w := walker{bk: prefixKey(bound), bl: bound.Bits(), fn: fn}
	return w.node(denseEntry(t.root.Load()), key{}, 0)
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

// node walks the subtree of entry e, a kid whose node (if any) sits at depth
// with path bits path.
func (w *walker) node(e unsafe.Pointer, path key, depth int) bool {
	if !w.overlaps(path, depth) {
		return true
	}
	switch tagOf(e) {
	case tagTail:
		tl := asTail(e)
		return w.emit(tl.k, int(tl.plen), tl.val)
	case tagDense, tagNode:
	default:
		return true
	}
	var l *locals
	var d *dnode
	var n *cnode
	if tagOf(e) == tagDense {
		d = asDense(e)
		l = d.loc
	} else {
		n = asNode(e)
		l = n.cold().loc
	}
	bi := depth / 8
	for s := 0; s < 256; s++ {
		o := uint8(s)
		sk := path.withByte(bi, o)
		for ln := 0; ln < 8; ln++ {
			if ln == 0 && depth != 0 || s&(1<<(8-ln)-1) != 0 {
				continue
			}
			if !w.emit(sk, depth+ln, l.shortAt(artIndex(ln, o))) {
				return false
			}
		}
		var kid unsafe.Pointer
		var fr *rset
		if d != nil {
			kid = d.slot(o)
			fr = d.fringeAt(o)
		} else {
			kid = n.slotEntry(o)
			fr = n.fringeAt(o)
		}
		if !w.emit(sk, depth+8, fr) {
			return false
		}
		if isKid(kid) && !w.node(kid, sk, depth+8) {
			return false
		}
	}
	return true
}
