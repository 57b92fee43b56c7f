package fib6

import (
	"slices"
	"sync/atomic"
	"unsafe"
)

// Publishing a transaction, and trimming what a large one grew.

// commit publishes the transaction with one atomic store: into the one
// dense slot it changed, or, when it changed several, into the slot of the
// lowest dense node above all of them (copying the dense nodes in between),
// or of the root.
func (x *trieTxn) commit() {
	x.settle()
	if x.ops >= compactOps && x.ops != x.bulk.builtOps {
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
