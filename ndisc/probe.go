package ndisc

import (
	"sync"
	"time"
)

// Probes is the schedule of Linux's rt6_probe for the gateways whose
// neighbour entry FAILED: each is solicited again (Table.Probe) once per
// interval (router_probe_interval) until it answers. Its owner says which
// gateways failed and recovered (what a gateway's failure does to routes
// is the owner's policy) and asks which are due; K names a gateway to the
// owner (a link and an address).
type Probes[K comparable] struct {
	mu       sync.Mutex
	interval time.Duration
	last     map[K]time.Time // each failed gateway's last probe
}

// NewProbes makes a schedule probing every interval.
func NewProbes[K comparable](interval time.Duration) *Probes[K] {
	return &Probes[K]{interval: interval, last: map[K]time.Time{}}
}

// SetInterval sets how often a failed gateway is probed.
func (p *Probes[K]) SetInterval(d time.Duration) {
	p.mu.Lock()
	p.interval = d
	p.mu.Unlock()
}

// Failing reports whether k is a failed gateway.
func (p *Probes[K]) Failing(k K) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.last[k]
	return ok
}

// Fail schedules k, which failed at now (its first probe is an interval
// later: the failure was a resolution that ran out of probes).
func (p *Probes[K]) Fail(k K, now time.Time) {
	p.mu.Lock()
	p.last[k] = now
	p.mu.Unlock()
}

// Recover takes k, which answered, out of the schedule.
func (p *Probes[K]) Recover(k K) {
	p.mu.Lock()
	delete(p.last, k)
	p.mu.Unlock()
}

// Due returns the gateways whose probe is due at now, and counts them as
// probed.
func (p *Probes[K]) Due(now time.Time) []K {
	p.mu.Lock()
	defer p.mu.Unlock()
	var due []K
	for k, last := range p.last {
		if now.Sub(last) >= p.interval {
			p.last[k] = now
			due = append(due, k)
		}
	}
	return due
}

// Forget takes out the gateways gone says go (under the schedule's lock,
// so gone may undo their effects before a new failure is heard).
func (p *Probes[K]) Forget(gone func(K) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.last {
		if gone(k) {
			delete(p.last, k)
		}
	}
}
