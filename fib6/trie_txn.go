package fib6

import (
	"unsafe"
)

// trieTxn is a writer's view of a trie: the published trie plus what the
// transaction changed. Nodes it made carry its id and are changed in place;
// published ones are copied once, on first change. Stores into published
// dense slots wait in dirty until commit, which publishes everything with a
// single atomic store (see commit).
type trieTxn struct {
	t     *trie
	id    uint64
	root  *dnode                    // the published root, or the transaction's copy (owns(root))
	dirty map[uint32]unsafe.Pointer // position (see pos) -> new slot entry
	ops   int
	// ifAbsent makes set a no-op where (k, plen) exists already, leaving
	// what is there in found: insert's single walk.
	ifAbsent bool
	found    *rset
	// pending is the first change's store into a published compressed
	// node, deferred: when the transaction makes no other change, commit
	// does just this store, and nothing above the node is copied.
	pending pendingStore
	bulk    bulkLoad
	// helper starts work on a goroutine of its own, for a build split in
	// two (settleBuf); nil: a plain goroutine
	helper func(work func())
}

// pendingStore is a deferred store of entry e into entry index entry of
// published node n (see trieTxn.pending); n nil means none.
type pendingStore struct {
	n     *cnode
	entry int
	e     unsafe.Pointer
	k     key // the changed prefix, whose path leads to n
}

// bulkOps is the number of changes after which a transaction copies the
// dense nodes on its path rather than queueing slot stores: a large batch
// then pays one 2 KiB copy per dense node instead of a map lookup per level.
const bulkOps = 64

// pos names a slot of a dense node: level 0 is the root's slot k[0], level 1
// the depth-8 node's slot k[1], level 2 the depth-16 node's slot k[2].
func pos(lvl int, k key) uint32 {
	p := uint32(lvl)<<24 | uint32(k.byteAt(0))<<16
	if lvl >= 1 {
		p |= uint32(k.byteAt(1)) << 8
	}
	if lvl >= 2 {
		p |= uint32(k.byteAt(2))
	}
	return p
}

func posLevel(p uint32) int { return int(p >> 24) }

func posKey(p uint32) key {
	return key{hi: uint64(p>>16&0xff)<<56 | uint64(p>>8&0xff)<<48 | uint64(p&0xff)<<40}
}

// under reports whether position p is a slot in the subtree of the dense
// node at level lvl on k's path.
func under(p uint32, lvl int, k key) bool {
	if posLevel(p) < lvl {
		return false
	}
	pk := posKey(p)
	for i := 0; i < lvl; i++ {
		if pk.byteAt(i) != k.byteAt(i) {
			return false
		}
	}
	return true
}

func (t *trie) begin(x *trieTxn, id uint64) {
	x.t = t
	x.id = id
	x.root = t.root.Load()
	x.ops = 0
	x.pending.n = nil
	x.bulk = bulkLoad{}
	x.helper = nil
	if x.dirty == nil {
		x.dirty = make(map[uint32]unsafe.Pointer)
	}
	clear(x.dirty)
}

func (x *trieTxn) owns(d *dnode) bool { return d.owner == x.id }

// slot reads the view's entry of dense node d (at level lvl) for k.
func (x *trieTxn) slot(d *dnode, lvl int, k key) unsafe.Pointer {
	s := k.byteAt(lvl)
	if x.owns(d) {
		return d.slots[s]
	}
	if e, ok := x.dirty[pos(lvl, k)]; ok {
		return e
	}
	return d.slot(s)
}

func (x *trieTxn) setSlot(d *dnode, lvl int, k key, e unsafe.Pointer) {
	if x.owns(d) {
		d.slots[k.byteAt(lvl)] = e
	} else {
		x.dirty[pos(lvl, k)] = e
	}
}

// dense returns the view's dense node at level lvl on k's path.
func (x *trieTxn) dense(lvl int, k key) *dnode {
	d := x.root
	for i := 0; i < lvl; i++ {
		d = asDense(x.slot(d, i, k))
	}
	return d
}

// ownDense returns the dense node at level lvl on k's path, copying it
// into the transaction first if it is published.
func (x *trieTxn) ownDense(lvl int, k key) *dnode {
	if lvl == 0 {
		if !x.owns(x.root) {
			x.root = x.copyDense(x.root, 0, k)
		}
		return x.root
	}
	parent := x.dense(lvl-1, k)
	d := asDense(x.slot(parent, lvl-1, k))
	if x.owns(d) {
		return d
	}
	c := x.copyDense(d, lvl, k)
	x.setSlot(parent, lvl-1, k, denseEntry(c))
	return c
}

// copyDense copies d, the dense node at level lvl on k's path, taking in
// the stores queued for its slots.
func (x *trieTxn) copyDense(d *dnode, lvl int, k key) *dnode {
	c := &dnode{dflt: d.dflt, loc: d.loc, fringe: d.fringe, fval: d.fval, owner: x.id}
	for i := range c.slots {
		c.slots[i] = d.slot(uint8(i))
	}
	for p, e := range x.dirty {
		if posLevel(p) == lvl && under(p, lvl, k) {
			c.slots[posKey(p).byteAt(lvl)] = e
			delete(x.dirty, p)
		}
	}
	return c
}

// get returns the route set stored for exactly (k, plen) in the view.
func (x *trieTxn) get(k key, plen int) *rset {
	if x.bulk.on {
		if r, ok := x.bulkGet(k, plen); ok {
			return r
		}
	}
	x.materialize()
	d := x.root
	for lvl := 0; lvl < 3; lvl++ {
		depth := lvl * 8
		if plen <= depth+8 {
			return denseLocal(d, k, plen-depth, lvl)
		}
		e := x.slot(d, lvl, k)
		switch tagOf(e) {
		case tagDense:
			d = asDense(e)
			continue
		case tagNode:
			return nodeGet(asNode(e), depth+8, k, plen)
		case tagTail:
			if t := asTail(e); t.k == k && int(t.plen) == plen {
				return t.val
			}
		}
		return nil
	}
	return nil
}

func denseLocal(d *dnode, k key, l, lvl int) *rset {
	o := k.byteAt(lvl)
	if l == 8 {
		return d.fringeAt(o)
	}
	return d.loc.shortAt(artIndex(l, o))
}

func nodeGet(n *cnode, depth int, k key, plen int) *rset {
	for {
		o := k.byteAt(depth / 8)
		l := plen - depth
		e := n.slotEntry(o)
		switch {
		case l < 8:
			return n.cold().loc.shortAt(artIndex(l, o))
		case l == 8:
			return n.fringeAt(o)
		}
		switch tagOf(e) {
		case tagNode:
			n = asNode(e)
			depth += 8
			continue
		case tagTail:
			if t := asTail(e); t.k == k && int(t.plen) == plen {
				return t.val
			}
		}
		return nil
	}
}

// set stores val for exactly (k, plen); nil deletes. k must be masked.
func (x *trieTxn) set(k key, plen int, val *rset) {
	if x.bulk.on && x.bulkSet(k, plen, val) {
		return
	}
	x.materialize()
	x.ops++
	x.setDense(0, k, plen, val)
}

// insert stores val for (k, plen) unless something is stored there; then
// it changes nothing and returns that.
func (x *trieTxn) insert(k key, plen int, val *rset) *rset {
	if x.bulk.on {
		if r, ok := x.bulkInsert(k, plen, val); ok {
			return r
		}
	}
	x.ifAbsent, x.found = true, nil
	x.set(k, plen, val)
	x.ifAbsent = false
	if x.found != nil {
		// The walk only looked: it is no change, and the change the
		// caller makes next must count as the transaction's first.
		x.ops--
	}
	return x.found
}

// exists reports, for insert, whether r is stored where set is about to
// store; it then keeps it and set changes nothing.
func (x *trieTxn) exists(r *rset) bool {
	if x.ifAbsent && r != nil {
		x.found = r
		return true
	}
	return false
}

// deferStore takes the store of kid entry e into published node n's slot
// o, for the change of prefix k, as the pending store, if this is the
// transaction's only change so far and the store cannot make n collapse.
func (x *trieTxn) deferStore(n *cnode, o uint8, e unsafe.Pointer, k key) bool {
	if x.ops != 1 || x.owns(x.root) || len(x.dirty) > 0 || x.pending.n != nil || n.cold().owner == x.id {
		return false
	}
	if n.entries() < 2 && n.cold().loc.len() == 0 &&
		tagOf(e) != tagNode && !(isKid(e) && kidFringe(e)) {
		return false // n would be left with one prefix: it must collapse
	}
	x.pending = pendingStore{n: n, entry: n.vec.rank(o), e: e, k: k}
	return true
}

// materialize turns the pending store into ordinary copies, because the
// transaction goes on.
func (x *trieTxn) materialize() {
	p := x.pending
	if p.n == nil {
		return
	}
	x.pending.n = nil
	d := x.dense(2, p.k)
	x.setSlot(d, 2, p.k, x.copyPath(x.slot(d, 2, p.k), 24, p))
}

func (x *trieTxn) copyPath(e unsafe.Pointer, depth int, p pendingStore) unsafe.Pointer {
	n := asNode(e)
	if n == p.n {
		n = x.ownNode(n, 0)
		*n.entryPtr(p.entry) = p.e
		return nodeEntry(n)
	}
	o := p.k.byteAt(depth / 8)
	nk := x.copyPath(n.slotEntry(o), depth+8, p)
	n = x.ownNode(n, 0)
	*n.entryPtr(n.vec.rank(o)) = nk
	return nodeEntry(n)
}

// entry is compressed node n's entry for slot o in the view: the pending
// store's entry if it is deferred into that slot, else n's own.
func (x *trieTxn) entry(n *cnode, o uint8) unsafe.Pointer {
	if p := &x.pending; p.n == n && n.vec.has(o) && n.vec.rank(o) == p.entry {
		return p.e
	}
	return n.slotEntry(o)
}
