package ndisc

import (
	"net/netip"
	"slices"
	"syscall"
	"time"
)

// Errors of the administrative calls, as Linux's RTM_NEWNEIGH and
// RTM_DELNEIGH give them.
var (
	errInvalid = syscall.EINVAL
	ErrExists  = syscall.EEXIST
	ErrNoEntry = syscall.ENOENT
)

// Mode is how Set treats an entry that exists or not: `ip neigh add`,
// `change` or `replace`.
type Mode uint8

const (
	Add     Mode = iota // NLM_F_CREATE|NLM_F_EXCL
	Change              // NLM_F_REPLACE
	Replace             // NLM_F_CREATE|NLM_F_REPLACE
)

// Set is `ip neigh add|change|replace ADDR [lladdr MAC] nud STATE
// [router]`: Linux's neigh_add, an administrative neigh_update.
func (t *Table) Set(addr netip.Addr, mac MAC, hasMAC bool, s State, flags Flags, mode Mode) error {
	e := t.Lookup(addr)
	switch {
	case e != nil && mode == Add:
		return ErrExists
	case e == nil && mode == Change:
		return ErrNoEntry
	case e == nil:
		if s&Valid != 0 && !hasMAC {
			return errInvalid
		}
		var err error
		if e, err = t.create(addr, true); err != nil {
			return err
		}
	}
	return t.apply(e, update{mac: mac, hasMAC: hasMAC, to: s, admin: true, override: true,
		setRouter: true, router: flags&Router != 0})
}

// Delete is `ip neigh del ADDR`: the entry goes, failing what waited.
func (t *Table) Delete(addr netip.Addr) error {
	e := t.Lookup(addr)
	if e == nil {
		return ErrNoEntry
	}
	t.remove([]*Entry{e})
	return nil
}

// remove fails and unlinks entries.
func (t *Table) remove(es []*Entry) {
	now := t.Clock.Load()
	var as []action
	t.mu.Lock()
	for _, e := range es {
		e.mu.Lock()
		a := action{addr: e.addr, from: e.state, to: None}
		a.unreached = e.drain()
		e.set(None, now, 0)
		e.dead = true
		e.mu.Unlock()
		as = append(as, a)
	}
	t.unlink(es)
	t.mu.Unlock()
	t.do(as)
}

// Close drops every packet the table holds, without answers: its link
// goes.
func (t *Table) Close() {
	for e := range t.all() {
		e.mu.Lock()
		e.drain()
		e.mu.Unlock()
	}
}

// Flush removes the entries match selects, and returns how many.
func (t *Table) Flush(match func(Info) bool) int {
	var es []*Entry
	for e := range t.all() {
		if match(e.info(t.Clock.Load())) {
			es = append(es, e)
		}
	}
	t.remove(es)
	return len(es)
}

// Pin keeps addr's entry through collection while on (a gateway whose
// failure the owner acts on), creating it if need be.
func (t *Table) Pin(addr netip.Addr, on bool) {
	e := t.Lookup(addr)
	if e == nil {
		if !on {
			return
		}
		var err error
		if e, err = t.create(addr, true); err != nil {
			return
		}
	}
	e.mu.Lock()
	e.pinned = on
	e.mu.Unlock()
}

// Probe starts the resolution of addr's entry if it is not valid, as
// Linux's rt6_probe does for a gateway not known reachable: a FAILED or
// new entry goes INCOMPLETE and is solicited; it reports whether it did.
func (t *Table) Probe(addr netip.Addr) bool {
	e := t.Lookup(addr)
	if e == nil {
		var err error
		if e, err = t.create(addr, true); err != nil {
			return false
		}
	}
	p := t.params.Load()
	now := t.Clock.Load()
	e.mu.Lock()
	if e.dead || e.state&(Valid|Incomplete) != 0 {
		e.mu.Unlock()
		return false
	}
	e.probes = p.UcastProbes
	from := e.set(Incomplete, now, now)
	e.mu.Unlock()
	t.link.changed(addr, from, Incomplete)
	t.wake()
	return true
}

// State returns addr's state (None without an entry) and MAC.
func (t *Table) State(addr netip.Addr) (State, MAC) {
	e := t.Lookup(addr)
	if e == nil {
		return None, MAC{}
	}
	s, m := unpack(e.word.Load())
	return s, m
}

// Dump returns every entry, by address.
func (t *Table) Dump() []Info {
	now := t.Clock.Load()
	var out []Info
	for e := range t.all() {
		out = append(out, e.info(now))
	}
	slices.SortFunc(out, func(a, b Info) int { return a.Addr.Compare(b.Addr) })
	return out
}

func (e *Entry) info(now int64) Info {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Info{Addr: e.addr, MAC: e.mac, HasMAC: e.hasMAC, State: e.state, Flags: e.flags,
		Used: time.Duration(now - e.used.Load()), Confirmed: time.Duration(now - e.confirmed),
		Updated: time.Duration(now - e.updated), Probes: e.probes, Queued: len(e.queue)}
}
