package fib6

import (
	"net/netip"
	"slices"
	"unsafe"
)

// Lookup returns the route a packet to dst without a source takes in the
// table as the open transaction sees it, its own uncommitted changes
// included: what Table.Lookup(dst, netip.Addr{}) will return once the
// transaction commits (for ECMP, the best path, as Lookup does). It changes
// nothing, so a transaction of one change keeps its in-place store.
func (x *Txn) Lookup(dst netip.Addr) *Attrs {
	a := dst.As16()
	var buf [16]match
	for _, m := range x.tx.matches(keyOf(&a), buf[:0]) {
		if r, ok := pick(m, netip.Addr{}, nil); ok {
			return &r.Attrs
		}
	}
	return nil
}

// matches is trie.matches on the transaction's view: dense slots through
// slot (the transaction's copies and queued stores), compressed entries
// through entry (the pending store). It appends every prefix containing
// a, longest first, and changes nothing.
func (x *trieTxn) matches(a key, out []match) []match {
	start := len(out)
	add := func(plen int, r *rset) {
		if r != nil {
			out = append(out, match{a.masked(plen).prefix(plen), r})
		}
	}
	shorts := func(l *locals, depth int, o uint8, root bool) {
		for n := 0; n < 8; n++ {
			if n > 0 || root {
				add(depth+n, l.shortAt(artIndex(n, o)))
			}
		}
	}
	e := denseEntry(x.root)
	for depth := 0; depth < 128; depth += 8 {
		o := a.byteAt(depth / 8)
		var kid unsafe.Pointer
		switch tagOf(e) {
		case tagDense:
			d := asDense(e)
			shorts(d.loc, depth, o, depth == 0)
			add(depth+8, d.fringeAt(o))
			kid = x.slot(d, depth/8, a)
		case tagNode:
			n := asNode(e)
			shorts(n.cold().loc, depth, o, false)
			kid = x.entry(n, o)
			if r := entryRset(kid); r != nil {
				add(depth+8, r) // a visible fringe
			} else if isKid(kid) && kidFringe(kid) {
				add(depth+8, kidDflt(kid)) // the fringe hidden behind the kid
			}
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

// entry is compressed node n's entry for slot o in the view: the pending
// store's entry if it is deferred into that slot, else n's own.
func (x *trieTxn) entry(n *cnode, o uint8) unsafe.Pointer {
	if p := &x.pending; p.n == n && n.vec.has(o) && n.vec.rank(o) == p.entry {
		return p.e
	}
	return n.slotEntry(o)
}
