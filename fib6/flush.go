package fib6

import (
	"iter"
	"net/netip"
	"slices"
)

// Emptying a table in one publish, and what its watchers hear of a commit.

// Changes are what one commit did, as its table's watcher hears it: the
// routes it added and deleted, one by one, in order; after them, for a
// commit that emptied the table (flushAll), every route of the version it
// emptied, deleted, in prefix order. Those are not listed: they are read
// from that version, which stays as it was, when the watcher asks, so a
// flush of a full table costs its writer one publish whether or not a
// monitor listens, and the monitor, not the flush, pays for the telling.
type Changes struct {
	table uint32
	list  []Change
	gone  *dnode // the root of the version emptied; nil if none
	goneN int    // the routes it held
}

// Len is the number of routes added and deleted.
func (c *Changes) Len() int { return len(c.list) + c.goneN }

// All yields every change in the order it was made.
func (c *Changes) All() iter.Seq[Change] {
	return func(yield func(Change) bool) {
		for _, ch := range c.list {
			if !yield(ch) {
				return
			}
		}
		if c.gone == nil {
			return
		}
		walkFrom(c.gone, netip.PrefixFrom(netip.IPv6Unspecified(), 0), func(p netip.Prefix, r *rset) bool {
			for _, a := range r.routes {
				if !yield(Change{Op: Deleted, Table: c.table, Route: Route{Dst: p, Attrs: a.Attrs}}) {
					return false
				}
			}
			return true
		})
	}
}

// told is what the commit of x tells the table's watcher, nil for
// nothing: a copy of its changes (the transaction's buffer is reused) and
// the version it emptied, if it did.
func (x *Txn) told() *Changes {
	if len(x.changes) == 0 && x.gone == nil {
		return nil
	}
	c := &Changes{table: x.t.id, gone: x.gone, goneN: x.goneN}
	if len(x.changes) > 0 {
		c.list = slices.Clone(x.changes)
	}
	x.gone, x.goneN = nil, 0
	return c
}

// flushAll deletes every route of the table in one transaction that
// publishes an empty trie: the deleted routes are neither looked up nor
// copied. What the table keeps about its routes (their shared attributes
// and groups, expiry times, size) goes with them, as the last delete of
// each would have taken it; the watcher hears of every route through the
// version emptied (see Changes). It returns how many routes there were.
func (t *Table) flushAll() int {
	x := t.Begin()
	defer x.Commit()
	n := int(t.size.Load())
	if n == 0 {
		return 0
	}
	old := x.tx.root // a fresh transaction: the published root
	x.tx.root = &dnode{owner: x.tx.id}
	clear(x.tx.dirty)
	x.tx.pending.n = nil
	x.tx.ops++
	x.n += n
	t.intern = make(map[Attrs]*attrsRef)
	t.groups = make(map[string]*groupRef)
	t.expiry = make(map[netip.Prefix]int)
	t.last = nil
	t.size.Store(0)
	if x.watched {
		x.gone, x.goneN = old, n
	}
	return n
}
