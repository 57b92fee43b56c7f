package rules

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
	dims  uint8 // the dimensions its rules select in
	gotos int   // how many of its rules are gotos
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

// with returns s with block k replaced by the blocks in bs.
func (s seq) with(k int, bs ...*block) seq {
	out := seq{blocks: make([]*block, 0, len(s.blocks)+1)}
	out.blocks = append(append(append(out.blocks, s.blocks[:k]...), bs...), s.blocks[k+1:]...)
	out.index()
	return out
}

// insert returns s with e at index i.
func (s seq) insert(i int, e *entry) seq {
	if len(s.blocks) == 0 {
		return seqOf([]*entry{e})
	}
	k := len(s.blocks) - 1
	if i < s.len() {
		k = s.blockOf(i)
	}
	old := s.blocks[k].e
	at := i - int(s.first[k])
	es := make([]*entry, 0, len(old)+1)
	es = append(append(append(es, old[:at]...), e), old[at:]...)
	if len(es) <= blockMax {
		return s.with(k, newBlock(es))
	}
	h := len(es) / 2
	return s.with(k, newBlock(es[:h:h]), newBlock(es[h:]))
}

// remove returns s without rule i.
func (s seq) remove(i int) seq {
	k := s.blockOf(i)
	old := s.blocks[k].e
	if len(old) == 1 {
		return s.with(k)
	}
	at := i - int(s.first[k])
	es := make([]*entry, 0, len(old)-1)
	return s.with(k, newBlock(append(append(es, old[:at]...), old[at+1:]...)))
}

// replace returns s with rule i replaced by e.
func (s seq) replace(i int, e *entry) seq {
	k := s.blockOf(i)
	es := append([]*entry(nil), s.blocks[k].e...)
	es[i-int(s.first[k])] = e
	return s.with(k, newBlock(es))
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

// search is the index of the first rule of preference p or above.
func (s seq) search(p uint32) int {
	lo, hi := 0, s.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.at(m).Pref < p {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
