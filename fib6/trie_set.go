package fib6

import (
	"math/bits"
	"unsafe"
)

// Changing the trie in a transaction: setting one prefix in dense and
// compressed nodes, with the defaults of kids kept right.

func (x *trieTxn) setDense(lvl int, k key, plen int, val *rset) {
	depth := lvl * 8
	if plen <= depth+8 {
		if x.exists(denseLocal(x.dense(lvl, k), k, plen-depth, lvl)) {
			return
		}
		x.setDenseLocal(lvl, k, plen, val)
		return
	}
	var d *dnode
	if x.ops > bulkOps {
		d = x.ownDense(lvl, k)
	} else {
		d = x.dense(lvl, k)
	}
	o := k.byteAt(lvl)
	e := x.slot(d, lvl, k)
	dflt := d.best(o)
	if lvl == 2 {
		ne := x.setIn(e, 24, k, plen, val, dflt, false)
		if ne == nil {
			ne = rsetEntry(dflt)
		}
		if ne != e {
			x.setSlot(d, lvl, k, ne)
		}
		return
	}
	switch tagOf(e) {
	case tagDense:
		x.setDense(lvl+1, k, plen, val)
		if val == nil {
			x.pruneDense(lvl+1, k)
		}
	case tagTail:
		t := asTail(e)
		if t.k == k && int(t.plen) == plen {
			if x.exists(t.val) {
				return
			}
			if val == nil {
				x.setSlot(d, lvl, k, rsetEntry(dflt))
			} else {
				x.setSlot(d, lvl, k, tailEntry(&tail{k: k, plen: uint8(plen), val: val, dflt: dflt}))
			}
			return
		}
		// (kids of dense nodes never carry the fringe flag: dense locals
		// keep every fringe)
		if val == nil {
			return
		}
		// Two prefixes below this slot now: it gets a dense node.
		nd := &dnode{dflt: dflt, owner: x.id}
		x.setSlot(d, lvl, k, denseEntry(nd))
		x.setDense(lvl+1, t.k, int(t.plen), t.val)
		x.setDense(lvl+1, k, plen, val)
	default:
		if val != nil {
			x.setSlot(d, lvl, k, tailEntry(&tail{k: k, plen: uint8(plen), val: val, dflt: dflt}))
		}
	}
}

// setDenseLocal changes a local prefix of a dense node: its locals and
// every slot the prefix covers change together, so the node is copied.
func (x *trieTxn) setDenseLocal(lvl int, k key, plen int, val *rset) {
	d := x.ownDense(lvl, k)
	l := plen - lvl*8
	o := k.byteAt(lvl)
	lo, hi := int(o), int(o)
	if l == 8 {
		d.setFringe(o, val)
	} else {
		d.loc = d.loc.withShort(x.id, artIndex(l, o), val)
		lo = int(o) &^ (1<<(8-l) - 1)
		hi = lo + 1<<(8-l) - 1
	}
	for s := lo; s <= hi; s++ {
		b := d.best(uint8(s))
		if e := d.slots[s]; isKid(e) {
			d.slots[s] = x.withDflt(e, lvl+1, k.withByte(lvl, uint8(s)), b, false)
		} else {
			d.slots[s] = rsetEntry(b)
		}
	}
	if val == nil && lvl > 0 {
		x.pruneDense(lvl, k)
	}
}

// pruneDense removes the dense node at level lvl on k's path if it holds
// nothing any more.
func (x *trieTxn) pruneDense(lvl int, k key) {
	parent := x.dense(lvl-1, k)
	e := x.slot(parent, lvl-1, k)
	if tagOf(e) != tagDense {
		return
	}
	d := asDense(e)
	if !d.empty() {
		return
	}
	for s := 0; s < 256; s++ {
		if isKid(x.slot(d, lvl, k.withByte(lvl, uint8(s)))) {
			return
		}
	}
	// The node goes away: forget stores queued for its slots.
	for p := range x.dirty {
		if posLevel(p) >= lvl && under(p, lvl, k) {
			delete(x.dirty, p)
		}
	}
	x.setSlot(parent, lvl-1, k, rsetEntry(parent.best(k.byteAt(lvl-1))))
}

// withDflt returns kid e (whose node would sit at level lvl, on path k) with
// its default set to dflt (and fringe flag), copying it unless the
// transaction made it.
func (x *trieTxn) withDflt(e unsafe.Pointer, lvl int, k key, dflt *rset, fringe bool) unsafe.Pointer {
	switch tagOf(e) {
	case tagTail:
		t := asTail(e)
		if t.dflt == dflt && t.fringe == fringe {
			return e
		}
		c := *t
		c.dflt, c.fringe = dflt, fringe
		return tailEntry(&c)
	case tagNode:
		n := asNode(e)
		if n.dflt == dflt && (n.flags&dfltFringe != 0) == fringe {
			return e
		}
		n = x.ownNode(n, 0)
		n.setDflt(dflt, fringe)
		return nodeEntry(n)
	case tagDense:
		d := asDense(e)
		if d.dflt == dflt {
			return e
		}
		if !x.owns(d) {
			d = x.copyDense(d, lvl, k)
		}
		d.dflt = dflt
		return denseEntry(d)
	}
	return e
}

func (n *cnode) setDflt(dflt *rset, fringe bool) {
	n.dflt = dflt
	if fringe {
		n.flags |= dfltFringe
	} else {
		n.flags &^= dfltFringe
	}
}

// ownNode returns n if the transaction made it and it has room for extra
// more entries, else a copy of it (owned, with that room).
func (x *trieTxn) ownNode(n *cnode, extra int) *cnode {
	c := n.cold()
	cnt := n.entries()
	if c.owner == x.id && cnt+extra <= capOf[n.cls] {
		return n
	}
	want := cnt + extra
	if c.owner == x.id {
		want += want / 2 // growing in place: leave room for more
	}
	return x.cloneNode(n, classFor(want))
}

// cloneNode copies n into a new node of class cls (room for n's entries),
// owned by the transaction.
func (x *trieTxn) cloneNode(n *cnode, cls uint8) *cnode {
	m := allocNode(cls)
	m.cum, m.flags, m.vec, m.dflt = n.cum, n.flags, n.vec, n.dflt
	for i := 0; i < n.entries(); i++ {
		*m.entryPtr(i) = n.entryAt(i)
	}
	mc := m.cold()
	mc.owner = x.id
	mc.loc = n.cold().loc
	return m
}

func (n *cnode) setLoc(l *locals) {
	n.cold().loc = l
	if l != nil {
		n.flags |= hasLocals
	} else {
		n.flags &^= hasLocals
	}
}

// setIn changes the subtree of one slot. e is the slot's current entry
// (a kid whose node sits at depth, or no kid); dflt is the parent's best
// local for the slot, fringe whether that is the parent's fringe. It
// returns the new kid entry, nil if no kid remains.
func (x *trieTxn) setIn(e unsafe.Pointer, depth int, k key, plen int, val, dflt *rset, fringe bool) unsafe.Pointer {
	switch tagOf(e) {
	case tagTail:
		t := asTail(e)
		if t.k == k && int(t.plen) == plen {
			if x.exists(t.val) {
				return e
			}
			if val == nil {
				return nil
			}
			c := *t
			c.val = val
			return tailEntry(&c)
		}
		if val == nil {
			return e
		}
		n := allocNode(classFor(2))
		n.setDflt(dflt, fringe)
		n.cold().owner = x.id
		n = asNode(x.nodeSet(n, depth, t.k, int(t.plen), t.val, false))
		return x.nodeSet(n, depth, k, plen, val, true)
	case tagNode:
		return x.nodeSet(asNode(e), depth, k, plen, val, true)
	}
	if val == nil {
		return nil
	}
	return tailEntry(&tail{k: k, plen: uint8(plen), val: val, dflt: dflt, fringe: fringe})
}

// nodeSet changes (k, plen) in node n at depth and returns n's new entry:
// n itself (or its copy), or, when collapse is set and one prefix or none
// is left, a tail or nil.
func (x *trieTxn) nodeSet(n *cnode, depth int, k key, plen int, val *rset, collapse bool) unsafe.Pointer {
	o := k.byteAt(depth / 8)
	l := plen - depth
	if l > 8 {
		return x.nodeSetDeeper(n, depth, k, plen, val, collapse)
	}
	if l == 8 && x.exists(n.fringeAt(o)) || l < 8 && x.exists(n.cold().loc.shortAt(artIndex(l, o))) {
		return nodeEntry(n)
	}
	n = x.ownNode(n, 0)
	e := n.slotEntry(o)
	switch {
	case l == 8:
		switch {
		case isKid(e):
			// the fringe hides behind the kid, as the kid's default
			if val != nil {
				*n.entryPtr(n.vec.rank(o)) = x.withDflt(e, 0, k, val, true)
			} else {
				*n.entryPtr(n.vec.rank(o)) = x.withDflt(e, 0, k, n.cold().loc.shortBest(o), false)
			}
		case val != nil:
			n = x.putEntry(n, o, rsetEntry(val))
		case e != nil:
			n.removeEntry(o)
		}
	case l < 8:
		loc := n.cold().loc.withShort(x.id, artIndex(l, o), val)
		n.setLoc(loc)
		lo := int(o) &^ (1<<(8-l) - 1)
		for s := lo; s < lo+1<<(8-l); s++ {
			if kid := n.slotEntry(uint8(s)); isKid(kid) && !kidFringe(kid) {
				*n.entryPtr(n.vec.rank(uint8(s))) = x.withDflt(kid, 0, k, loc.shortBest(uint8(s)), false)
			}
		}
	default:
		panic("fib6: nodeSetDeeper left a change")
	}
	if collapse {
		return x.collapse(n, depth, k)
	}
	return nodeEntry(n)
}

// nodeSetDeeper is nodeSet for a prefix below one of n's slots. It
// changes the kid first and touches n only if it must: not at all when the
// kid is unchanged, by a deferred store when only the entry's pointer
// changes (see deferStore).
func (x *trieTxn) nodeSetDeeper(n *cnode, depth int, k key, plen int, val *rset, collapse bool) unsafe.Pointer {
	o := k.byteAt(depth / 8)
	e := n.slotEntry(o)
	var kid unsafe.Pointer
	fringe := tagOf(e) == tagRset
	if isKid(e) {
		kid = e
		fringe = kidFringe(e)
	}
	nk := x.setIn(kid, depth+8, k, plen, val, n.localBest(o), fringe)
	if nk == kid {
		return nodeEntry(n)
	}
	// what the slot's entry becomes
	ne := nk
	if nk == nil && fringe {
		ne = rsetEntry(kidDflt(kid)) // the fringe shows again
	}
	if ne != nil && e != nil && x.deferStore(n, o, ne, k) {
		return nodeEntry(n)
	}
	n = x.ownNode(n, 0)
	if ne != nil {
		n = x.putEntry(n, o, ne)
	} else {
		n.removeEntry(o)
	}
	if collapse {
		return x.collapse(n, depth, k)
	}
	return nodeEntry(n)
}

// putEntry sets slot o's entry, inserting it if the slot had none.
func (x *trieTxn) putEntry(n *cnode, o uint8, e unsafe.Pointer) *cnode {
	if n.vec.has(o) {
		*n.entryPtr(n.vec.rank(o)) = e
		return n
	}
	n = x.ownNode(n, 1)
	cnt := n.entries()
	r := n.vec.rank(o)
	for i := cnt; i > r; i-- {
		*n.entryPtr(i) = n.entryAt(i - 1)
	}
	*n.entryPtr(r) = e
	n.vec.set(o)
	n.fixCum()
	return n
}

func (n *cnode) removeEntry(o uint8) {
	cnt := n.entries()
	r := n.vec.rank(o)
	for i := r; i < cnt-1; i++ {
		*n.entryPtr(i) = n.entryAt(i + 1)
	}
	*n.entryPtr(cnt - 1) = nil
	n.vec.clear(o)
	n.fixCum()
}

// collapse turns a node left with a single prefix into a tail, and an
// empty one into nil, so that a lone prefix never costs a chain of nodes.
func (x *trieTxn) collapse(n *cnode, depth int, k key) unsafe.Pointer {
	loc := n.cold().loc
	total := loc.len()
	cnt := n.entries()
	var single unsafe.Pointer
	for i := 0; i < cnt && total <= 1; i++ {
		e := n.entryAt(i)
		switch {
		case tagOf(e) == tagNode:
			total += 2 // a node always holds two prefixes or more
		case kidFringe(e):
			total += 2 // the tail and the fringe hidden behind it
		default:
			total++
			single = e
		}
	}
	switch {
	case total == 0:
		return nil
	case total > 1:
		return nodeEntry(n)
	}
	base := k.masked(depth)
	bi := depth / 8
	fringe := n.flags&dfltFringe != 0
	switch {
	case single == nil: // one short local
		idx, val := loc.first()
		ln := bits.Len8(idx) - 1
		pk := base.withByte(bi, uint8(int(idx)&^(1<<ln)<<(8-ln)))
		return tailEntry(&tail{k: pk, plen: uint8(depth + ln), val: val, dflt: n.dflt, fringe: fringe})
	case tagOf(single) == tagTail:
		t := *asTail(single)
		t.dflt, t.fringe = n.dflt, fringe
		return tailEntry(&t)
	default: // one visible fringe
		if s, ok := n.vec.first(); ok {
			return tailEntry(&tail{k: base.withByte(bi, s), plen: uint8(depth + 8), val: asRset(single), dflt: n.dflt, fringe: fringe})
		}
	}
	panic("fib6: collapse found no prefix")
}
