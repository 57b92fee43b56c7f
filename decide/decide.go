// Package decide owns the routing decision: from a flow key, through the
// policy rules, a table, the route and one of its nexthop members, to what
// becomes of the packet, and the source address the router uses towards a
// destination. Forwarding (a batch at a time), the packets the router makes
// itself (ICMPv6 errors, echo replies, TCP resets) and `route get` all call
// it, so what `route get` says is what a packet does.
//
// decide never locks and allocates nothing per decision: it reads the
// published rule set and tables through their atomic pointers. It never
// imports dataplane or control.
package decide

import (
	"net/netip"

	"urouter/fib6"
	"urouter/nexthop"
	"urouter/rules"
)

// Key is what the decision looks at: one flow.
type Key struct {
	Dst, Src [16]byte // a Src of all zeros is none (a lookup without a source)
	// Iif is the link the packet came in by, 0 for the router's own
	// packets (Linux's iif lo); Oif asks for a route out of that link.
	Iif, Oif     int32
	Proto        uint8 // the transport protocol (the last next header)
	Sport, Dport uint16
	DSField      uint8 // the traffic class
	FlowLabel    uint32
}

// KeyOf is the key of a lookup by address, as `route get` makes it (an
// invalid src is none).
func KeyOf(dst, src netip.Addr) Key {
	k := Key{Dst: dst.As16()}
	if src.IsValid() {
		k.Src = src.As16()
	}
	return k
}

// Flow is the key as the multipath hash reads it.
func (k *Key) Flow() nexthop.Flow {
	return nexthop.Flow{Src: k.Src, Dst: k.Dst, Proto: k.Proto, SrcPort: k.Sport, DstPort: k.Dport, Label: k.FlowLabel}
}

// Verdict is what becomes of a packet.
type Verdict uint8

const (
	// NoRoute: no rule decided (Linux's null entry): Network is
	// unreachable.
	NoRoute     Verdict = iota
	Forward             // out by the route's nexthop
	Local               // for the router itself
	Blackhole           // dropped without a word
	Unreachable         // an unreachable route: No route to host
	Prohibit            // a prohibit route: administratively prohibited
)

// Result is a decision.
type Result struct {
	Verdict Verdict
	Rule    uint32      // the preference of the rule that decided
	Table   uint32      // the table whose route decided
	Route   *fib6.Attrs // the route, of the chosen member for multipath; nil for NoRoute
	Paths   *fib6.Paths // the whole route the lookup found
	Member  int         // the member of Paths.Group the flow takes
	// Prefix is the destination prefix that matched; Decide fills it in,
	// the batch leaves it out.
	Prefix netip.Prefix
}

// Nexthop is where the packet goes: the link and, for a gateway route,
// the neighbour.
func (r *Result) Nexthop() *nexthop.Nexthop { return &r.Route.Nexthop }

// Decider decides with the router's rules, tables and addresses.
type Decider struct {
	Tables *fib6.Tables
	Rules  *rules.Current
	Addrs  Addresses
}

// New returns a decider over the router's tables, rule set and addresses.
func New(tables *fib6.Tables, rs *rules.Current, addrs Addresses) *Decider {
	return &Decider{Tables: tables, Rules: rs, Addrs: addrs}
}

// verdictOf is the verdict a route's type gives, and false for throw
// (the lookup goes on with the next rule).
func verdictOf(t fib6.Type) (Verdict, bool) {
	switch t {
	case fib6.Throw:
		return 0, false
	case fib6.Local:
		return Local, true
	case fib6.Blackhole:
		return Blackhole, true
	case fib6.Unreachable:
		return Unreachable, true
	case fib6.Prohibit:
		return Prohibit, true
	}
	return Forward, true
}

// settle fills in r from the paths a rule's table found for k; false if
// they do not decide (throw).
func settle(r *Result, rule rules.Rule, p *fib6.Paths, k *Key) bool {
	v, ok := verdictOf(p.Route.Type)
	if !ok {
		return false
	}
	*r = Result{Verdict: v, Rule: rule.Pref, Table: rule.Table, Route: p.Route, Paths: p}
	if p.Group != nil {
		f := k.Flow()
		r.Member = p.Group.Select(f.Hash())
		r.Route = p.Members[r.Member]
	}
	return true
}

// Decide is the decision for one flow, the way `route get` and the
// router's own packets need it: rule by rule, the first route that decides
// wins; a throw route, or no route, goes on to the next rule. With Oif, a
// lookup skips reject routes and routes out of other links (and goes on to
// shorter prefixes), as Linux's does.
func (d *Decider) Decide(k *Key) Result {
	dst := netip.AddrFrom16(k.Dst)
	var src netip.Addr
	if k.Src != ([16]byte{}) {
		src = netip.AddrFrom16(k.Src)
	}
	var accept func(*fib6.Attrs) bool
	if k.Oif != 0 {
		accept = func(a *fib6.Attrs) bool {
			return !a.Type.IsReject() && (a.Nexthop.Link == 0 || a.Nexthop.Link == k.Oif)
		}
	}
	for _, rule := range d.Rules.Load().Rules() {
		t := d.Tables.Get(rule.Table)
		if t == nil {
			continue
		}
		pfx, p, ok := t.Get(dst, src, accept)
		if !ok {
			continue
		}
		var r Result
		if settle(&r, rule, p, k) {
			r.Prefix = pfx
			return r
		}
	}
	return Result{Verdict: NoRoute}
}

// MaxBatch is the most keys DecideBatch takes at once.
const MaxBatch = 64

// Batch is a worker's scratch for deciding a batch: reused from batch to
// batch, so that deciding allocates nothing.
type Batch struct {
	dsts, srcs [MaxBatch][16]byte
	paths      [MaxBatch]*fib6.Paths
	pending    [MaxBatch]int // index in keys of each lookup still undecided
}

// DecideBatch decides for every key as Decide would (but without Prefix),
// rule by rule, with the lookups of one rule's table made as one batch
// (fib6.Table.LookupKeys), so that their memory accesses overlap. out[i] is
// keys[i]'s decision. The keys must not ask for an Oif.
func (d *Decider) DecideBatch(b *Batch, keys []Key, out []Result) {
	n := len(keys)
	for i := range keys {
		b.dsts[i], b.srcs[i], b.pending[i] = keys[i].Dst, keys[i].Src, i
	}
	for _, rule := range d.Rules.Load().Rules() {
		if n == 0 {
			return
		}
		t := d.Tables.Get(rule.Table)
		if t == nil {
			continue
		}
		t.LookupKeys(b.dsts[:n], b.srcs[:n], b.paths[:n])
		left := 0
		for j := 0; j < n; j++ {
			i := b.pending[j]
			if p := b.paths[j]; p != nil && settle(&out[i], rule, p, &keys[i]) {
				continue
			}
			// on to the next rule
			b.dsts[left], b.srcs[left], b.pending[left] = b.dsts[j], b.srcs[j], i
			left++
		}
		n = left
	}
	for j := 0; j < n; j++ {
		out[b.pending[j]] = Result{Verdict: NoRoute}
	}
}
