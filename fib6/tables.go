package fib6

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// The registry of tables, by id.

// Tables is the set of routing tables, by id. Readers find a table without
// a lock; creating one takes the registry's own mutex, which no route
// change ever needs.
type Tables struct {
	mu    sync.Mutex
	all   atomic.Pointer[map[uint32]*Table]
	low   [256]atomic.Pointer[Table] // tables 0-255 by index, found without hashing
	main  *Table
	local *Table
	watch atomic.Pointer[Watcher]
	_     [lineSize]byte // main and local are read per lookup; gen changes per publish
	gen   atomic.Uint64  // publishes of every table
}

// NewTables returns the registry with local (255), main (254) and default
// (253).
func NewTables() *Tables {
	ts := &Tables{}
	m := map[uint32]*Table{}
	for _, id := range []uint32{TableLocal, TableMain, TableDefault} {
		m[id] = newTable(id, &ts.watch)
		m[id].allGen = &ts.gen
	}
	ts.main, ts.local = m[TableMain], m[TableLocal]
	for id, t := range m {
		ts.low[id].Store(t)
	}
	ts.all.Store(&m)
	return ts
}

// Watch makes w hear every change committed from now on; nil stops it.
// Transactions record changes only while someone watches.
func (ts *Tables) Watch(w Watcher) {
	if w == nil {
		ts.watch.Store(nil)
	} else {
		ts.watch.Store(&w)
	}
}

// Generation counts the publishes of every table: what was derived from
// lookups in any of them holds while it is unchanged.
func (ts *Tables) Generation() uint64 { return ts.gen.Load() }

// Main and Local are the two tables every lookup starts with.
func (ts *Tables) Main() *Table  { return ts.main }
func (ts *Tables) Local() *Table { return ts.local }

// Get returns table id, or nil if it does not exist yet.
func (ts *Tables) Get(id uint32) *Table {
	if id < uint32(len(ts.low)) {
		return ts.low[id].Load()
	}
	return (*ts.all.Load())[id]
}

// Ensure returns table id, creating it on first use as Linux does.
func (ts *Tables) Ensure(id uint32) *Table {
	if t := ts.Get(id); t != nil {
		return t
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	old := *ts.all.Load()
	if t := old[id]; t != nil {
		return t
	}
	m := maps.Clone(old)
	t := newTable(id, &ts.watch)
	t.allGen = &ts.gen
	m[id] = t
	ts.all.Store(&m)
	if id < uint32(len(ts.low)) {
		ts.low[id].Store(t)
	}
	return t
}

// All returns every table, by id.
func (ts *Tables) All() []*Table {
	m := *ts.all.Load()
	out := make([]*Table, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Table) int { return int(int64(a.id) - int64(b.id)) })
	return out
}
