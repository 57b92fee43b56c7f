package fib6

import (
	"net/netip"
	"sync"
	"sync/atomic"
)

// A table and its lookups: the dataplane's batch, the single lookup, and
// the explaining one behind route get.

// Table is one routing table. Lookups never lock and never allocate: they
// load the published trie. Writers take the table's own mutex, so writers
// to different tables run in parallel.
type Table struct {
	id   uint32
	trie *trie
	gen  atomic.Uint64
	size atomic.Int64 // routes

	mu      sync.Mutex // held by the open transaction
	txn     Txn
	lastTxn uint64
	intern  map[Attrs]*attrsRef
	last    *attrsRef
	groups  map[string]*groupRef // multipath groups by their members
	keyBuf  []byte
	expiry  map[netip.Prefix]int // destinations with expiring routes -> how many
	// expiring is len(expiry) > 0 as of the last commit, for housekeeping
	// that looks without the lock
	expiring  atomic.Bool
	watch     *atomic.Pointer[Watcher]
	allGen    *atomic.Uint64 // the registry's count of publishes, nil outside one
	publishes publishTimes
}

// Watcher hears every committed change of every table of a registry.
type Watcher func(t *Table, changes []Change)

func newTable(id uint32, watch *atomic.Pointer[Watcher]) *Table {
	if watch == nil {
		watch = new(atomic.Pointer[Watcher])
	}
	return &Table{
		id:     id,
		trie:   newTrie(),
		intern: make(map[Attrs]*attrsRef),
		groups: make(map[string]*groupRef),
		expiry: make(map[netip.Prefix]int),
		watch:  watch,
	}
}

// ID is the table's number.
func (t *Table) ID() uint32 { return t.id }

// Generation counts the table's publishes; a cache built from a lookup is
// valid while the generation it saw is current.
func (t *Table) Generation() uint64 { return t.gen.Load() }

// Len is the number of routes in the table.
func (t *Table) Len() int { return int(t.size.Load()) }

// Lookup returns the route a packet to dst from src takes: the longest
// matching destination, then, where source-specific routes exist, the
// longest matching source (Linux's IPv6 subtrees). nil means no route.
func (t *Table) Lookup(dst, src netip.Addr) *Attrs {
	a := dst.As16()
	r := t.trie.lookup(&a)
	if r == nil {
		return nil
	}
	if !r.hasSrc {
		return r.best
	}
	if _, a, ok := t.Get(dst, src, nil); ok {
		return a
	}
	return nil
}

// LookupKeys looks up the destinations of a batch of packets, as the
// bytes of their headers (no conversion per address), interleaving their
// memory accesses; out[i] is the route Lookup(dsts[i], srcs[i]) finds
// (nil for none). srcs may be nil; a source of all zeros (the unspecified
// address) counts as none.
func (t *Table) LookupKeys(dsts [][16]byte, srcs [][16]byte, out []*Attrs) {
	var sets [batchWidth]*rset
	for base := 0; base < len(dsts); base += batchWidth {
		n := min(batchWidth, len(dsts)-base)
		t.trie.lookupKeys(dsts[base:base+n], sets[:n])
		for j := 0; j < n; j++ {
			r := sets[j]
			switch {
			case r == nil:
				out[base+j] = nil
			case !r.hasSrc:
				out[base+j] = r.best
			default: // Lookup's slow path: the set found has source routes
				var src netip.Addr
				if srcs != nil && srcs[base+j] != ([16]byte{}) {
					src = netip.AddrFrom16(srcs[base+j])
				}
				_, a, _ := t.Get(netip.AddrFrom16(dsts[base+j]), src, nil)
				out[base+j] = a
			}
		}
	}
}

// Get is the slow, explaining lookup: it returns the prefix that matched
// and its route. accept, if not nil, skips routes it refuses (and the
// lookup goes on to shorter prefixes), as a lookup with oif skips reject
// routes.
func (t *Table) Get(dst, src netip.Addr, accept func(*Attrs) bool) (netip.Prefix, *Attrs, bool) {
	a := dst.As16()
	var buf [16]match
	for _, m := range t.trie.matches(keyOf(&a), buf[:0]) {
		if accept == nil && !m.r.hasSrc && m.r.best != nil {
			return m.p, m.r.best, true
		}
		if r, ok := pick(m, src, accept); ok {
			return m.p, &r.Attrs, true
		}
	}
	return netip.Prefix{}, nil, false
}

// pick chooses among the routes of one matching prefix. A prefix with
// source-specific routes hides its plain routes from every source its
// source prefixes do not cover, except ::/0, which falls back to them
// (Linux 6.18 behaves so; see DESIGN.md).
func pick(m match, src netip.Addr, accept func(*Attrs) bool) (*attrsRef, bool) {
	ok := func(a *attrsRef) bool { return accept == nil || accept(&a.Attrs) }
	if !m.r.hasSrc {
		for _, a := range m.r.routes {
			if ok(a) {
				return a, true
			}
		}
		return nil, false
	}
	if src.IsValid() {
		var best *attrsRef
		for _, a := range m.r.routes {
			if a.Src.IsValid() && a.Src.Contains(src) && ok(a) &&
				(best == nil || a.Src.Bits() > best.Src.Bits()) {
				best = a
			}
		}
		if best != nil {
			return best, true
		}
	}
	if m.p.Bits() == 0 {
		for _, a := range m.r.routes {
			if !a.Src.IsValid() && ok(a) {
				return a, true
			}
		}
	}
	return nil, false
}

// Hidden reports the longest prefix matching dst that a lookup from src
// passes over because its routes are all for other sources (Linux's
// source subtree without a match), if there is one before the route the
// lookup finds.
func (t *Table) Hidden(dst, src netip.Addr) (netip.Prefix, bool) {
	a := dst.As16()
	var buf [16]match
	for _, m := range t.trie.matches(keyOf(&a), buf[:0]) {
		if _, ok := pick(m, src, nil); ok {
			return netip.Prefix{}, false
		}
		if m.r.hasSrc {
			return m.p, true
		}
	}
	return netip.Prefix{}, false
}
