package rules

import (
	"math/bits"
	"slices"
)

// The classifier finds the rules a packet may match without trying each.
// Each selector a rule can have is a dimension; in each dimension the
// values a packet can carry fall into classes (a link, a protocol, an
// elementary interval of ports or addresses between the rules' range
// ends), and each class has a bitset of the rules a packet of that class
// matches in that dimension. A packet's candidates are the AND of its
// classes' bitsets, walked from the lowest bit: the rules' order, exactly.
// Rules with `not` are candidates in every class and checked one by one.
// Only dimensions some rule selects on are looked at, and a small or
// unselective set is walked linearly.

const (
	dimIif = iota
	dimOif
	dimProto
	dimDSField
	dimSport
	dimDport
	dimSrc
	dimDst
	dimL3mdev
	nDims
)

// linearMax is the size up to which a set is walked rule by rule: a few
// exact checks cost less than classifying.
const linearMax = 8

type dimension struct {
	which int
	base  int32    // the arena offset of class 0's bitset
	class []uint16 // value dimensions: the class of each value (0: no rule names it)
	ports []uint32 // port dimensions: the first port of each interval
	hi    []uint64 // address dimensions: the first address of each interval
	lo    []uint64
	noSrc int32 // the source dimension: the class of a packet without one
}

type classifier struct {
	words    int
	dims     []dimension
	arena    []uint64
	inverted []uint64 // rules checked exactly (`not`)
	ones     []uint64 // every rule: the bitset of a dimension not in use
}

// compile builds the classifier of rules, which select in the
// dimensions used; nil if they are better walked linearly.
func compile(rules []*entry, used uint16) *classifier {
	if len(rules) <= linearMax || used == 0 {
		return nil
	}
	cl := &classifier{}
	cl.words = (len(rules) + 63) / 64
	cl.inverted = make([]uint64, cl.words)
	cl.ones = make([]uint64, cl.words)
	for w := range cl.ones {
		cl.ones[w] = ^uint64(0)
	}
	for i, e := range rules {
		if e.Invert {
			cl.inverted[i>>6] |= 1 << (i & 63)
		}
	}
	for d := range nDims {
		if used&(1<<d) != 0 {
			cl.addDim(d, rules)
		}
	}
	return cl
}

// dimsOf is the set of dimensions rule e selects in.
func dimsOf(e *entry) (dims uint16) {
	for d := range nDims {
		if selector(e, d) {
			dims |= 1 << d
		}
	}
	return dims
}

// selector reports whether rule e selects in dimension d (not counting
// `not` rules, which are candidates everywhere).
func selector(e *entry, d int) bool {
	if e.Invert {
		return false
	}
	switch d {
	case dimIif:
		return e.iif != 0
	case dimOif:
		return e.oif != 0
	case dimProto:
		return e.IPProto != 0
	case dimDSField:
		return e.DSField != 0
	case dimSport:
		return e.Sport.Set()
	case dimDport:
		return e.Dport.Set()
	case dimSrc:
		return e.src.set()
	case dimL3mdev:
		return e.L3mdev
	}
	return e.dst.set()
}

// u128 is a point in a dimension's value space, wide enough for an
// address and one past the last.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

// span is the range of values rule e selects in a range dimension:
// [from, to), with end false when it runs to the end of the space.
func span(e *entry, d int) (from, to u128, end bool) {
	switch d {
	case dimSport, dimDport:
		p := e.Sport
		if d == dimDport {
			p = e.Dport
		}
		return u128{0, uint64(p.Lo)}, u128{0, uint64(p.Hi) + 1}, true
	}
	p := e.src
	if d == dimDst {
		p = e.dst
	}
	to = u128{p.hi | ^p.mhi, p.lo | ^p.mlo} // the last address
	to.lo++
	if to.lo == 0 {
		to.hi++
	}
	return u128{p.hi, p.lo}, to, to != (u128{})
}

func (cl *classifier) addDim(d int, rules []*entry) {
	any := make([]uint64, cl.words)
	var named []int
	for i, e := range rules {
		if selector(e, d) {
			named = append(named, i)
		} else if !(d == dimIif && e.iif < 0 && !e.Invert) && !(d == dimOif && e.oif < 0 && !e.Invert) {
			any[i>>6] |= 1 << (i & 63) // a detached link matches nothing
		}
	}
	if len(named) == 0 {
		return
	}
	dim := dimension{which: d, base: int32(len(cl.arena))}
	switch d {
	case dimIif, dimOif, dimProto, dimDSField, dimL3mdev:
		cl.valueDim(&dim, rules, named, any)
	default:
		cl.rangeDim(&dim, rules, named, any)
	}
	cl.dims = append(cl.dims, dim)
}

func value(e *entry, d int) int {
	switch d {
	case dimIif:
		return int(e.iif)
	case dimOif:
		return int(e.oif)
	case dimProto:
		return int(e.IPProto)
	case dimL3mdev:
		return 1
	}
	return int(e.DSField)
}

func (cl *classifier) valueDim(dim *dimension, rules []*entry, named []int, any []uint64) {
	top := 0
	for _, i := range named {
		top = max(top, value(rules[i], dim.which))
	}
	dim.class = make([]uint16, top+1)
	cl.arena = append(cl.arena, any...)
	classes := 1
	for _, i := range named {
		v := value(rules[i], dim.which)
		if v < 0 {
			continue // detached: in no class
		}
		if dim.class[v] == 0 {
			dim.class[v] = uint16(classes)
			classes++
			cl.arena = append(cl.arena, any...)
		}
		at := int(dim.base) + int(dim.class[v])*cl.words
		cl.arena[at+i>>6] |= 1 << (i & 63)
	}
}

// rangeDim cuts the space at every end of a rule's range; each interval
// between two cuts is a class, whose rules are those whose range covers
// it: the previous interval's, give or take the ranges that start or end
// at the cut.
func (cl *classifier) rangeDim(dim *dimension, rules []*entry, named []int, any []uint64) {
	type cut struct {
		at   u128
		rule int
		on   bool
	}
	cuts := []cut{{rule: -1}} // the first interval starts at 0
	for _, i := range named {
		from, to, end := span(rules[i], dim.which)
		cuts = append(cuts, cut{from, i, true})
		if end && !(dim.which <= dimDport && to.lo > 0xffff) {
			cuts = append(cuts, cut{to, i, false})
		}
	}
	slices.SortStableFunc(cuts, func(a, b cut) int {
		switch {
		case a.at.less(b.at):
			return -1
		case b.at.less(a.at):
			return 1
		}
		return 0
	})
	cur := make([]uint64, cl.words)
	for k := 0; k < len(cuts); {
		at := cuts[k].at
		for ; k < len(cuts) && cuts[k].at == at; k++ {
			switch c := cuts[k]; {
			case c.rule < 0:
			case c.on:
				cur[c.rule>>6] |= 1 << (c.rule & 63)
			default:
				cur[c.rule>>6] &^= 1 << (c.rule & 63)
			}
		}
		if dim.which <= dimDport {
			dim.ports = append(dim.ports, uint32(at.lo))
		} else {
			dim.hi, dim.lo = append(dim.hi, at.hi), append(dim.lo, at.lo)
		}
		for w := range cur {
			cl.arena = append(cl.arena, any[w]|cur[w])
		}
	}
	if dim.which == dimSrc {
		dim.noSrc = int32(len(dim.hi))
		cl.arena = append(cl.arena, any...)
	}
}

// classify finds the packet's class in each dimension in use.
func (cl *classifier) classify(c *Cursor) {
	c.n = len(cl.dims)
	for j := range cl.dims {
		dim := &cl.dims[j]
		var k int
		switch dim.which {
		case dimIif:
			k = valueClass(dim.class, int(c.iif))
		case dimOif:
			k = valueClass(dim.class, int(c.p.Oif))
		case dimProto:
			k = valueClass(dim.class, int(c.p.Proto))
		case dimDSField:
			k = valueClass(dim.class, int(c.p.DSField&^3))
		case dimSport:
			k = portClass(dim.ports, c.p.Sport)
		case dimDport:
			k = portClass(dim.ports, c.p.Dport)
		case dimSrc:
			if !c.hasSrc {
				k = int(dim.noSrc)
				break
			}
			k = addrClass(dim.hi, dim.lo, c.shi, c.slo)
		case dimDst:
			k = addrClass(dim.hi, dim.lo, c.dhi, c.dlo)
		case dimL3mdev:
			k = valueClass(dim.class, b2i(c.p.L3Table != 0))
		}
		c.off[j] = dim.base + int32(k*cl.words)
	}
}

func valueClass(class []uint16, v int) int {
	if uint(v) < uint(len(class)) {
		return int(class[v])
	}
	return 0
}

// portClass is the interval port falls in: the last that starts at or
// below it.
func portClass(starts []uint32, port uint16) int {
	x := uint32(port)
	lo, n := 0, len(starts)
	for n > 1 {
		h := n / 2
		if starts[lo+h] <= x {
			lo += h
		}
		n -= h
	}
	return lo
}

func addrClass(his, los []uint64, hi, lo uint64) int {
	at, n := 0, len(his)
	for n > 1 {
		h := n / 2
		m := at + h
		if his[m] < hi || his[m] == hi && los[m] <= lo {
			at = m
		}
		n -= h
	}
	return at
}

// next is the first rule at or after i in every class of the packet that
// it matches. Up to four dimensions go through one loop (the missing ones
// read a bitset of all ones), so that the words are ANDed without an
// inner loop.
func (cl *classifier) next(c *Cursor, i int) int {
	if i >= len(c.s.flat) {
		return -1
	}
	if c.n > 4 || cl.words == 1 {
		return cl.nextMany(c, i)
	}
	var b [4][]uint64
	for d := range b {
		b[d] = cl.ones
		if d < c.n {
			b[d] = cl.arena[c.off[d] : int(c.off[d])+cl.words]
		}
	}
	b0 := b[0]
	b1, b2, b3 := b[1][:len(b0)], b[2][:len(b0)], b[3][:len(b0)]
	first := ^uint64(0) << (uint(i) & 63)
	for w := i >> 6; w < len(b0); w++ {
		x := b0[w] & b1[w] & b2[w] & b3[w] & first
		first = ^uint64(0)
		if x != 0 {
			if j := cl.pick(c, w, x); j >= 0 {
				return j
			}
		}
	}
	return -1
}

func (cl *classifier) nextMany(c *Cursor, i int) int {
	arena, off := cl.arena, c.off[:c.n]
	first := ^uint64(0) << (uint(i) & 63)
	for w := i >> 6; w < cl.words; w++ {
		x := first
		first = ^uint64(0)
		for _, o := range off {
			x &= arena[int(o)+w]
		}
		if x != 0 {
			if j := cl.pick(c, w, x); j >= 0 {
				return j
			}
		}
	}
	return -1
}

// pick is the first candidate of word w, x, that the packet matches:
// rules with `not` are checked one by one.
func (cl *classifier) pick(c *Cursor, w int, x uint64) int {
	for ; x != 0; x &= x - 1 {
		j := w<<6 | bits.TrailingZeros64(x)
		if cl.inverted[w]&(1<<(j&63)) == 0 || c.s.flat[j].matches(c) {
			return j
		}
	}
	return -1
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
