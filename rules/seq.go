package rules

import "slices"

// seq is the rules in order as a persistent sequence: blocks of entries,
// shared between snapshots, so that a change copies one block and the
// block index rather than every rule (a rule added to a set of a thousand
// costs the same as to a set of ten, and leaves little garbage for the
// collector to find in a heap full of routes). Each block knows the
// classifier dimensions and gotos of its rules, so a snapshot learns
// whether it needs a classifier without reading every rule.
type seq struct {
	blocks []*block
	first  []int32 // the index of each block's first rule; one more: the length
}

type block struct {
	e     []*entry
	dims  uint8  // the dimensions its rules select in
	gotos int    // how many of its rules are gotos
	gen   uint64 // the transaction that made it (it may change it in place)
}

// blockMax is the most entries a block holds; a fuller one splits.
const blockMax = 64

func newBlock(es []*entry) *block {
	b := &block{e: es}
	for _, e := range es {
		b.dims |= e.dims
		if e.Action == Goto {
			b.gotos++
		}
	}
	return b
}

func seqOf(es []*entry) seq {
	var s seq
	for i := 0; i < len(es); i += blockMax / 2 {
		s.blocks = append(s.blocks, newBlock(es[i:min(len(es), i+blockMax/2):min(len(es), i+blockMax/2)]))
	}
	s.index()
	return s
}

func (s *seq) index() {
	s.first = make([]int32, len(s.blocks)+1)
	n := 0
	for k, b := range s.blocks {
		s.first[k] = int32(n)
		n += len(b.e)
	}
	s.first[len(s.blocks)] = int32(n)
}

func (s seq) len() int {
	if len(s.first) == 0 {
		return 0
	}
	return int(s.first[len(s.first)-1])
}

// blockOf is the block that holds rule i (0 <= i < len).
func (s seq) blockOf(i int) int {
	lo, n := 0, len(s.blocks)
	for n > 1 {
		h := n / 2
		if int(s.first[lo+h]) <= i {
			lo += h
		}
		n -= h
	}
	return lo
}

func (s seq) at(i int) *entry {
	k := s.blockOf(i)
	return s.blocks[k].e[i-int(s.first[k])]
}

// editor changes a seq for a transaction: what it made since it began
// (blocks stamped with its gen, and the index once it copied it) is
// unpublished and changed in place; the rest is copied before a change.
// So a batch of changes in one transaction costs little more than the
// changes, and one change alone copies a block and the index.
type editor struct {
	seq
	gen       uint64
	ownsIndex bool
}

func (x *editor) own(k int) *block {
	if !x.ownsIndex {
		x.blocks = append([]*block(nil), x.blocks...)
		x.first = append([]int32(nil), x.first...)
		x.ownsIndex = true
	}
	b := x.blocks[k]
	if b.gen != x.gen {
		b = &block{e: append(make([]*entry, 0, len(b.e)+1), b.e...), dims: b.dims, gotos: b.gotos, gen: x.gen}
		x.blocks[k] = b
	}
	return b
}

// reindex recounts the first rule of each block from block k on.
func (x *editor) reindex(k int) {
	for ; k < len(x.blocks); k++ {
		x.first[k+1] = x.first[k] + int32(len(x.blocks[k].e))
	}
}

// insert puts e at index i.
func (x *editor) insert(i int, e *entry) {
	if len(x.blocks) == 0 {
		x.blocks, x.first, x.ownsIndex = []*block{{gen: x.gen}}, []int32{0, 0}, true
	}
	k := len(x.blocks) - 1
	if i < x.len() {
		k = x.blockOf(i)
	}
	b := x.own(k)
	b.e = slices.Insert(b.e, i-int(x.first[k]), e)
	b.dims |= e.dims
	if e.Action == Goto {
		b.gotos++
	}
	if len(b.e) > blockMax {
		h := len(b.e) / 2
		left, right := newBlock(b.e[:h:h]), newBlock(append([]*entry(nil), b.e[h:]...))
		left.gen, right.gen = x.gen, x.gen
		x.blocks[k] = left
		x.blocks = slices.Insert(x.blocks, k+1, right)
		x.first = append(x.first, 0)
	}
	x.reindex(k)
}

// remove takes out rule i.
func (x *editor) remove(i int) {
	k := x.blockOf(i)
	b := x.own(k)
	at := i - int(x.first[k])
	es := slices.Delete(b.e, at, at+1)
	if len(es) == 0 {
		x.blocks = slices.Delete(x.blocks, k, k+1)
		x.first = x.first[:len(x.blocks)+1]
	} else {
		*b = *newBlock(es)
		b.gen = x.gen
	}
	x.reindex(k)
}

// replace puts e in the place of rule i.
func (x *editor) replace(i int, e *entry) {
	k := x.blockOf(i)
	b := x.own(k)
	b.e[i-int(x.first[k])] = e
	*b = *newBlock(b.e)
	b.gen = x.gen
}

// flat is every rule in order, in one new slice.
func (s seq) flat() []*entry {
	out := make([]*entry, 0, s.len())
	for _, b := range s.blocks {
		out = append(out, b.e...)
	}
	return out
}

// summary is what the blocks say of all the rules.
func (s seq) summary() (dims uint8, gotos int) {
	for _, b := range s.blocks {
		dims |= b.dims
		gotos += b.gotos
	}
	return dims, gotos
}

// search is the index of the first rule of preference p or above: the
// first block that ends at or above p, then the rule in it.
func (s seq) search(p uint32) int {
	k, _ := slices.BinarySearchFunc(s.blocks, p, func(b *block, p uint32) int { return cmpU32(b.e[len(b.e)-1].Pref, p) })
	if k == len(s.blocks) {
		return s.len()
	}
	e := s.blocks[k].e
	j, _ := slices.BinarySearchFunc(e, p, func(e *entry, p uint32) int { return cmpU32(e.Pref, p) })
	return int(s.first[k]) + j
}
