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

// batchWidth is how many lookups lookupKeys advances together.
const batchWidth = 16

// lookupKeys does lookup for every address (as bytes, the way the
// dataplane takes them from packets), at most batchWidth of them, advancing
// them a level at a time so that their memory accesses overlap: a single
// lookup waits on one cache miss per level; a batch waits on one per level
// for all of them. Table.LookupKeys splits larger batches.
func (t *trie) lookupKeys(as [][16]byte, out []*rset) {
	n := len(as)
	if n > batchWidth {
		panic("fib6: lookupKeys batch wider than batchWidth")
	}
	root := t.root.Load()
	var es [batchWidth]unsafe.Pointer
	var best [batchWidth]*rset
	for j := 0; j < n; j++ {
		es[j] = root.slot(as[j][0])
	}
	for i := 1; i < 16; i++ {
		busy := false
		for j := 0; j < n; j++ {
			e := es[j]
			switch tagOf(e) {
			case tagNode:
				nd := asNode(e)
				if d := nd.dflt; d != nil {
					best[j] = d
				}
				o := as[j][i]
				w := o >> 6
				bit := uint64(1) << (o & 63)
				m := nd.vec[w&3]
				if m&bit == 0 {
					if nd.flags&hasLocals != 0 {
						if r := nd.cold().loc.shortBest(o); r != nil {
							best[j] = r
						}
					}
					es[j] = nil
					continue
				}
				es[j] = atomic.LoadPointer((*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(nd), cnodeSize+uintptr(int(nd.cum[w&3])+bits.OnesCount64(m&(bit-1)))*8)))
				busy = true
			case tagDense:
				d := asDense(e)
				if r := d.dflt; r != nil {
					best[j] = r
				}
				es[j] = d.slot(as[j][i])
				busy = true
			}
		}
		if !busy {
			break
		}
	}
	for j := 0; j < n; j++ {
		r := best[j]
		switch e := es[j]; tagOf(e) {
		case tagRset:
			r = asRset(e)
		case tagTail:
			tl := asTail(e)
			if tl.matches(keyOf(&as[j])) {
				r = tl.val
			} else if tl.dflt != nil {
				r = tl.dflt
			}
		}
		out[j] = r
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
