package rules

import "slices"

// seq is the rules in order as a persistent sequence, so that a change
// copies one block of the order and the block index rather than every
// rule (a rule added to a set of a thousand costs what it costs in a set
// of ten). The entries live in an append-only arena that snapshots share
// (a snapshot sees the prefix it was published with); the blocks hold
// the entries' arena indices, not pointers, so copying one leaves the
// garbage collector nothing to scan in a heap full of routes. Each block
// knows the classifier dimensions and gotos of its rules, so a snapshot
// learns whether it needs a classifier without reading every rule.
type seq struct {
	arena  []*entry
	blocks []*block
	first  []int32 // the index of each block's first rule; one more: the length
}

type block struct {
	ids   []uint32 // arena indices, in order
	dims  uint16   // the dimensions its rules select in
	gotos int      // how many of its rules are gotos
	gen   uint64   // the transaction that made it (it may change it in place)
}

// blockMax is the most entries a block holds; a fuller one splits.
const blockMax = 64

func (s *seq) newBlock(ids []uint32, gen uint64) *block {
	b := &block{ids: ids, gen: gen}
	for _, id := range ids {
		e := s.arena[id]
		b.dims |= e.dims
		if e.Action == Goto {
			b.gotos++
		}
	}
	return b
}

func seqOf(es []*entry) seq {
	s := seq{arena: slices.Clip(es)}
	for i := 0; i < len(es); i += blockMax / 2 {
		ids := make([]uint32, 0, blockMax/2)
		for j := i; j < min(len(es), i+blockMax/2); j++ {
			ids = append(ids, uint32(j))
		}
		s.blocks = append(s.blocks, s.newBlock(ids, 0))
	}
	s.first = make([]int32, len(s.blocks)+1)
	s.reindex(0)
	return s
}

// reindex recounts the first rule of each block from block k on.
func (s *seq) reindex(k int) {
	for ; k < len(s.blocks); k++ {
		s.first[k+1] = s.first[k] + int32(len(s.blocks[k].ids))
	}
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
	return s.arena[s.blocks[k].ids[i-int(s.first[k])]]
}

// flat is every rule in order, in one new slice.
func (s seq) flat() []*entry {
	out := make([]*entry, 0, s.len())
	for _, b := range s.blocks {
		for _, id := range b.ids {
			out = append(out, s.arena[id])
		}
	}
	return out
}

// summary is what the blocks say of all the rules.
func (s seq) summary() (dims uint16, gotos int) {
	for _, b := range s.blocks {
		dims |= b.dims
		gotos += b.gotos
	}
	return dims, gotos
}

// search is the index of the first rule of preference p or above: the
// first block that ends at or above p, then the rule in it.
func (s seq) search(p uint32) int {
	k, _ := slices.BinarySearchFunc(s.blocks, p, func(b *block, p uint32) int {
		return cmpU32(s.arena[b.ids[len(b.ids)-1]].Pref, p)
	})
	if k == len(s.blocks) {
		return s.len()
	}
	ids := s.blocks[k].ids
	j, _ := slices.BinarySearchFunc(ids, p, func(id uint32, p uint32) int { return cmpU32(s.arena[id].Pref, p) })
	return int(s.first[k]) + j
}

// editor changes a seq for a transaction: what it made since it began
// (blocks stamped with its gen, and the index once it copied it) is
// unpublished and changed in place; the rest is copied before a change.
// New entries are appended to the arena, beyond what any snapshot sees.
type editor struct {
	seq
	gen       uint64
	ownsIndex bool
}

func (x *editor) own(k int) *block {
	if !x.ownsIndex {
		x.blocks = slices.Clone(x.blocks)
		x.first = slices.Clone(x.first)
		x.ownsIndex = true
	}
	b := x.blocks[k]
	if b.gen != x.gen {
		b = &block{ids: append(make([]uint32, 0, len(b.ids)+1), b.ids...), dims: b.dims, gotos: b.gotos, gen: x.gen}
		x.blocks[k] = b
	}
	return b
}

func (x *editor) add(e *entry) uint32 {
	x.arena = append(x.arena, e)
	return uint32(len(x.arena) - 1)
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
	b.ids = slices.Insert(b.ids, i-int(x.first[k]), x.add(e))
	b.dims |= e.dims
	if e.Action == Goto {
		b.gotos++
	}
	if len(b.ids) > blockMax {
		h := len(b.ids) / 2
		left, right := x.newBlock(b.ids[:h:h], x.gen), x.newBlock(slices.Clone(b.ids[h:]), x.gen)
		x.blocks[k] = left
		x.blocks = slices.Insert(x.blocks, k+1, right)
		x.first = append(x.first, 0)
	}
	x.reindex(k)
}

// remove takes out rule i (its entry stays in the arena until a compact).
func (x *editor) remove(i int) {
	k := x.blockOf(i)
	b := x.own(k)
	at := i - int(x.first[k])
	if ids := slices.Delete(b.ids, at, at+1); len(ids) == 0 {
		x.blocks = slices.Delete(x.blocks, k, k+1)
		x.first = x.first[:len(x.blocks)+1]
	} else {
		*b = *x.newBlock(ids, x.gen)
	}
	x.reindex(k)
}

// replace puts e in the place of rule i.
func (x *editor) replace(i int, e *entry) {
	k := x.blockOf(i)
	b := x.own(k)
	b.ids[i-int(x.first[k])] = x.add(e)
	*b = *x.newBlock(b.ids, x.gen)
}

// compact drops the arena's dead entries once they outnumber the live
// ones: a snapshot does not keep removed rules alive for long.
func (x *editor) compact() {
	if n := x.len(); len(x.arena) > 2*n+64 {
		*x = editor{seq: seqOf(x.flat()), gen: x.gen}
	}
}
