package fib6

import (
	"math/bits"
	"net/netip"
	"slices"
	"sync/atomic"
	"unsafe"
)

// Reading the trie: the lookup of one address, of a batch, and every prefix
// containing an address (in either view). The walk in prefix order is in
// walk.go.

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
// advance a level at a time in passes over the list of those still going,
// and a pass touches at most one cold line per walk, whose value only the
// next pass reads: by then the line has come in, and the pass, a few
// instructions per walk, had many walks' misses outstanding at once. A
// compressed level is two passes: the node's header (vector word, counts,
// dflt), then its entry. A walk that ends at a slot without entry in a
// node with short locals takes two more steps alongside the others: the
// node's cold part, then its locals.
func (t *trie) lookupKeys(as [][16]byte, out []*rset) {
	n := len(as)
	if n > batchWidth {
		panic("fib6: lookupKeys batch wider than batchWidth")
	}
	const mask = batchWidth - 1
	var (
		es    [batchWidth]unsafe.Pointer // walk j's entry, or its node's cold part, or locals
		best  [batchWidth]*rset          // walk j's answer so far
		slot  [batchWidth]uint8          // the slot a walk to short locals looks up
		act   [batchWidth]uint8          // walks going down
		tails [batchWidth]uint8          // walks ended at a tail
		colds [batchWidth]uint8          // walks whose node's cold part is touched
		locs  [batchWidth]uint8          // walks whose locals are touched
	)
	na := t.walkDense(as, &es, &best, &act)
	const lvl = 3
	nt, nc, nl := 0, 0, 0
	for i := lvl; na+nc+nl > 0; i++ {
		// Issue: touch each walk's node header; finish the walks whose
		// entry ends them.
		k := 0
		for _, j := range act[:na] {
			e := es[j&mask]
			if tagOf(e) == tagNode {
				atomic.LoadUint64((*uint64)(unsafe.Add(e, -tagNode)))
				atomic.LoadUint64((*uint64)(unsafe.Add(e, 32-tagNode)))
				act[k&mask] = j
				k++
				continue
			}
			switch tagOf(e) {
			case tagDense:
				act[k&mask] = j
				k++
			case tagRset:
				best[j&mask] = asRset(e)
			case tagTail:
				atomic.LoadUint64((*uint64)(unsafe.Add(e, -tagTail)))
				atomic.LoadUint64((*uint64)(unsafe.Add(e, 32-tagTail)))
				tails[nt&mask] = j
				nt++
			}
		}
		na = k
		nl = touchLocals(colds[:nc], &es, &locs, nl)
		nc = 0
		// Work: step each walk down a level, loading its next entry.
		k = 0
		for _, j := range act[:na] {
			e := es[j&mask]
			o := as[j][i&15]
			if tagOf(e) == tagDense { // a compressed node's dense kid: none yet
				d := asDense(e)
				if r := d.dflt; r != nil {
					best[j&mask] = r
				}
				es[j&mask] = d.slot(o)
				act[k&mask] = j
				k++
				continue
			}
			nd := asNode(e)
			b := best[j&mask]
			if d := nd.dflt; d != nil {
				b = d
			}
			best[j&mask] = b
			w := o >> 6 & 3
			bit := uint64(1) << (o & 63)
			m := nd.vec[w]
			if m&bit == 0 {
				if nd.flags&hasLocals != 0 {
					c := nd.cold()
					atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&c.loc)))
					es[j&mask] = unsafe.Pointer(c)
					slot[j&mask] = o
					colds[nc&mask] = j
					nc++
				}
				continue
			}
			es[j&mask] = atomic.LoadPointer((*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(nd), cnodeSize+uintptr(int(nd.cum[w])+bits.OnesCount64(m&(bit-1)))*8)))
			act[k&mask] = j
			k++
		}
		na = k
		loadLocals(locs[:nl], &es, &slot, &best)
		nl = 0
	}
	endTails(as, tails[:nt], &es, &best)
	copy(out[:n], best[:n])
}

// walkDense starts lookupKeys' walks of as: the root and the dense nodes
// below it (depth 8 and 16) are few and stay in cache, so they are walked
// without passes. Compressed nodes start at depth 24, so all walks that
// go on do so from there; a dense node deeper (there is none) is left to
// lookup. It gives the walks' entries and answers so far, and the walks
// going on, in act: how many.
func (t *trie) walkDense(as [][16]byte, es *[batchWidth]unsafe.Pointer, best *[batchWidth]*rset, act *[batchWidth]uint8) int {
	const mask = batchWidth - 1
	root := t.root.Load()
	na := 0
	for j := range as {
		a := &as[j]
		var b *rset
		e := root.slot(a[0])
		if tagOf(e) == tagDense {
			d := asDense(e)
			if r := d.dflt; r != nil {
				b = r
			}
			e = d.slot(a[1])
			if tagOf(e) == tagDense {
				d := asDense(e)
				if r := d.dflt; r != nil {
					b = r
				}
				e = d.slot(a[2])
				if tagOf(e) == tagDense {
					b, e = t.lookup(a), nil
				}
			} else if tagOf(e) == tagNode {
				b, e = t.lookup(a), nil
			}
		} else if tagOf(e) == tagNode {
			b, e = t.lookup(a), nil
		}
		es[j&mask], best[j&mask] = e, b
		act[na&mask] = uint8(j)
		na++
	}
	return na
}

// touchLocals is a lookupKeys pass: the cold parts of the walks in colds
// are in, so their locals are touched, and the walks that have some are
// added to locs after its first nl; it gives how many locs holds.
func touchLocals(colds []uint8, es *[batchWidth]unsafe.Pointer, locs *[batchWidth]uint8, nl int) int {
	const mask = batchWidth - 1
	for _, j := range colds {
		if l := (*cnodeCold)(es[j&mask]).loc; l != nil {
			atomic.LoadUint64(&l.short[0])
			es[j&mask] = unsafe.Pointer(l)
			locs[nl&mask] = j
			nl++
		}
	}
	return nl
}

// loadLocals is a lookupKeys pass: the locals of the walks in locs are
// in, so the one covering each walk's slot is its answer, if any.
func loadLocals(locs []uint8, es *[batchWidth]unsafe.Pointer, slot *[batchWidth]uint8, best *[batchWidth]*rset) {
	const mask = batchWidth - 1
	for _, j := range locs {
		if r := (*locals)(es[j&mask]).shortBest(slot[j&mask]); r != nil {
			best[j&mask] = r
		}
	}
}

// endTails ends lookupKeys' walks that reached a tail: its value if the
// key matches it, else its default.
func endTails(as [][16]byte, tails []uint8, es *[batchWidth]unsafe.Pointer, best *[batchWidth]*rset) {
	const mask = batchWidth - 1
	for _, j := range tails {
		tl := asTail(es[j&mask])
		if tl.matches(keyOf(&as[j])) {
			best[j&mask] = tl.val
		} else if tl.dflt != nil {
			best[j&mask] = tl.dflt
		}
	}
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
