package fib6

import (
	"math/bits"
	"slices"
	"sync/atomic"
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
	x.materialize()
	x.ops++
	x.setDense(0, k, plen, val)
}

// insert stores val for (k, plen) unless something is stored there; then
// it changes nothing and returns that.
func (x *trieTxn) insert(k key, plen int, val *rset) *rset {
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

// commit publishes the transaction with one atomic store: into the one
// dense slot it changed, or, when it changed several, into the slot of the
// lowest dense node above all of them (copying the dense nodes in between),
// or of the root.
func (x *trieTxn) commit() {
	if x.ops >= compactOps {
		x.compactDense(x.root, 0, key{})
	}
	if !x.owns(x.root) {
		for lvl := 2; lvl >= 1 && len(x.dirty) > 1; lvl-- {
			x.foldLevel(lvl)
		}
		if len(x.dirty) > 1 {
			x.ownDense(0, key{})
		}
	}
	if x.owns(x.root) {
		for lvl := 2; lvl >= 1; lvl-- {
			x.foldLevel(lvl)
		}
		x.t.root.Store(x.root)
		return
	}
	if p := x.pending; p.n != nil {
		atomic.StorePointer(p.n.entryPtr(p.entry), p.e)
		return
	}
	for p, e := range x.dirty {
		k := posKey(p)
		lvl := posLevel(p)
		d := x.t.root.Load()
		for i := 0; i < lvl; i++ {
			d = asDense(d.slot(k.byteAt(i)))
		}
		atomic.StorePointer(&d.slots[k.byteAt(lvl)], e)
	}
}

// compactOps is the size from which a transaction trims the room its
// nodes grew into before publishing: a bulk load then leaves no slack.
const compactOps = 1024

func (x *trieTxn) compactDense(d *dnode, lvl int, path key) {
	for s := 0; s < 256; s++ {
		k := path.withByte(lvl, uint8(s))
		e := x.slot(d, lvl, k)
		switch tagOf(e) {
		case tagDense:
			x.compactDense(asDense(e), lvl+1, k)
		case tagNode:
			if ne := x.compactNode(e); ne != e {
				x.setSlot(d, lvl, k, ne)
			}
		}
	}
}

// compactNode moves an owned node with spare room into the smallest class
// that fits, and does the same below it.
func (x *trieTxn) compactNode(e unsafe.Pointer) unsafe.Pointer {
	n := asNode(e)
	c := n.cold()
	if c.owner != x.id {
		return e // published: already tight
	}
	for i := 0; i < n.entries(); i++ {
		if k := n.entryAt(i); tagOf(k) == tagNode {
			*n.entryPtr(i) = x.compactNode(k)
		}
	}
	if l := c.loc; l != nil && l.owner == x.id && cap(l.vals) > len(l.vals) {
		l.vals = slices.Clip(l.vals)
	}
	if cls := classFor(n.entries()); cls < n.cls {
		return nodeEntry(x.cloneNode(n, cls)) // same owner (x) and locals
	}
	return e
}

// foldLevel copies every published dense node at level lvl that has
// queued slot stores, taking the stores in.
func (x *trieTxn) foldLevel(lvl int) {
	var ks []key
	for p := range x.dirty {
		if posLevel(p) == lvl {
			ks = append(ks, posKey(p))
		}
	}
	for _, k := range ks {
		if _, ok := x.dirty[pos(lvl, k)]; ok {
			x.ownDense(lvl, k)
		}
	}
}
