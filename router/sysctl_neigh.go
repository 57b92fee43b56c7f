package router

import (
	"math"
	"time"

	"urouter/dataplane"
	"urouter/ndisc"
)

// net.ipv6.neigh.{default,LINK}.*: the knobs of a link's neighbour cache,
// the ones `ntable change` sets. A link with no cache (a TUN, a dummy)
// keeps them all the same, as Linux has them for every device.

type neighParams = ndisc.Params

func defaultNeighParams() neighParams { return ndisc.DefaultParams() }

// A neighKnob is one knob. Its value is a field of the parameters in the
// field's unit (milliseconds for a time, packets for unres_qlen), which
// is ntable's; its sysctl shows it in the unit its name says, scale
// field units each. lo and hi bound the field, for sysctl and ntable
// alike.
type neighKnob struct {
	name   string
	scale  int64
	lo, hi int64
	get    func(p *neighParams) int64
	set    func(p *neighParams, n int64)
	// tableWide: Linux has it in default only, for the whole table
	// (gc_thresh*, gc_interval); here it is every link's cache's
	tableWide bool
}

// unresFrame is what Linux counts a queued packet as (ndisc.UnresFrame):
// unres_qlen is unres_qlen_bytes in these.
const unresFrame = ndisc.UnresFrame

// timeKnob is a time in milliseconds, shown in units of scale
// milliseconds; lo is 1 for a time that must be positive.
func timeKnob(name string, scale, lo int64, f func(p *neighParams) *time.Duration) *neighKnob {
	return &neighKnob{name: name, scale: scale, lo: lo, hi: math.MaxInt32,
		get: func(p *neighParams) int64 { return f(p).Milliseconds() },
		set: func(p *neighParams, n int64) { *f(p) = time.Duration(n) * time.Millisecond }}
}

func msKnob(name string, f func(p *neighParams) *time.Duration) *neighKnob {
	return timeKnob(name, 1, 1, f)
}

func secKnob(name string, lo int64, f func(p *neighParams) *time.Duration) *neighKnob {
	return timeKnob(name, 1000, lo, f)
}

func countKnob(name string, f func(p *neighParams) *int) *neighKnob {
	return &neighKnob{name: name, scale: 1, lo: 0, hi: math.MaxInt32,
		get: func(p *neighParams) int64 { return int64(*f(p)) },
		set: func(p *neighParams, n int64) { *f(p) = int(n) }}
}

func tableWide(k *neighKnob) *neighKnob { k.tableWide = true; return k }

// holds says whether n, in the knob's field unit, is within its bounds.
func (k *neighKnob) holds(n int64) bool { return n >= k.lo && n <= k.hi }

// neighKnobs are the knobs. Times must be positive here, where Linux
// takes 0 (an entry that is never reachable, a probe that never waits).
var neighKnobs = []*neighKnob{
	secKnob("base_reachable_time", 1, func(p *neighParams) *time.Duration { return &p.BaseReachable }),
	msKnob("base_reachable_time_ms", func(p *neighParams) *time.Duration { return &p.BaseReachable }),
	secKnob("delay_first_probe_time", 1, func(p *neighParams) *time.Duration { return &p.DelayProbe }),
	tableWide(secKnob("gc_interval", 1, func(p *neighParams) *time.Duration { return &p.GCInterval })),
	secKnob("gc_stale_time", 0, func(p *neighParams) *time.Duration { return &p.GCStale }),
	tableWide(countKnob("gc_thresh1", func(p *neighParams) *int { return &p.Thresh1 })),
	tableWide(countKnob("gc_thresh2", func(p *neighParams) *int { return &p.Thresh2 })),
	tableWide(countKnob("gc_thresh3", func(p *neighParams) *int { return &p.Thresh3 })),
	countKnob("mcast_resolicit", func(p *neighParams) *int { return &p.McastReprobes }),
	countKnob("mcast_solicit", func(p *neighParams) *int { return &p.McastProbes }),
	msKnob("retrans_time_ms", func(p *neighParams) *time.Duration { return &p.Retrans }),
	countKnob("ucast_solicit", func(p *neighParams) *int { return &p.UcastProbes }),
	// in packets, and their bytes as Linux counts them: ntable's queue too
	{name: "unres_qlen", scale: 1, lo: 0, hi: math.MaxInt32 / unresFrame,
		get: func(p *neighParams) int64 { return int64(p.QueueBytes / unresFrame) },
		set: func(p *neighParams, n int64) { p.QueueLen, p.QueueBytes = int(n), int(n)*unresFrame }},
	countKnob("unres_qlen_bytes", func(p *neighParams) *int { return &p.QueueBytes }),
	// RFC 6583's, beyond Linux's (ndisc/unres.go)
	countKnob("unres_max", func(p *neighParams) *int { return &p.UnresMax }),
	countKnob("unres_src_max", func(p *neighParams) *int { return &p.UnresSrcMax }),
	countKnob("solicit_rate", func(p *neighParams) *int { return &p.SolicitRate }),
	countKnob("solicit_burst", func(p *neighParams) *int { return &p.SolicitBurst }),
}

func neighKnobNamed(name string) *neighKnob {
	for _, k := range neighKnobs {
		if k.name == name {
			return k
		}
	}
	return nil
}

// neighBit is knob k's bit in linkSysctls.neighSet.
func neighBit(k *neighKnob) uint64 {
	for i, o := range neighKnobs {
		if o == k {
			return 1 << i
		}
	}
	return 0
}

type neighOf struct{ k *neighKnob }

func (n neighOf) get(r *Router, l *dataplane.Link) string {
	if l == nil {
		return itoa64(n.k.get(&r.sys.neighDflt) / n.k.scale)
	}
	p := r.neighParams(l)
	return itoa64(n.k.get(&p) / n.k.scale)
}

// neighParams are link l's cache's knobs (ntable may have changed them),
// or, for a link without a cache, those it keeps.
func (r *Router) neighParams(l *dataplane.Link) neighParams {
	if t := l.Neigh(); t != nil {
		return t.Params()
	}
	return r.linkSys(l).neigh
}

func (n neighOf) set(r *Router, l *dataplane.Link, v string) error {
	x, ok := parseProcInt(v)
	if !ok || x < 0 || x > n.k.hi/n.k.scale || !n.k.holds(x*n.k.scale) {
		return ErrBadValue
	}
	x *= n.k.scale
	if l != nil {
		p := r.neighParams(l)
		n.k.set(&p, x)
		if p.Check() != nil {
			return ErrBadValue
		}
		r.linkSys(l).neighSet |= neighBit(n.k)
		r.setNeigh(l, p)
		return nil
	}
	d := r.sys.neighDflt
	n.k.set(&d, x)
	if d.Check() != nil {
		return ErrBadValue
	}
	r.sys.neighDflt = d
	// as neigh_copy_dflt_parms: every link that has not set it itself
	for _, l := range r.Links.All() {
		if s := r.linkSys(l); n.k.tableWide || s.neighSet&neighBit(n.k) == 0 {
			p := r.neighParams(l)
			n.k.set(&p, x)
			if p.Check() == nil {
				r.setNeigh(l, p)
			}
		}
	}
	return nil
}

// setNeigh gives link l the knobs p: its cache's, or, for a link with
// no cache, those it keeps (a cache's knobs are kept by the cache only).
func (r *Router) setNeigh(l *dataplane.Link, p neighParams) {
	if t := l.Neigh(); t != nil {
		t.SetParams(p)
		return
	}
	r.linkSys(l).neigh = p
}

// SetNeighParams gives link l's cache the knobs p: the ones that change
// become the link's own, as a write of its net.ipv6.neigh.LINK knob
// makes them (Linux's data_state), so that a later write of default's
// leaves them.
func (r *Router) SetNeighParams(l *dataplane.Link, p neighParams) error {
	if err := p.Check(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setNeighParamsLocked(l, p)
	return nil
}

func (r *Router) setNeighParamsLocked(l *dataplane.Link, p neighParams) {
	old, s := r.neighParams(l), r.linkSys(l)
	for _, k := range neighKnobs {
		if !k.tableWide && k.get(&old) != k.get(&p) {
			s.neighSet |= neighBit(k)
		}
	}
	r.setNeigh(l, p)
}

// A NeighChange is one knob `ntable change` sets: Knob is its sysctl
// name (net.ipv6.neigh.LINK.Knob), V its value in ntable's unit, which
// is the knob's field's (milliseconds for a time, packets for a queue).
type NeighChange struct {
	Knob string
	V    uint64
}

// A NeighValueError says which change's value is beyond its knob's
// bounds.
type NeighValueError struct{ Change int }

func (e *NeighValueError) Error() string { return ErrBadValue.Error() }

// ChangeNeigh makes the changes to link l's cache's knobs, as `ntable
// change` does, through the knobs' table: set as SetNeighParams sets
// them, bounded as their sysctls are.
func (r *Router) ChangeNeigh(l *dataplane.Link, cs []NeighChange) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.neighParams(l)
	ks := make([]*neighKnob, len(cs))
	for i, c := range cs {
		if ks[i] = neighKnobNamed(c.Knob); ks[i] == nil {
			return ErrNoKnob
		}
		ks[i].set(&p, int64(min(c.V, math.MaxInt32+1)))
	}
	// Check first: its complaints name what is wrong (a time that is
	// not positive); the bounds refuse what it lets pass
	if err := p.Check(); err != nil {
		return err
	}
	for i, c := range cs {
		if c.V > math.MaxInt32 || !ks[i].holds(int64(c.V)) {
			return &NeighValueError{Change: i}
		}
	}
	r.setNeighParamsLocked(l, p)
	return nil
}
