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
	Route   *fib6.Attrs // the route; nil for NoRoute
	// Path is the path the flow takes: the route's own, or the member of
	// Group it selected.
	Path nexthop.Nexthop
	// Group is the multipath route's (or nexthop object's) paths as they
	// were when the flow selected Member; nil for a single path.
	Group  *nexthop.Group
	Member int
	// Prefix is the destination prefix that matched; Decide fills it in,
	// the batch leaves it out.
	Prefix netip.Prefix
}

// Nexthop is where the packet goes: the link and, for a gateway route,
// the neighbour.
func (r *Result) Nexthop() *nexthop.Nexthop { return &r.Path }

// Decider decides with the router's rules, tables and addresses, and
// spreads flows over multipath routes with Hash (its policy and seed).
type Decider struct {
	Tables *fib6.Tables
	Rules  *rules.Current
	Addrs  Addresses
	Hash   nexthop.Hasher
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

// settle fills in r from the route a rule's table found for k, and
// selects the flow's path; false if the route does not decide (throw).
// A route through a nexthop object reads the object's current version
// with one atomic load.
func (d *Decider) settle(r *Result, rule rules.Rule, a *fib6.Attrs, k *Key) bool {
	v, ok := verdictOf(a.Type)
	if !ok {
		return false
	}
	*r = Result{Verdict: v, Rule: rule.Pref, Table: rule.Table, Route: a, Path: a.Nexthop}
	g := a.Group
	if o := a.Object; o != nil {
		ver := o.Load()
		if g = ver.Paths; g == nil {
			r.Path = ver.Nexthop
		}
	}
	if g != nil {
		f := k.Flow()
		h := d.Hash.Hash(&f)
		r.Group, r.Member = g, g.Select(h)
		if k.Oif != 0 {
			r.Member = max(0, g.SelectOn(h, k.Oif))
		}
		r.Path = g.Member(r.Member).Nexthop
	}
	if r.Path.Flags&nexthop.Blackhole != 0 {
		r.Verdict = Blackhole
	}
	return true
}

// onLink reports whether route a may take a packet out of link oif: a
// reject route may not; a route with paths, if one of them leaves by oif.
func onLink(a *fib6.Attrs, oif int32) bool {
	if a.Type.IsReject() {
		return false
	}
	ps := a.Paths()
	for _, p := range ps {
		if p.Link == oif && p.Usable() {
			return true
		}
	}
	return len(ps) == 0
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
		accept = func(a *fib6.Attrs) bool { return onLink(a, k.Oif) }
	}
	for _, rule := range d.Rules.Load().Rules() {
		t := d.Tables.Get(rule.Table)
		if t == nil {
			continue
		}
		pfx, a, ok := t.Get(dst, src, accept)
		if !ok {
			continue
		}
		var r Result
		if d.settle(&r, rule, a, k) {
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
	routes     [MaxBatch]*fib6.Attrs
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
		t.LookupKeys(b.dsts[:n], b.srcs[:n], b.routes[:n])
		left := 0
		for j := 0; j < n; j++ {
			i := b.pending[j]
			if a := b.routes[j]; a != nil && d.settle(&out[i], rule, a, &keys[i]) {
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
