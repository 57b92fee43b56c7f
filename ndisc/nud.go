package ndisc

import (
	"math"
	"net/netip"
	"time"
)

// action is what a state change asks of the link, done once the entry's
// lock is released.
type action struct {
	addr      netip.Addr
	from, to  State
	solicit   bool
	unicast   bool
	mac       MAC
	release   [][]byte // sent to mac
	unreached [][]byte // answered with Address Unreachable
}

func (t *Table) do(as []action) {
	for i := range as {
		a := &as[i]
		if a.from != a.to {
			t.link.changed(a.addr, a.from, a.to)
		}
		if a.solicit {
			t.link.solicit(a.addr, a.mac, a.unicast)
		}
		if len(a.release) > 0 {
			t.link.release(a.addr, a.mac, a.release)
		}
		if len(a.unreached) > 0 {
			t.link.unreachable(a.addr, a.unreached)
		}
	}
}

// maxProbes is how many solicitations an entry in this state sends before
// it fails, as Linux's neigh_max_probes.
func maxProbes(p *Params, s State) int {
	n := p.UcastProbes
	if s&Probe != 0 {
		return n + p.McastReprobes
	}
	return n + p.McastProbes
}

// Run does what the entries' timers ask at time now (the table's clock)
// and the periodic collection, then reports when it wants to run next
// (its owner also wakes on Kick). It is Linux's neigh_timer_handler and
// neigh_periodic_work; call it from one goroutine.
//
// It looks at every entry only when a timer is due (soonest), and at
// most every minScan: a flood that creates thousands of entries a second
// buys a few hundred scans, not one each.
func (t *Table) Run(now int64) (next int64) {
	p := t.params.Load()
	gc := t.gcDue()
	if due := t.soonest.Load(); now < due && now < gc {
		return min(due, gc)
	}
	if now < t.lastScan+int64(minScan) {
		return t.lastScan + int64(minScan)
	}
	t.lastScan = now
	t.soonest.Store(math.MaxInt64)
	var as []action
	for e := range t.all() {
		e.mu.Lock()
		if e.deadline != 0 && e.deadline <= now && !e.dead {
			if a, ok := t.expire(e, p, now); ok {
				as = append(as, a)
			}
		}
		if e.deadline != 0 && !e.dead {
			t.note(e.deadline)
		}
		e.mu.Unlock()
	}
	t.do(as)
	if now >= gc {
		gc = t.periodicGC(p, now)
	}
	return min(t.soonest.Load(), now+int64(p.GCInterval), max(gc, now+int64(time.Millisecond)))
}

// minScan is the least time between two of Run's looks at every entry.
const minScan = 2 * time.Millisecond

// gcDue is when the periodic collection runs next.
func (t *Table) gcDue() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nextGC
}

// expire is one entry's timer; e.mu is held.
func (t *Table) expire(e *Entry, p *Params, now int64) (action, bool) {
	a := action{addr: e.addr, from: e.state, to: e.state}
	reach := t.reachable.Load()
	switch {
	case e.state&Reachable != 0:
		switch {
		case now <= e.confirmed+reach:
			e.deadline = e.confirmed + reach
			return a, false
		case now <= e.used.Load()+int64(p.DelayProbe):
			e.set(Delay, now, now+int64(p.DelayProbe))
		default:
			e.set(Stale, now, 0)
		}
		a.to = e.state
		return a, true
	case e.state&Delay != 0:
		// Run looks up to minScan late: judge as at the time the timer
		// was due, as Linux's timer fires then (a confirmation since counts)
		if min(now, e.deadline) <= e.confirmed+int64(p.DelayProbe) {
			e.set(Reachable, now, e.confirmed+reach)
			a.to = e.state
			return a, true
		}
		e.set(Probe, now, now)
		a.to = Probe
	}
	// INCOMPLETE or PROBE: fail after the last probe, else probe again
	if e.probes >= maxProbes(p, e.state) {
		e.set(Failed, now, 0)
		a.to = Failed
		a.unreached = e.drain()
		return a, true
	}
	e.deadline = now + int64(max(p.Retrans, 10*time.Millisecond))
	a.solicit, a.mac = true, e.mac
	a.unicast = e.probes < p.UcastProbes && e.hasMAC // ndisc_solicit: unicast first, then multicast
	e.probes++
	if !a.unicast && e.state == Incomplete {
		// a known neighbour's probes are never held back (RFC 6583 7.1),
		// nor a wanted one's: they are at most unres_max a retrans time
		if a.solicit = e.priority || t.mayMulticast(p, now); a.solicit {
			t.ask(e.addr)
			if e.firstNS == 0 {
				e.firstNS = now
			}
		}
	}
	return a, true
}

// periodicGC is Linux's neigh_periodic_work: above thresh1, entries that
// are FAILED or NONE, or unused for gc_stale and not in a timed state, go.
// It returns when it runs next.
func (t *Table) periodicGC(p *Params, now int64) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nextGC = now + int64(p.BaseReachable/2)
	if t.Len() <= p.Thresh1 {
		return t.nextGC
	}
	t.PeriodicGCs.Add(1)
	t.collect(0, func(e *Entry) bool {
		return (e.state&(Failed|None) != 0 || now-e.used.Load() > int64(p.GCStale)) && e.state&timed == 0
	})
	return t.nextGC
}

// Advert is what a Neighbour Advertisement says of its target.
type Advert struct {
	MAC       MAC
	HasMAC    bool // a target link-layer address option came
	Solicited bool
	Override  bool
	Router    bool
	// Untracked: an advertisement for a target without an entry makes
	// one, STALE (Linux's accept_untracked_na, RFC 9131, on a router)
	Untracked bool
}

// Advertised applies a Neighbour Advertisement to the target's entry, as
// Linux's ndisc_recv_na and neigh_update; RFC 4861 7.2.5. An
// advertisement creates no entry, unless it is Untracked (then STALE) or
// answers a solicitation the link sent lately for an entry that gave way
// meanwhile (then REACHABLE): an answer gets in, even during a flood.
func (t *Table) Advertised(target netip.Addr, na Advert) {
	e := t.Lookup(target)
	to := Stale
	if na.Solicited {
		to = Reachable
	}
	if e == nil {
		asked := na.Solicited && t.wasAsked(target)
		if !na.HasMAC || !na.Untracked && !asked {
			return
		}
		var err error
		if e, err = t.create(target, true); err != nil {
			return
		}
		if !asked {
			to = Stale
		}
	}
	u := update{mac: na.MAC, hasMAC: na.HasMAC, to: to, weakOverride: true, override: na.Override,
		setRouter: true, router: na.Router}
	// errInvalid: no MAC for an entry without one, an advertisement RFC
	// 4861 7.2.5 says to discard silently
	_ = t.apply(e, u)
}

// Solicited records the source of a Neighbour or Router Solicitation that
// carried its link-layer address: the entry is created or updated STALE
// (Linux's neigh_event_ns).
func (t *Table) Solicited(src netip.Addr, mac MAC) {
	e := t.Lookup(src)
	if e == nil {
		var err error
		if e, err = t.create(src, true); err != nil {
			return
		}
	}
	_ = t.apply(e, update{mac: mac, hasMAC: true, to: Stale, weakOverride: true, override: true}) // it has a MAC: never fails
}

// update is one neigh_update: the new state and MAC, and its
// NEIGH_UPDATE_F_* flags.
type update struct {
	mac          MAC
	hasMAC       bool
	to           State
	admin        bool
	override     bool
	weakOverride bool
	setRouter    bool
	router       bool
}

// apply is Linux's neigh_update.
func (t *Table) apply(e *Entry, u update) error {
	p := t.params.Load()
	now := t.Clock.Load()
	e.mu.Lock()
	a, err := t.change(e, u, p, now)
	e.mu.Unlock()
	t.do([]action{a})
	return err
}

func (t *Table) change(e *Entry, u update, p *Params, now int64) (action, error) {
	old := e.state
	a := action{addr: e.addr, from: old, to: old}
	if e.dead || !u.admin && old&static != 0 {
		return a, nil
	}
	if u.to&Valid == 0 {
		// to NONE, INCOMPLETE or FAILED: stop the timer, fail the queue
		e.set(u.to, now, now)
		if u.to == Incomplete {
			e.probes = p.UcastProbes
			t.wake()
		}
		a.to = u.to
		if old&(Incomplete|Probe) != 0 && u.to == Failed {
			a.unreached = e.drain()
		}
		if u.setRouter && u.admin {
			e.setRouterFlag(u.router)
		}
		return a, nil
	}
	mac, changed := u.mac, u.hasMAC && (!e.hasMAC || u.mac != e.mac)
	if !u.hasMAC {
		if old&Valid == 0 {
			return a, errInvalid
		}
		mac = e.mac
	}
	if u.to&Connected != 0 {
		e.confirmed = now
	}
	to := u.to
	setRouter := u.setRouter
	if old&Valid != 0 {
		if changed && !u.override {
			setRouter = false
			if !u.weakOverride || old&Connected == 0 {
				return a, nil
			}
			mac, changed, to = e.mac, false, Stale
		} else if !changed && to == Stale && !u.admin {
			to = old
		}
	}
	if changed { // the MAC first: the state and MAC are published together
		e.mac, e.hasMAC = mac, true
		e.updated = now
		if to&Connected == 0 {
			e.confirmed = now - 2*int64(p.BaseReachable)
		}
	}
	if to != old {
		deadline := now
		if to&Reachable != 0 {
			deadline = now + t.reachable.Load()
		}
		e.set(to, now, deadline)
	} else if changed {
		e.publish()
	}
	if setRouter {
		e.setRouterFlag(u.router)
	}
	a.to = e.state
	if old&Valid == 0 && e.state&Valid != 0 && len(e.queue) > 0 {
		a.release, a.mac = e.drain(), e.mac
	}
	return a, nil
}

func (e *Entry) setRouterFlag(on bool) {
	if on {
		e.flags |= Router
	} else {
		e.flags &^= Router
	}
}
