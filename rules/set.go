package rules

import (
	"encoding/binary"
	"slices"

	"urouter/fib6"
)

// prefix128 is a prefix as two masked 64-bit words, for matching without
// byte loops.
type prefix128 struct{ hi, lo, mhi, mlo uint64 }

func prefixOf(r *Rule, src bool) prefix128 {
	p, bits := r.Dst, r.dstBits()
	if src {
		p, bits = r.Src, r.srcBits()
	}
	if bits == 0 {
		return prefix128{}
	}
	a := p.Addr().As16()
	var x prefix128
	x.mhi, x.mlo = masks(bits)
	x.hi = binary.BigEndian.Uint64(a[:8]) & x.mhi
	x.lo = binary.BigEndian.Uint64(a[8:]) & x.mlo
	return x
}

// masks are the two words of a prefix length's mask.
func masks(bits int) (hi, lo uint64) {
	if bits >= 64 {
		return ^uint64(0), ^uint64(0) << (128 - bits)
	}
	return ^uint64(0) << (64 - bits), 0
}

func (p *prefix128) contains(hi, lo uint64) bool {
	return (hi^p.hi)&p.mhi == 0 && (lo^p.lo)&p.mlo == 0
}

func (p *prefix128) set() bool { return p.mhi != 0 }

// entry is a published rule: the rule as given and what it resolved to.
// Entries are immutable; a snapshot shares those that did not change with
// the one before.
type entry struct {
	Rule
	src, dst prefix128
	// iif and oif are the indices of the links the rule names: 0 for
	// none named, -1 for a link that does not exist (detached).
	iif, oif int32
	dims     uint16 // the classifier's dimensions the rule selects in
}

func newEntry(r *Rule, resolve func(string) int32) *entry {
	e := &entry{Rule: *r, src: prefixOf(r, true), dst: prefixOf(r, false)}
	e.iif, e.oif = linkIndex(r.Iif, resolve), linkIndex(r.Oif, resolve)
	e.dims = dimsOf(e)
	return e
}

func linkIndex(name string, resolve func(string) int32) int32 {
	if name == "" {
		return 0
	}
	if resolve != nil {
		if i := resolve(name); i > 0 {
			return i
		}
	}
	return -1
}

// matches is Linux's fib_rule_match and fib6_rule_match.
func (e *entry) matches(c *Cursor) bool { return (e.miss(c) == MissNone) != e.Invert }

// Set is an immutable rule set, in the order packets meet it: by
// preference, and rules of one preference in the order they came.
type Set struct {
	seq seq
	// flat is every rule in one slice, for the classifier and short
	// walks; nil for a long set whose rules select nothing (a walk of it
	// stops at its first rule).
	flat []*entry
	// target is each goto rule's target: the index of the first rule of
	// its target preference, -1 while there is none (unresolved); nil
	// when the set has no gotos.
	target   []int32
	loopback int32
	cls      *classifier // nil: walk linearly
}

// Default is Linux's IPv6 rule set: 0 `from all lookup local`, 32766
// `from all lookup main` (IPv6 has no rule for table default).
func Default() []Rule {
	return []Rule{
		{Pref: 0, Action: ToTable, Table: fib6.TableLocal, Protocol: ProtoKernel},
		{Pref: 32766, Action: ToTable, Table: fib6.TableMain, Protocol: ProtoKernel},
	}
}

// Loopback is the index of the loopback link, which the router's own
// packets come in by.
func (s *Set) Loopback() int32 { return s.loopback }

// ProtoKernel is the protocol of rules the router made itself.
const ProtoKernel = 2

func newSet(q seq, loopback int32) *Set {
	s := &Set{seq: q, loopback: loopback}
	dims, gotos := q.summary()
	if q.len() <= linearMax || dims != 0 || gotos > 0 {
		s.flat = q.flat()
	}
	if gotos > 0 {
		s.target = make([]int32, len(s.flat))
		for i, e := range s.flat {
			s.target[i] = -1
			if e.Action != Goto {
				continue
			}
			// the first rule of the target's preference (rules are by preference)
			if t, ok := slices.BinarySearchFunc(s.flat, e.Target, func(e *entry, p uint32) int { return cmpU32(e.Pref, p) }); ok {
				s.target[i] = int32(t)
			}
		}
	}
	s.cls = compile(s.flat, dims)
	return s
}

func (s *Set) at(i int) *entry {
	if s.flat != nil {
		return s.flat[i]
	}
	return s.seq.at(i)
}

// Len is the number of rules.
func (s *Set) Len() int { return s.seq.len() }

// Rule is the i-th rule. It is shared: do not change it.
func (s *Set) Rule(i int) *Rule { return &s.at(i).Rule }

// Target is the index of the rule a goto rule jumps to, -1 if its target
// does not exist (the rule is skipped).
func (s *Set) Target(i int) int {
	if s.target == nil {
		return -1
	}
	return int(s.target[i])
}

// State is what a rule resolved to, as `rule show` marks it.
type State struct {
	IifDetached, OifDetached bool // the link named does not exist
	Unresolved               bool // a goto whose target does not exist
}

// State is the i-th rule's.
func (s *Set) State(i int) State {
	e := s.at(i)
	return State{IifDetached: e.iif < 0, OifDetached: e.oif < 0, Unresolved: e.Action == Goto && s.Target(i) < 0}
}

// Cursor walks the rules one packet matches, in order. Its zero value is
// unusable: Reset it with a set and a packet. A Cursor allocates nothing.
type Cursor struct {
	s                  *Set
	p                  Packet
	dhi, dlo, shi, slo uint64
	iif                int32
	hasSrc             bool
	n                  int // classifier dimensions in use; -1: walk linearly
	off                [nDims]int32
	// Trace, when set, makes Next walk every rule, and hear of each
	// whether the packet matches it (as `route get` explains itself).
	Trace func(i int, matched bool)
}

// Reset points c at packet p of set s, and classifies p.
func (c *Cursor) Reset(s *Set, p *Packet) {
	c.s, c.p, c.Trace = s, *p, nil
	c.dhi, c.dlo = binary.BigEndian.Uint64(p.Dst[:8]), binary.BigEndian.Uint64(p.Dst[8:])
	c.shi, c.slo = binary.BigEndian.Uint64(p.Src[:8]), binary.BigEndian.Uint64(p.Src[8:])
	c.hasSrc = c.shi|c.slo != 0
	c.iif = p.Iif
	if c.iif == 0 {
		c.iif = s.loopback
	}
	if s.cls == nil {
		c.n = -1
	} else {
		s.cls.classify(c)
	}
}

// Table is the table rule r looks the packet up in: an l3mdev rule's is
// its VRF's.
func (c *Cursor) Table(r *Rule) uint32 {
	if r.L3mdev {
		return c.p.L3Table
	}
	return r.Table
}

// Next is the index of the first rule at or after i that the packet
// matches, -1 if none.
func (c *Cursor) Next(i int) int {
	if c.n < 0 || c.Trace != nil {
		return c.linear(i)
	}
	return c.s.cls.next(c, i)
}

// linear is Next without the classifier: the plain walk the classifier
// must agree with.
func (c *Cursor) linear(i int) int {
	s := c.s
	if s.flat != nil {
		for ; i < len(s.flat); i++ {
			if c.try(i, s.flat[i]) {
				return i
			}
		}
		return -1
	}
	q := &s.seq
	for n := q.len(); i < n; {
		k := q.blockOf(i)
		for _, id := range q.blocks[k].ids[i-int(q.first[k]):] {
			if c.try(i, q.arena[id]) {
				return i
			}
			i++
		}
	}
	return -1
}

func (c *Cursor) try(i int, e *entry) bool {
	ok := e.matches(c)
	if c.Trace != nil {
		c.Trace(i, ok)
	}
	return ok
}

// Miss is the selector a packet fails.
type Miss uint8

const (
	MissNone    Miss = iota // the packet matches
	MissIif                 // it came in by another link (or the rule's does not exist)
	MissOif                 // it asks for another link out
	MissDst                 // its destination is outside the rule's
	MissSrc                 // its source is outside the rule's
	MissNoSrc               // it has no source and the rule selects one
	MissDSField             // its traffic class differs
	MissProto               // its transport protocol differs
	MissSport               // its source port is outside the range
	MissDport               // its destination port is outside the range
	MissL3mdev              // an l3mdev rule: it is in no VRF
	MissNot                 // every selector matches, and the rule says `not`
)

// Why is the selector of rule i the packet fails, MissNone if it matches.
func (c *Cursor) Why(i int) Miss {
	e := c.s.at(i)
	m := e.miss(c)
	switch {
	case !e.Invert:
		return m
	case m == MissNone:
		return MissNot
	}
	return MissNone
}

func (e *entry) miss(c *Cursor) Miss {
	p := &c.p
	switch {
	case e.iif != 0 && e.iif != c.iif:
		return MissIif
	case e.oif != 0 && e.oif != p.Oif:
		return MissOif
	case e.dst.set() && !e.dst.contains(c.dhi, c.dlo):
		return MissDst
	case e.src.set() && !c.hasSrc:
		return MissNoSrc
	case e.src.set() && !e.src.contains(c.shi, c.slo):
		return MissSrc
	case e.DSField != 0 && e.DSField != p.DSField&^3:
		return MissDSField
	case e.IPProto != 0 && e.IPProto != p.Proto:
		return MissProto
	case e.Sport.Set() && !e.Sport.contains(p.Sport):
		return MissSport
	case e.Dport.Set() && !e.Dport.contains(p.Dport):
		return MissDport
	case e.L3mdev && p.L3Table == 0:
		return MissL3mdev
	}
	return MissNone
}
