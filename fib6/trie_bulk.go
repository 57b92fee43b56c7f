package fib6

import (
	"math/bits"
	"unsafe"
)

// A transaction that starts on an empty table and adds prefixes in prefix
// order (a full table loaded from a sorted feed or file) builds the trie
// bottom-up: each node is made once, at its final size, when the input
// has moved past it. The incremental path would walk the trie per prefix,
// grow nodes through the size classes and trim them at commit, leaving
// twice the table's size as garbage for the collector to chase.
//
// The build makes exactly the trie the incremental path makes from the
// same adds: a slot holding one deeper prefix gets a tail, two or more a
// node (dense at depth 8 and 16, compressed below), every node in the
// smallest class that fits, owned by the transaction. Anything else the
// transaction does (a prefix out of order, a delete, a lookup in the
// view, the commit) first settles the build: the trie is finished and
// the transaction goes on incrementally. Until compactOps prefixes have
// come the build only records them, and settling replays them through
// the incremental path, so a small transaction is built the ordinary way
// (with its slack and queued dense stores).

// bulkEntry is one prefix a bulk load took.
type bulkEntry struct {
	k    key
	plen int
	val  *rset
}

// precedes reports whether e comes before (k, plen) in prefix order (by
// address, shorter first): the order of Dump, and of a sorted table.
func (e *bulkEntry) precedes(k key, plen int) bool {
	switch {
	case e.k.hi != k.hi:
		return e.k.hi < k.hi
	case e.k.lo != k.lo:
		return e.k.lo < k.lo
	}
	return e.plen < plen
}

func (e *bulkEntry) is(k key, plen int) bool { return e.k == k && e.plen == plen }

// bulkLoad is a transaction's bulk load in progress. The latest prefix
// is held back in last, so that a replace of it (an append of a second
// route to the same destination) changes only last.
type bulkLoad struct {
	on    bool
	n     int // prefixes taken, last included
	last  bulkEntry
	early []bulkEntry // the first compactOps prefixes, before build starts
	b     *builder
	// buf holds the load once a prefix came out of order before the
	// build started (trie_bulk_buf.go); buf.idx != nil then.
	buf bulkBuf
	// builtOps is x.ops when the build settled: commit has nothing to
	// trim if no change came after it.
	builtOps int
	expect   int // prefixes the load is expected to take (Txn.Expect)
}

// bottomUp reports whether the load is built (or will be) bottom-up.
func (bl *bulkLoad) bottomUp() bool {
	return bl.b != nil || bl.builtOps != 0 || bl.buf.n >= compactOps
}

// startBulk puts the transaction, just begun on an empty table, into
// bulk-load mode.
func (x *trieTxn) startBulk() {
	x.bulk = bulkLoad{on: true}
}

// bulkInsert is insert in bulk mode; false means the transaction has
// settled and insert must go the incremental way.
func (x *trieTxn) bulkInsert(k key, plen int, val *rset) (*rset, bool) {
	bl := &x.bulk
	if bl.buf.idx != nil {
		return x.bufInsertOr(k, plen, val)
	}
	if bl.n > 0 {
		switch {
		case bl.last.is(k, plen):
			return bl.last.val, true
		case bl.last.precedes(k, plen):
		case bl.b == nil:
			// out of order before the build started: the rest is buffered
			bl.toBuffer()
			return x.bufInsertOr(k, plen, val)
		default:
			x.settle()
			return nil, false
		}
		x.take(bl.last)
	}
	bl.last = bulkEntry{k, plen, val}
	bl.n++
	x.ops++
	return nil, true
}

// bulkSet is set in bulk mode: a replace of the latest prefix, or a new
// prefix after it; false means the transaction has settled.
func (x *trieTxn) bulkSet(k key, plen int, val *rset) bool {
	bl := &x.bulk
	if bl.buf.idx == nil {
		if val != nil && bl.n > 0 && bl.last.is(k, plen) {
			bl.last.val = val
			x.ops++
			return true
		}
		if val != nil && (bl.n == 0 || bl.last.precedes(k, plen)) {
			_, ok := x.bulkInsert(k, plen, val)
			return ok
		}
		if val == nil || bl.b != nil {
			x.settle()
			return false
		}
		bl.toBuffer()
	}
	if x.bufSet(k, plen, val) {
		return true
	}
	x.settle()
	return false
}

// bulkGet is get in bulk mode, if it can answer without settling: every
// prefix taken but the latest comes before it.
func (x *trieTxn) bulkGet(k key, plen int) (*rset, bool) {
	bl := &x.bulk
	switch {
	case bl.buf.idx != nil:
		return x.bufGet(k, plen), true
	case bl.n == 0:
		return nil, true
	case bl.last.is(k, plen):
		return bl.last.val, true
	case bl.last.precedes(k, plen):
		return nil, true
	}
	x.settle()
	return nil, false
}

func (x *trieTxn) take(e bulkEntry) {
	bl := &x.bulk
	if bl.b != nil {
		bl.b.add(e)
		return
	}
	if len(bl.early) < compactOps {
		bl.early = append(bl.early, e)
		return
	}
	bl.b = newBuilder(x.id)
	for _, p := range bl.early {
		bl.b.add(p)
	}
	bl.early = nil
	bl.b.add(e)
}

// settle ends bulk mode: the trie the transaction sees is made of what
// it took, and changes from here on are incremental.
func (x *trieTxn) settle() {
	bl := &x.bulk
	if !bl.on {
		return
	}
	bl.on = false
	if bl.buf.idx != nil {
		x.settleBuf()
		return
	}
	if bl.n == 0 {
		return
	}
	if bl.b != nil {
		bl.b.add(bl.last)
		x.root = asDense(bl.b.finish())
		bl.b, bl.last = nil, bulkEntry{}
		bl.builtOps = x.ops
		return
	}
	// A small load: replayed through the incremental path in order, each
	// prefix seeing its place in the load as the count of changes so far
	// (which decides between queued and copied dense stores).
	ops := x.ops
	for i, e := range append(bl.early, bl.last) {
		x.ops = i + 1
		x.setDense(0, e.k, e.plen, e.val)
	}
	x.ops = ops
	bl.early, bl.last = nil, bulkEntry{}
}

// builder builds a trie from prefixes in prefix order. It keeps a frame
// per node on the path of the latest prefix; a frame is closed (its node
// made) when a prefix outside it comes, and its node becomes the kid of
// its parent's open slot.
type builder struct {
	owner uint64
	top   int
	fr    [16]frame // depths 0, 8, ..., 120
}

// frame is a node under construction at depth, on path.
type frame struct {
	depth int
	path  key
	short bitmap256           // short locals present, by ART index
	svals [256]*rset          // their values, by ART index
	vec   bitmap256           // slots done with an entry
	ents  [256]unsafe.Pointer // a dense node's kids by slot; a compressed node's entries in order
	nent  int
	fring bitmap256  // a dense node's fringes
	fvals [256]*rset // by slot
	// the open slot: cur (or -1), its fringe, and what lies deeper: one
	// prefix (cand) or the node of a closed child frame (kid)
	cur     int
	curFr   *rset
	hasCand bool
	cand    bulkEntry
	kid     unsafe.Pointer
}

func newBuilder(owner uint64) *builder {
	b := &builder{owner: owner}
	b.fr[0].cur = -1
	return b
}

func (f *frame) dense() bool { return f.depth <= 16 }

func (f *frame) holds(k key, plen int) bool {
	return f.depth == 0 || plen > f.depth && k.masked(f.depth) == f.path
}

// shortBest is the longest short local covering slot s.
func (f *frame) shortBest(s uint8) *rset {
	for n := 7; n >= 0; n-- {
		if i := artIndex(n, s); f.short.has(i) {
			return f.svals[i]
		}
	}
	return nil
}

func (b *builder) add(e bulkEntry) {
	for !b.fr[b.top].holds(e.k, e.plen) {
		kid := b.close(&b.fr[b.top])
		b.top--
		b.fr[b.top].kid = kid
	}
	f := &b.fr[b.top]
	l := e.plen - f.depth
	s := int(e.k.byteAt(f.depth / 8))
	if f.cur >= 0 && f.cur != s {
		b.endSlot(f)
	}
	switch {
	case l < 8:
		i := artIndex(l, uint8(s))
		f.short.set(i)
		f.svals[i] = e.val
	case l == 8:
		f.cur, f.curFr = s, e.val
	case f.cur != s:
		f.cur, f.hasCand, f.cand = s, true, e
	case f.hasCand:
		// a second prefix below the slot: it gets a node
		f.hasCand = false
		c := &b.fr[b.top+1]
		b.top++
		c.depth, c.path, c.cur = f.depth+8, e.k.masked(f.depth+8), -1
		b.add(f.cand)
		b.add(e)
	default:
		f.hasCand, f.cand = true, e
	}
}

// endSlot finishes the open slot of f: its kid (a tail or a node) gets
// its default, and f its entry.
func (b *builder) endSlot(f *frame) {
	s := uint8(f.cur)
	kid := f.kid
	var dflt *rset
	fringe := false
	switch {
	case f.dense():
		if f.curFr != nil {
			f.fring.set(s)
			f.fvals[s] = f.curFr
		}
		dflt = f.curFr
		if dflt == nil {
			dflt = f.shortBest(s)
		}
	case f.curFr != nil:
		dflt, fringe = f.curFr, true
	default:
		dflt = f.shortBest(s)
	}
	if f.hasCand {
		c := &f.cand
		kid = tailEntry(&tail{k: c.k, plen: uint8(c.plen), val: c.val, dflt: dflt, fringe: fringe})
	} else if kid != nil {
		switch tagOf(kid) {
		case tagNode:
			asNode(kid).setDflt(dflt, fringe)
		case tagDense:
			asDense(kid).dflt = dflt
		}
	}
	switch {
	case f.dense() && kid != nil:
		f.ents[s] = kid
		f.vec.set(s)
	case !f.dense():
		if kid == nil {
			kid = rsetEntry(f.curFr)
		}
		f.ents[f.nent] = kid
		f.nent++
		f.vec.set(s)
	}
	f.cur, f.curFr, f.hasCand, f.kid = -1, nil, false, nil
}

// close makes f's node and returns its entry; the frame is left empty.
func (b *builder) close(f *frame) unsafe.Pointer {
	if f.cur >= 0 {
		b.endSlot(f)
	}
	loc := f.locals(b.owner)
	var e unsafe.Pointer
	if f.dense() {
		d := &dnode{loc: loc, fringe: f.fring, owner: b.owner}
		for s := range d.slots {
			if f.vec.has(uint8(s)) {
				d.slots[s] = f.ents[s]
				f.ents[s] = nil
			}
		}
		if n := f.fring.count(); n > 0 {
			d.fval = make([]*rset, 0, n)
			forEach(&f.fring, func(s uint8) {
				d.fval = append(d.fval, f.fvals[s])
				f.fvals[s] = nil
			})
		}
		for s := range d.slots {
			if d.slots[s] == nil {
				d.slots[s] = rsetEntry(d.best(uint8(s)))
			}
		}
		e = denseEntry(d)
	} else {
		n := allocNode(classFor(f.nent))
		n.vec = f.vec
		n.fixCum()
		for i := 0; i < f.nent; i++ {
			*n.entryPtr(i) = f.ents[i]
			f.ents[i] = nil
		}
		n.cold().owner = b.owner
		n.setLoc(loc)
		e = nodeEntry(n)
	}
	f.vec, f.fring, f.nent = bitmap256{}, bitmap256{}, 0
	return e
}

// locals makes f's short locals, clearing them from the frame.
func (f *frame) locals(owner uint64) *locals {
	if f.short == (bitmap256{}) {
		return nil
	}
	l := &locals{owner: owner, short: f.short, vals: make([]*rset, 0, f.short.count())}
	forEach(&f.short, func(i uint8) {
		l.vals = append(l.vals, f.svals[i])
		f.svals[i] = nil
	})
	f.short = bitmap256{}
	return l
}

// closeSlots closes every frame but the root's, and the root's open
// slot: what is left is the root's slots, for take.
func (b *builder) closeSlots() {
	for b.top > 0 {
		kid := b.close(&b.fr[b.top])
		b.top--
		b.fr[b.top].kid = kid
	}
	if f := &b.fr[0]; f.cur >= 0 {
		b.endSlot(f)
	}
}

// take moves the root slots of h, which built the slots after b's (both
// closed by closeSlots, h given the short locals of b's that reach its
// slots), into b's root.
func (b *builder) take(h *builder) {
	f, g := &b.fr[0], &h.fr[0]
	forEach(&g.vec, func(s uint8) { f.ents[s] = g.ents[s] })
	forEach(&g.fring, func(s uint8) { f.fvals[s] = g.fvals[s] })
	forEach(&g.short, func(i uint8) { f.svals[i] = g.svals[i] })
	for w := range f.vec {
		f.vec[w] |= g.vec[w]
		f.fring[w] |= g.fring[w]
		f.short[w] |= g.short[w]
	}
}

// finish closes every frame and returns the root's entry.
func (b *builder) finish() unsafe.Pointer {
	for b.top > 0 {
		kid := b.close(&b.fr[b.top])
		b.top--
		b.fr[b.top].kid = kid
	}
	return b.close(&b.fr[0])
}

func (b *bitmap256) count() int {
	return bits.OnesCount64(b[0]) + bits.OnesCount64(b[1]) + bits.OnesCount64(b[2]) + bits.OnesCount64(b[3])
}

// forEach calls fn for every member of m, in order.
func forEach(m *bitmap256, fn func(uint8)) {
	for w, word := range m {
		for word != 0 {
			fn(uint8(w*64 + bits.TrailingZeros64(word)))
			word &= word - 1
		}
	}
}
