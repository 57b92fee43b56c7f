package fib6

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
	"slices"
	"sync/atomic"
	"unsafe"
)

// The trie maps IPv6 prefixes to route sets. Its shape and the reasons for
// it are in DESIGN.md; in short:
//
//   - Stride 8. The nodes at depth 0, 8 and 16 are dense (256 slots); deeper
//     nodes are compressed (a 256-bit vector and only the entries it marks).
//   - A node at depth d holds the "local" prefixes with lengths in (d, d+8]
//     (the root also length 0). A prefix of length exactly d+8 is a fringe:
//     it owns one slot. Shorter locals are "short" and cover a block of slots.
//   - A slot's entry is a kid (a deeper node, or a tail: a lone deeper prefix
//     kept whole) or, with no kid, the best local route set for that slot.
//     Compressed nodes keep entries for kids and fringes only and look shorter
//     locals up in their cold part; dense nodes keep every slot resolved.
//   - Every kid remembers dflt, its parent's best local for its slot, so a
//     lookup walks down once, remembering the last dflt, and never backtracks.
//   - Entries are tagged pointers: the low 3 bits say what they point at.
//
// Readers load the root, dense slots and entries atomically and never
// write. Compressed nodes, tails and locals are immutable once published,
// but for one thing: a transaction of a single change may swap one kid
// entry of a published node in place. Otherwise writers copy what they
// change (in place if their transaction made it) and publish with one
// atomic store into a dense slot or of the root.

const (
	tagRset  = 1
	tagNode  = 2
	tagDense = 3
	tagTail  = 4
	tagMask  = 7
)

func tagOf(e unsafe.Pointer) uintptr { return uintptr(e) & tagMask }

func isKid(e unsafe.Pointer) bool {
	t := tagOf(e)
	return t == tagNode || t == tagDense || t == tagTail
}

func rsetEntry(r *rset) unsafe.Pointer {
	if r == nil {
		return nil
	}
	return unsafe.Add(unsafe.Pointer(r), tagRset)
}

func nodeEntry(n *cnode) unsafe.Pointer  { return unsafe.Add(unsafe.Pointer(n), tagNode) }
func denseEntry(d *dnode) unsafe.Pointer { return unsafe.Add(unsafe.Pointer(d), tagDense) }
func tailEntry(t *tail) unsafe.Pointer   { return unsafe.Add(unsafe.Pointer(t), tagTail) }

func asRset(e unsafe.Pointer) *rset  { return (*rset)(unsafe.Add(e, -tagRset)) }
func asNode(e unsafe.Pointer) *cnode { return (*cnode)(unsafe.Add(e, -tagNode)) }
func asDense(e unsafe.Pointer) *dnode {
	return (*dnode)(unsafe.Add(e, -tagDense))
}
func asTail(e unsafe.Pointer) *tail { return (*tail)(unsafe.Add(e, -tagTail)) }

// entryRset is the route set an entry resolves to when it is not a kid.
func entryRset(e unsafe.Pointer) *rset {
	if tagOf(e) == tagRset {
		return asRset(e)
	}
	return nil
}

// key is a 128-bit address or prefix, most significant bits in hi.
type key struct{ hi, lo uint64 }

func keyOf(b *[16]byte) key {
	return key{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

func prefixKey(p netip.Prefix) key {
	b := p.Addr().As16()
	return keyOf(&b)
}

// byteAt returns the i-th byte (0 = most significant).
func (k key) byteAt(i int) uint8 {
	if i < 8 {
		return uint8(k.hi >> (56 - 8*i))
	}
	return uint8(k.lo >> (56 - 8*(i-8)))
}

// masked clears every bit from bit n on.
func (k key) masked(n int) key {
	switch {
	case n <= 0:
		return key{}
	case n < 64:
		return key{k.hi &^ (^uint64(0) >> n), 0}
	case n < 128:
		return key{k.hi, k.lo &^ (^uint64(0) >> (n - 64))}
	}
	return k
}

// withByte returns k with byte i set to v (bits below are untouched).
func (k key) withByte(i int, v uint8) key {
	if i < 8 {
		sh := 56 - 8*i
		k.hi = k.hi&^(0xff<<sh) | uint64(v)<<sh
	} else {
		sh := 56 - 8*(i-8)
		k.lo = k.lo&^(0xff<<sh) | uint64(v)<<sh
	}
	return k
}

func (k key) prefix(plen int) netip.Prefix {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], k.hi)
	binary.BigEndian.PutUint64(b[8:], k.lo)
	return netip.PrefixFrom(netip.AddrFrom16(b), plen)
}

// contains reports whether the prefix (k, plen) contains address a.
func (k key) contains(plen int, a key) bool { return a.masked(plen) == k }

// bitmap256 is a set of slots 0..255.
type bitmap256 [4]uint64

func (b *bitmap256) has(i uint8) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b *bitmap256) set(i uint8)      { b[i>>6] |= 1 << (i & 63) }
func (b *bitmap256) clear(i uint8)    { b[i>>6] &^= 1 << (i & 63) }

// rank is the number of members below i.
func (b *bitmap256) rank(i uint8) int {
	w := i >> 6
	r := bits.OnesCount64(b[w] & (1<<(i&63) - 1))
	for j := uint8(0); j < w; j++ {
		r += bits.OnesCount64(b[j])
	}
	return r
}

// first returns the lowest member; false if there is none.
func (b *bitmap256) first() (uint8, bool) {
	for w, word := range b {
		if word != 0 {
			return uint8(w*64 + bits.TrailingZeros64(word)), true
		}
	}
	return 0, false
}

// artIndex numbers the prefixes of one stride as Knuth's ART does: length l
// (0..7) and the slot s it starts at give 1<<l | s>>(8-l), so 1..255.
func artIndex(l int, s uint8) uint8 { return uint8(1<<l | int(s)>>(8-l)) }

// locals are a node's short local prefixes (shorter than the stride, so
// covering a block of slots): which ART indices are present, and their
// route sets in index order. A lookup reaches them only for a slot
// without an entry, and then tests at most 8 bits. Immutable once
// published.
type locals struct {
	owner uint64    // transaction that made it; it may change it in place
	short bitmap256 // ART indices present
	vals  []*rset
}

func (l *locals) len() int {
	if l == nil {
		return 0
	}
	return len(l.vals)
}

// shortBest is the longest short local covering slot s. Its candidates
// are one ART index of each length n, 1<<n | s>>(8-n): /7's in the upper
// half of the bitmap, /6's in its second word, /0-/5's all in the first,
// so three tests find it where one per length took eight (a cold lookup
// ends here often: 9% of its time).
func (l *locals) shortBest(s uint8) *rset {
	if l == nil {
		return nil
	}
	b := &l.short
	if i := artIndex(7, s); b.has(i) {
		return l.vals[b.rank(i)]
	}
	if i := artIndex(6, s); b.has(i) {
		return l.vals[b.rank(i)]
	}
	var c uint64 // the candidates of lengths 0-5, all below 64
	for n := range 6 {
		c |= 1 << artIndex(n, s)
	}
	if m := b[0] & c; m != 0 {
		return l.vals[b.rank(uint8(63-bits.LeadingZeros64(m)))]
	}
	return nil
}

func (l *locals) shortAt(idx uint8) *rset {
	if l == nil || !l.short.has(idx) {
		return nil
	}
	return l.vals[l.short.rank(idx)]
}

// first returns the first short local (by index).
func (l *locals) first() (uint8, *rset) {
	if i, ok := l.short.first(); ok {
		return i, l.vals[0]
	}
	return 0, nil
}

// withShort returns l with index idx set to v (nil deletes): l itself if
// owner made it, else a copy made by owner. nil when none are left.
func (l *locals) withShort(owner uint64, idx uint8, v *rset) *locals {
	if l == nil || l.owner != owner {
		c := &locals{owner: owner}
		if l != nil {
			c.short = l.short
			c.vals = append(make([]*rset, 0, len(l.vals)+1), l.vals...)
		}
		l = c
	}
	i := l.short.rank(idx)
	switch {
	case l.short.has(idx) && v != nil:
		l.vals[i] = v
	case l.short.has(idx):
		l.short.clear(idx)
		l.vals = slices.Delete(l.vals, i, i+1)
	case v != nil:
		l.short.set(idx)
		l.vals = slices.Insert(l.vals, i, v)
	}
	if len(l.vals) == 0 {
		return nil
	}
	return l
}

// dnode is a dense node: every slot resolved. Readers load slots atomically.
type dnode struct {
	slots  [256]unsafe.Pointer
	dflt   *rset
	loc    *locals
	fringe bitmap256 // slots with a fringe
	fval   []*rset   // their values, in slot order
	owner  uint64    // transaction that made it; it may change it in place
}

func (d *dnode) slot(s uint8) unsafe.Pointer { return atomic.LoadPointer(&d.slots[s]) }

func (d *dnode) fringeAt(s uint8) *rset {
	if !d.fringe.has(s) {
		return nil
	}
	return d.fval[d.fringe.rank(s)]
}

// best is the longest local of d covering slot s.
func (d *dnode) best(s uint8) *rset {
	if r := d.fringeAt(s); r != nil {
		return r
	}
	return d.loc.shortBest(s)
}

func (d *dnode) empty() bool { return d.loc == nil && len(d.fval) == 0 }

// setFringe sets d's fringe at slot s (nil deletes); d is owned, but its
// fval may be shared with the node it was copied from.
func (d *dnode) setFringe(s uint8, v *rset) {
	i := d.fringe.rank(s)
	fv := slices.Clone(d.fval)
	switch {
	case d.fringe.has(s) && v != nil:
		fv[i] = v
	case d.fringe.has(s):
		d.fringe.clear(s)
		fv = slices.Delete(fv, i, i+1)
	case v != nil:
		d.fringe.set(s)
		fv = slices.Insert(fv, i, v)
	}
	d.fval = fv
}

// cnode is a compressed node. Its entries and a cnodeCold follow it in the
// same allocation (see cnodeN); entryAt and cold find them.
type cnode struct {
	cum   [4]uint8 // entries before each vec word
	flags uint8
	cls   uint8 // capacity class: room for capOf[cls] entries
	_     [2]uint8
	vec   bitmap256 // slots with an entry: a kid or a visible fringe
	dflt  *rset
}

const (
	// hasLocals: the node has short locals, so a slot without an entry
	// may still match one.
	hasLocals = 1 << iota
	// dfltFringe: the node's dflt is its compressed parent's fringe for
	// its slot (a fringe hidden behind a kid lives only there).
	dfltFringe
)

type cnodeCold struct {
	owner uint64
	loc   *locals
}

const cnodeSize = unsafe.Sizeof(cnode{})

func (n *cnode) entries() int { return int(n.cum[3]) + bits.OnesCount64(n.vec[3]) }

func (n *cnode) entryPtr(i int) *unsafe.Pointer {
	return (*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(n), cnodeSize+uintptr(i)*8))
}

// entryAt loads entry i atomically: a single-change transaction may store
// a new kid into a published node's entry (see trieTxn.pending).
func (n *cnode) entryAt(i int) unsafe.Pointer { return atomic.LoadPointer(n.entryPtr(i)) }

func (n *cnode) cold() *cnodeCold {
	return (*cnodeCold)(unsafe.Add(unsafe.Pointer(n), cnodeSize+uintptr(capOf[n.cls])*8))
}

// slotEntry is the entry for slot s, or nil.
func (n *cnode) slotEntry(s uint8) unsafe.Pointer {
	w := s >> 6
	m := n.vec[w]
	bit := uint64(1) << (s & 63)
	if m&bit == 0 {
		return nil
	}
	return n.entryAt(int(n.cum[w]) + bits.OnesCount64(m&(bit-1)))
}

func (n *cnode) fixCum() {
	n.cum[1] = uint8(bits.OnesCount64(n.vec[0]))
	n.cum[2] = n.cum[1] + uint8(bits.OnesCount64(n.vec[1]))
	n.cum[3] = n.cum[2] + uint8(bits.OnesCount64(n.vec[2]))
}

// localBest is the longest local of n covering slot s.
func (n *cnode) localBest(s uint8) *rset {
	e := n.slotEntry(s)
	switch tagOf(e) {
	case tagRset:
		return asRset(e) // a visible fringe
	case tagNode, tagTail:
		return kidDflt(e) // a kid's dflt is exactly this
	}
	return n.cold().loc.shortBest(s)
}

// fringeAt is n's fringe for slot s: the entry, or the fringe hidden
// behind the slot's kid.
func (n *cnode) fringeAt(s uint8) *rset { return fringeOf(n.slotEntry(s)) }

// fringeOf is the fringe a compressed node's entry e stands for: e's route
// set, or the fringe hidden behind e when it is a kid.
func fringeOf(e unsafe.Pointer) *rset {
	if r := entryRset(e); r != nil {
		return r
	}
	if isKid(e) && kidFringe(e) {
		return kidDflt(e)
	}
	return nil
}

func kidDflt(e unsafe.Pointer) *rset {
	switch tagOf(e) {
	case tagNode:
		return asNode(e).dflt
	case tagTail:
		return asTail(e).dflt
	case tagDense:
		return asDense(e).dflt
	}
	return nil
}

// kidFringe reports whether kid e's dflt is its parent's fringe.
func kidFringe(e unsafe.Pointer) bool {
	switch tagOf(e) {
	case tagNode:
		return asNode(e).flags&dfltFringe != 0
	case tagTail:
		return asTail(e).fringe
	}
	return false
}

// tail is a lone prefix deeper than its slot, kept whole (path compression).
type tail struct {
	k      key
	plen   uint8
	fringe bool // dflt is the parent's fringe (see dfltFringe)
	val    *rset
	dflt   *rset
}

func (t *tail) matches(a key) bool { return t.k.contains(int(t.plen), a) }
