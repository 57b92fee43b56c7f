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
	// What every lookup reads, on a cache line of its own: a writer's
	// commit changes the fields below, and would otherwise take the line
	// from the readers' caches at every publish.
	id   uint32
	trie *trie
	_    [lineSize - 16]byte

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

// GCPercent is the collector's setting the daemon runs its tables with
// (cmd/urouter sets it unless GOGC is given). A full table is a few MB
// of long-lived nodes and a batch load allocates them in a burst, and a
// writer's replaced nodes are garbage the collector must find by marking
// all the live ones: collecting at 5x the live heap rather than 2x keeps
// the collector from doubling the cost of a load, and from taking a
// reader's CPU at every few thousand changes. The packet path allocates
// nothing either way.
const GCPercent = 400

// Watcher hears every committed change of every table of a registry.
type Watcher func(t *Table, changes *Changes)

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
// address) counts as none. choice, if not nil, says for each whether the
// prefix found has routes a lookup that prefers a link may choose between
// (Get with a Score may find another).
func (t *Table) LookupKeys(dsts [][16]byte, srcs [][16]byte, out []*Attrs, choice []bool) {
	var sets [batchWidth]*rset
	var uniq [batchWidth][16]byte // the batch's runs of one destination, each once
	var run [batchWidth]uint8     // key j's run
	for base := 0; base < len(dsts); base += batchWidth {
		n := min(batchWidth, len(dsts)-base)
		// a flow's packets come in runs to one destination: the trie is
		// walked once a run, not once a packet
		m := 0
		for j := 0; j < n; j++ {
			if j == 0 || dsts[base+j] != dsts[base+j-1] {
				uniq[m] = dsts[base+j]
				m++
			}
			run[j] = uint8(m - 1)
		}
		t.trie.lookupKeys(uniq[:m], sets[:m])
		for j := 0; j < n; j++ {
			r := sets[run[j]]
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
			if choice != nil {
				choice[base+j] = r != nil && r.choice
			}
		}
	}
}

// Get is the slow, explaining lookup: it returns the prefix that matched
// and its route. score, if not nil, chooses among a prefix's routes as
// Linux's rt6_select does for a lookup with an interface (choose says
// how), and a prefix with none it takes gives way to shorter ones, as
// fib6_backtrack does.
func (t *Table) Get(dst, src netip.Addr, score Score) (netip.Prefix, *Attrs, bool) {
	a := dst.As16()
	var buf [16]match
	return get(t.trie.matches(keyOf(&a), buf[:0]), src, score)
}

func get(ms []match, src netip.Addr, score Score) (netip.Prefix, *Attrs, bool) {
	back := false // backtracking: a prefix the lookup reached gave nothing
	for _, m := range ms {
		if score == nil && !m.r.hasSrc && m.r.best != nil {
			return m.p, m.r.best, true
		}
		r, reached := pick(m, src, score, back)
		if r != nil {
			return m.p, &r.Attrs, true
		}
		back = back || reached
	}
	return netip.Prefix{}, nil, false
}

// Score ranks a route for a lookup, as Linux's rt6_score_route: higher is
// better, and a negative score passes the route over.
type Score func(*Attrs) int

// pick chooses among the routes of one matching prefix, and reports
// whether the lookup reached it. A prefix with source-specific routes
// (Linux's subtree) is reached by a lookup from a source one of their
// source prefixes covers: it tries those routes, the longest source
// prefix first, then the plain ones. From any other source (or none) it
// hides its plain routes (Linux 6.18 behaves so; see DESIGN.md), except
// for ::/0, and for a lookup that backtracks to it from a longer prefix
// that gave nothing (a strict one: fib6_backtrack comes up from the child
// and through the subtree to the prefix's own routes).
func pick(m match, src netip.Addr, score Score, back bool) (*attrsRef, bool) {
	if !m.r.hasSrc {
		return choose(m.r.routes, netip.Prefix{}, score), true
	}
	reached := back || m.p.Bits() == 0
	if src.IsValid() {
		done := 129 // the source prefixes tried are shorter than this
		for {
			var longest netip.Prefix
			for _, a := range m.r.routes {
				if a.Src.IsValid() && a.Src.Bits() < done && a.Src.Contains(src) && a.Src.Bits() >= longest.Bits() {
					longest = a.Src
				}
			}
			if !longest.IsValid() {
				break
			}
			if r := choose(m.r.routes, longest, score); r != nil {
				return r, true
			}
			reached, done = true, longest.Bits()
		}
	}
	if !reached {
		return nil, false
	}
	return choose(m.r.routes, netip.Prefix{}, score), true
}

// choose is Linux's find_rr_leaf over the routes from source prefix src
// (in metric order): without score, the first; with it, the first of the
// highest score among those of the lowest metric, or if none of them
// scores, the first of the highest score among all the others.
func choose(routes []*attrsRef, src netip.Prefix, score Score) *attrsRef {
	var best *attrsRef
	top, metric, first := -1, uint32(0), true
	for _, a := range routes {
		if a.Src != src {
			continue
		}
		if score == nil {
			return a
		}
		if first {
			metric, first = a.Metric, false
		} else if a.Metric != metric && best != nil {
			return best
		}
		if s := score(&a.Attrs); s > top {
			best, top = a, s
		}
	}
	return best
}

// Hidden reports the longest prefix matching dst that a lookup from src
// passes over because its routes are all for other sources (Linux's
// source subtree without a match), if there is one before the route the
// lookup finds.
func (t *Table) Hidden(dst, src netip.Addr) (netip.Prefix, bool) {
	a := dst.As16()
	var buf [16]match
	for _, m := range t.trie.matches(keyOf(&a), buf[:0]) {
		if r, _ := pick(m, src, nil, false); r != nil {
			return netip.Prefix{}, false
		}
		if m.r.hasSrc {
			return m.p, true
		}
	}
	return netip.Prefix{}, false
}
