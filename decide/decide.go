// Package decide owns the routing decision: from a flow key (put in its
// VRF first, as Linux's l3mdev_update_flow), through the policy rules, a
// table, the route and one of its nexthop members, to what becomes of
// the packet, and the source address the router uses towards a
// destination (among its VRF's addresses). Forwarding (a batch at a time), the packets the router makes
// itself (ICMPv6 errors, echo replies, TCP resets) and `route get` all call
// it, so what `route get` says is what a packet does.
//
// decide never locks and allocates nothing per decision: it reads the
// published rule set and tables through their atomic pointers. It never
// imports dataplane or control.
package decide

import (
	"net/netip"
	"sync/atomic"

	"urouter/fib6"
	"urouter/nexthop"
	"urouter/rules"
)

// Key is what the decision looks at: one flow. The rules read its
// Packet; the multipath hash reads the flow label too.
type Key struct {
	rules.Packet
	FlowLabel uint32
}

// KeyOf is the key of a lookup by address, as `route get` makes it (an
// invalid src is none).
func KeyOf(dst, src netip.Addr) Key {
	var k Key
	k.Dst = dst.As16()
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
	// NoRoute: no rule decided, or an `unreachable` rule did (Linux's
	// null entry): Network is unreachable.
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
	Table   uint32      // the table whose route decided; 0 if a rule did
	Route   *fib6.Attrs // the route; nil for NoRoute and a rule's verdict
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

// Leg is what the path the flow takes keeps of its own (MTU, protocol,
// preferred source): on a multipath route its own, as each of Linux's
// ECMP siblings has, else the route's.
func (r *Result) Leg() nexthop.Leg {
	if r.Group != nil && r.Route.Object == nil {
		return r.Route.LegOf(r.Group.Leg(r.Member))
	}
	return r.Route.Leg()
}

// PathMTU is the MTU of the path the flow takes (0: its link's): Leg's.
func (r *Result) PathMTU() uint32 { return r.Leg().MTU }

// Decider decides with the router's rules, tables and addresses, and
// spreads flows over multipath routes by a hash of their flow, seeded
// with Seed, on the fields its policy says (SetHashPolicy).
type Decider struct {
	Tables *fib6.Tables
	Rules  *rules.Registry
	Addrs  Addresses
	Seed   uint64
	// Neigh, if set, says which gateways a group of nexthop objects may
	// choose (nexthop.Group.SelectGood); nil: any.
	Neigh nexthop.Neighbours
	// hashPolicy is the policy in its low byte, the fields above it
	hashPolicy atomic.Uint64
}

// SetHashPolicy sets the multipath hash's policy and, for policy 3, its
// fields (Linux's fib_multipath_hash_policy and _fields).
func (d *Decider) SetHashPolicy(policy uint8, fields uint32) {
	d.hashPolicy.Store(uint64(policy) | uint64(fields)<<8)
}

// Hasher is the multipath hash as of now.
func (d *Decider) Hasher() nexthop.Hasher {
	p := d.hashPolicy.Load()
	return nexthop.Hasher{Seed: d.Seed, Policy: uint8(p), Fields: uint32(p >> 8)}
}

// New returns a decider over the router's tables, rule set and addresses.
func New(tables *fib6.Tables, rs *rules.Registry, addrs Addresses) *Decider {
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
func (d *Decider) settle(r *Result, rule *rules.Rule, table uint32, a *fib6.Attrs, k *Key, h *how) bool {
	v, ok := verdictOf(a.Type)
	if !ok {
		return false
	}
	*r = Result{Verdict: v, Rule: rule.Pref, Table: table, Route: a, Path: a.Nexthop}
	g := a.Group
	if o := a.Object; o != nil {
		ver := o.Load()
		if g = ver.Paths; g == nil {
			r.Path = ver.Nexthop
		}
	}
	if g != nil {
		f := k.Flow()
		hash := d.Hasher().Hash(&f)
		r.Group = g
		// Linux's fib6_select_path: the hash's member, unless a strict
		// lookup may not take it; then the first on its link, the one
		// rt6_select found. A nexthop object's group selects by the hash
		// and its gateways' neighbours (nexthop_path_fib6_result).
		switch {
		case a.Object != nil && d.Neigh != nil:
			r.Member = g.SelectGood(hash, d.Neigh)
		case h.strict && h.link != 0 && a.Object == nil:
			r.Member = max(0, g.SelectOn(hash, h.link))
		default:
			r.Member = g.Select(hash)
		}
		r.Path = g.Member(r.Member).Nexthop
	}
	if r.Path.Flags&nexthop.Blackhole != 0 {
		r.Verdict = Blackhole
	}
	return true
}

// suppressed is a rule's suppress_prefixlength at work: a route found
// with a prefix that short is passed over (a reject route never is, as
// Linux consults it only for a lookup that succeeded).
func suppressed(rule *rules.Rule, a *fib6.Attrs, bits int) bool {
	return rule.Suppress && !a.Type.IsReject() && bits <= int(rule.SuppressPrefixLen)
}

// walk goes from rule i (the first the packet matches, -1 for none) to the
// first rule whose table is to be looked up, and returns its index; or
// fills in out with what a rule decided (unreachable, prohibit, blackhole)
// or NoRoute, and returns -1. It follows gotos, which land on their
// target only if the target matches too (else the walk goes on after it),
// and skips nop rules, unresolved gotos and tables that do not exist, as
// Linux's fib_rules_lookup.
func (d *Decider) walk(s *rules.Set, c *rules.Cursor, i int, out *Result, ex *explainer) int {
	for i >= 0 {
		rule := s.Rule(i)
		switch rule.Action {
		case rules.ToTable:
			if d.Tables.Get(c.Table(rule)) != nil {
				return i
			}
			ex.step(Step{Kind: NoTable, Index: i, Table: c.Table(rule)})
			i = c.Next(i + 1)
		case rules.Goto:
			t := s.Target(i)
			ex.step(Step{Kind: Jump, Index: i, Target: t})
			if t < 0 {
				t = i + 1
			}
			i = c.Next(t)
		case rules.Nop:
			i = c.Next(i + 1)
		default:
			ex.step(Step{Kind: RuleDecided, Index: i})
			*out = Result{Verdict: ruleVerdict[rule.Action], Rule: rule.Pref}
			return -1
		}
	}
	ex.step(Step{Kind: NoRule, Index: -1})
	*out = Result{Verdict: NoRoute}
	return -1
}

var ruleVerdict = [...]Verdict{rules.Blackhole: Blackhole, rules.Unreachable: NoRoute, rules.Prohibit: Prohibit}

// Decide is the decision for one flow, the way `route get` and the
// router's own packets need it: the rules the flow matches, in order; the
// first that decides wins; a lookup that finds no route, a throw route or
// a suppressed one goes on to the next rule. Among the routes of a
// prefix, a lookup with a link (the Oif asked for, or the Iif come in by)
// prefers those out of it, and a strict one takes no others (and goes on
// to shorter prefixes), as Linux's does (see howOf).
func (d *Decider) Decide(k *Key) Result { return d.decide(k, nil) }

func (d *Decider) decide(key *Key, ex *explainer) Result {
	own := *key
	k := &own
	d.domain(k)
	s := d.Rules.Load()
	var cur rules.Cursor
	c := &cur
	if ex != nil {
		s, c = ex.set, &ex.cur
	}
	c.Reset(s, &k.Packet)
	if ex != nil {
		c.Trace = ex.rule
	}
	dst, src := netip.AddrFrom16(k.Dst), srcOf(&k.Src)
	h := howOf(k, s.Loopback())
	var score fib6.Score
	if h.link != 0 {
		score = h.score
	}
	var r Result
	for i := d.walk(s, c, c.Next(0), &r, ex); i >= 0; i = d.walk(s, c, c.Next(i+1), &r, ex) {
		rule := s.Rule(i)
		id := c.Table(rule)
		t := d.Tables.Get(id)
		pfx, a, ok := t.Get(dst, src, score)
		ex.lookup(i, id, t, dst, src, pfx, ok)
		switch {
		case !ok:
		case suppressed(rule, a, pfx.Bits()):
			ex.step(Step{Kind: Suppressed, Index: i, Table: id, Prefix: pfx, Route: a})
		case d.settle(&r, rule, id, a, k, &h):
			r.Prefix = pfx
			ex.step(Step{Kind: Found, Index: i, Table: id, Prefix: pfx, Route: a})
			return r
		default:
			ex.step(Step{Kind: Thrown, Index: i, Table: id, Prefix: pfx, Route: a})
		}
	}
	return r
}

// MaxBatch is the most keys DecideBatch takes at once.
const MaxBatch = 64

// Batch is a worker's scratch for deciding a batch: reused from batch to
// batch, so that deciding allocates nothing.
type Batch struct {
	cur        [MaxBatch]rules.Cursor
	at         [MaxBatch]int // the rule each key waits at for a lookup
	pending    [MaxBatch]int // keys waiting
	looking    [MaxBatch]int // keys of the lookup batch
	dsts, srcs [MaxBatch][16]byte
	routes     [MaxBatch]*fib6.Attrs
	choice     [MaxBatch]bool
}

// DecideBatch decides for every key as Decide would (but without Prefix).
// Each key walks its own rules, and the keys waiting for a lookup in one
// table are looked up as one batch (fib6.Table.LookupKeys), so that their
// memory accesses overlap: a batch of one flow's packets costs a batch
// lookup per rule with a table. out[i] is keys[i]'s decision. The keys
// must not ask for an Oif. A key that comes in by a link and finds a
// prefix whose routes it may choose between (by that link) is looked up
// again alone; one for a link-local, multicast or loopback destination
// is decided alone.
func (d *Decider) DecideBatch(b *Batch, keys []Key, out []Result) {
	s := d.Rules.Load()
	n := 0
	var l3 l3cache
	for i := range keys {
		if keys[i].Iif > 0 && keys[i].L3Table == 0 {
			keys[i].L3Table = l3.of(d, keys[i].Iif)
		}
		if keys[i].Iif > 0 && strictDst(&keys[i].Dst) {
			out[i] = d.decide(&keys[i], nil)
			out[i].Prefix = netip.Prefix{}
			continue
		}
		c := &b.cur[i]
		c.Reset(s, &keys[i].Packet)
		if j := d.walk(s, c, c.Next(0), &out[i], nil); j >= 0 {
			b.at[i], b.pending[n] = j, i
			n++
		}
	}
	for n > 0 {
		table := b.cur[b.pending[0]].Table(s.Rule(b.at[b.pending[0]]))
		m, left := 0, 0
		for _, i := range b.pending[:n] {
			if b.cur[i].Table(s.Rule(b.at[i])) == table {
				b.looking[m], b.dsts[m], b.srcs[m] = i, keys[i].Dst, keys[i].Src
				m++
			} else {
				b.pending[left] = i
				left++
			}
		}
		t := d.Tables.Get(table)
		t.LookupKeys(b.dsts[:m], b.srcs[:m], b.routes[:m], b.choice[:m])
		for q, i := range b.looking[:m] {
			rule := s.Rule(b.at[i])
			a := b.routes[q]
			choose := b.choice[q] && keys[i].Iif > 0
			if a != nil && (rule.Suppress || choose) {
				var score fib6.Score
				if choose {
					h := howOf(&keys[i], s.Loopback())
					score = h.score
				}
				var pfx netip.Prefix
				pfx, a, _ = t.Get(netip.AddrFrom16(b.dsts[q]), srcOf(&b.srcs[q]), score)
				if a != nil && suppressed(rule, a, pfx.Bits()) {
					a = nil
				}
			}
			if a != nil && d.settle(&out[i], rule, table, a, &keys[i], &how{}) {
				continue
			}
			c := &b.cur[i]
			if j := d.walk(s, c, c.Next(b.at[i]+1), &out[i], nil); j >= 0 {
				b.at[i], b.pending[left] = j, i
				left++
			}
		}
		n = left
	}
}

func srcOf(a *[16]byte) netip.Addr {
	if *a == ([16]byte{}) {
		return netip.Addr{}
	}
	return netip.AddrFrom16(*a)
}

// domain puts the flow in its VRF, as Linux's l3mdev_update_flow: the
// VRF of the link it asks to leave by, else of the link it came in by
// (not the loopback). An Oif that is the VRF itself only names the table
// (`route get ... vrf red`, the ICMPv6 errors of its members' packets):
// it is reset, so that no rule or nexthop is matched against it.
func (d *Decider) domain(k *Key) {
	switch {
	case k.Oif != 0:
		m, t := d.Addrs.L3(k.Oif)
		if k.L3Table == 0 {
			k.L3Table = t
		}
		if m == k.Oif {
			k.Oif = 0
		}
	case k.Iif > 0 && k.L3Table == 0:
		_, k.L3Table = d.Addrs.L3(k.Iif)
	}
}

// l3cache is the VRF table of the link the last key came in by: a batch
// is one link's.
type l3cache struct {
	link  int32
	table uint32
}

func (c *l3cache) of(d *Decider, link int32) uint32 {
	if link != c.link {
		c.link = link
		_, c.table = d.Addrs.L3(link)
	}
	return c.table
}

// noRule is the rule of a decision made without the rules (DecideIn).
var noRule rules.Rule

// DecideIn is the decision for k in table id alone, without the rules:
// Linux's ip6_pol_route on one table, as seg6local's End.T and End.DT6
// look up. NoRoute if the table does not exist or has no route (or a
// throw route) for k.
func (d *Decider) DecideIn(k *Key, id uint32) Result {
	t := d.Tables.Get(id)
	if t == nil {
		return Result{Verdict: NoRoute}
	}
	h := howOf(k, d.Rules.Load().Loopback())
	var score fib6.Score
	if h.link != 0 {
		score = h.score
	}
	pfx, a, ok := t.Get(netip.AddrFrom16(k.Dst), srcOf(&k.Src), score)
	var r Result
	if !ok || !d.settle(&r, &noRule, id, a, k, &h) {
		return Result{Verdict: NoRoute}
	}
	r.Prefix = pfx
	return r
}
