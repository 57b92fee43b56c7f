package fib6

import "runtime"

// A bulk load whose prefixes come out of order (a file or feed that is not
// sorted) keeps them in a buffer, indexed by a hash of prefix, until
// something needs the trie; settling then sorts the buffer (a radix sort
// costs a fraction of what walking the trie per prefix costs) and builds it
// bottom-up. The index answers at once what an insert, a replace or a get
// of one prefix must know, so every change still has its answer when it is
// made.

// bulkBuf is the out-of-order buffer: the prefixes in arrival order, in
// chunks (a growing slice would copy itself and leave five times the
// table's size to the collector), and idx, an open addressed index of
// them. A slot of idx is 0 (empty) or a fingerprint of the hash in the
// top byte and the entry's index + 1 below it. A prefix names its value
// by its index in sets, the load's distinct values (a table has few: its
// routes' attributes are interned), so the prefixes hold no pointers: the
// collector skips them, the sort moves them without write barriers, and
// the build reads values from a few cache lines.
type bulkBuf struct {
	keys    [][]bufKey // bufChunk each, the last filling
	n       int
	idx     []uint32
	shift   uint // 64 - log2(len(idx))
	sets    []*rset
	setIdx  map[*rset]uint32
	lastSet uint32 // the index in sets of the latest value taken
}

// bufKey is a buffered prefix and its value's index in sets.
type bufKey struct {
	hi, lo    uint64
	plen, set uint32
}

const (
	bufIdxBits   = 24
	bufMax       = 1<<bufIdxBits - 1 // entries the index can name
	bufChunkBits = 12
	bufChunk     = 1 << bufChunkBits
)

func (bb *bulkBuf) key(i int) *bufKey { return &bb.keys[i>>bufChunkBits][i&(bufChunk-1)] }

// setOf returns r's index in sets, adding it if new.
func (bb *bulkBuf) setOf(r *rset) uint32 {
	if bb.sets[bb.lastSet] == r {
		return bb.lastSet
	}
	i, ok := bb.setIdx[r]
	if !ok {
		i = uint32(len(bb.sets))
		bb.sets = append(bb.sets, r)
		bb.setIdx[r] = i
	}
	bb.lastSet = i
	return i
}

func bulkHash(hi, lo uint64, plen uint32) uint64 {
	h := hi*0x9e3779b97f4a7c15 ^ lo*0xc2b2ae3d27d4eb4f ^ uint64(plen)*0x165667b19e3779f9
	h ^= h >> 32
	return h * 0xd6e8feb86659fd93
}

// find returns the index of (k, plen) in the buffer, or -1 and the empty
// slot of idx where it goes.
func (bb *bulkBuf) find(k key, plen int) (int, int) {
	h := bulkHash(k.hi, k.lo, uint32(plen))
	mask := len(bb.idx) - 1
	s := int(h >> bb.shift)
	fp := uint32(h>>(bb.shift-8)) << bufIdxBits
	for {
		v := bb.idx[s]
		if v == 0 {
			return -1, s
		}
		if v&^bufMax == fp {
			i := int(v&bufMax) - 1
			if bk := bb.key(i); bk.hi == k.hi && bk.lo == k.lo && bk.plen == uint32(plen) {
				return i, s
			}
		}
		s = (s + 1) & mask
	}
}

// add appends e, not in the buffer, at slot s of idx (from find).
func (bb *bulkBuf) add(e bulkEntry, s int) {
	// the first chunk grows, so that a small load takes little room
	if last := len(bb.keys) - 1; last < 0 || len(bb.keys[last]) == bufChunk {
		c := min(bufChunk, max(64, 2*bb.n))
		bb.keys = append(bb.keys, make([]bufKey, 0, c))
	}
	last := len(bb.keys) - 1
	bk := bufKey{hi: e.k.hi, lo: e.k.lo, plen: uint32(e.plen), set: bb.setOf(e.val)}
	bb.keys[last] = append(bb.keys[last], bk)
	bb.n++
	h := bulkHash(bk.hi, bk.lo, bk.plen)
	bb.idx[s] = uint32(h>>(bb.shift-8))<<bufIdxBits | uint32(bb.n)
	if 2*bb.n > len(bb.idx) {
		bb.index(2 * len(bb.idx))
	}
}

// index rebuilds idx with size slots (a power of two).
func (bb *bulkBuf) index(size int) {
	bb.idx = make([]uint32, size)
	bb.shift = 64
	for n := size; n > 1; n >>= 1 {
		bb.shift--
	}
	mask := size - 1
	for i := range bb.n {
		bk := bb.key(i)
		h := bulkHash(bk.hi, bk.lo, bk.plen)
		s := int(h >> bb.shift)
		for bb.idx[s] != 0 {
			s = (s + 1) & mask
		}
		bb.idx[s] = uint32(h>>(bb.shift-8))<<bufIdxBits | uint32(i+1)
	}
}

// init readies an empty buffer with an index of at least size slots.
func (bb *bulkBuf) init(size int) {
	bb.sets = []*rset{nil}
	bb.setIdx = map[*rset]uint32{}
	n := 64
	for n < size {
		n *= 2
	}
	bb.index(n)
}

// toBuffer moves the load's prefixes so far (all in order) into the
// buffer: the load goes on out of order.
func (bl *bulkLoad) toBuffer() {
	bb := &bl.buf
	bb.init(max(4*(len(bl.early)+1), 2*bl.expect))
	for _, e := range append(bl.early, bl.last) {
		_, s := bb.find(e.k, e.plen)
		bb.add(e, s)
	}
	bl.early, bl.last = nil, bulkEntry{}
}

// bufInsert is insert into the buffer: what is stored for (k, plen), or
// nil after taking val; false if the buffer is full and the load must
// settle.
func (x *trieTxn) bufInsert(k key, plen int, val *rset) (*rset, bool) {
	bb := &x.bulk.buf
	i, s := bb.find(k, plen)
	if i >= 0 {
		return bb.sets[bb.key(i).set], true
	}
	if bb.n >= bufMax {
		return nil, false
	}
	bb.add(bulkEntry{k, plen, val}, s)
	x.bulk.n++
	x.ops++
	return nil, true
}

// bufInsertOr is bufInsert, settling the load if the buffer is full.
func (x *trieTxn) bufInsertOr(k key, plen int, val *rset) (*rset, bool) {
	r, ok := x.bufInsert(k, plen, val)
	if !ok {
		x.settle()
	}
	return r, ok
}

// bufSet is set into the buffer; false if it cannot be (a delete, or a
// full buffer) and the load must settle.
func (x *trieTxn) bufSet(k key, plen int, val *rset) bool {
	if val == nil {
		return false
	}
	bb := &x.bulk.buf
	if i, _ := bb.find(k, plen); i >= 0 {
		bb.key(i).set = bb.setOf(val)
		x.ops++
		return true
	}
	_, ok := x.bufInsert(k, plen, val)
	return ok
}

func (x *trieTxn) bufGet(k key, plen int) *rset {
	bb := &x.bulk.buf
	if i, _ := bb.find(k, plen); i >= 0 {
		return bb.sets[bb.key(i).set]
	}
	return nil
}

// settleBuf builds the trie of the buffer: sorted and built bottom-up, or,
// below compactOps prefixes, replayed the incremental way in the order
// they came (as a small in-order load is). A large buffer is sorted and
// built in two halves at once, one by a helper goroutine (see split).
func (x *trieTxn) settleBuf() {
	bl := &x.bulk
	bb := bl.buf
	bl.buf = bulkBuf{}
	if bb.n < compactOps {
		ops := x.ops
		for i := range bb.n {
			x.ops = i + 1
			bk := bb.key(i)
			x.setDense(0, key{bk.hi, bk.lo}, int(bk.plen), bb.sets[bk.set])
		}
		x.ops = ops
		return
	}
	es, ends := bb.scatter()
	b := newBuilder(x.id)
	cut := 0 // the first /16 of the half the helper builds; 0 for none
	if bb.n >= splitSettle && runtime.GOMAXPROCS(0) > 1 {
		cut = splitAt(ends)
	}
	if cut == 0 {
		sortBuckets(es, ends, 0, len(ends))
		bb.build(b, es)
		x.root = asDense(b.finish())
		bl.builtOps = x.ops
		return
	}
	lo := int(ends[cut-1]) // es[lo:] is the helper's
	var shorts []bufKey    // those that reach its slots from before them
	for i := range es[:lo] {
		if es[i].plen < 8 {
			shorts = append(shorts, es[i])
		}
	}
	hb := newBuilder(x.id)
	done := make(chan struct{})
	work := func() {
		defer close(done)
		sortBuckets(es, ends, cut, len(ends))
		sortKeys(shorts, 0)
		bb.build(hb, shorts)
		bb.build(hb, es[lo:])
		hb.closeSlots()
	}
	if x.helper != nil {
		x.helper(work)
	} else {
		go work()
	}
	sortBuckets(es, ends, 0, cut)
	bb.build(b, es[:lo])
	b.closeSlots()
	<-done
	b.take(hb)
	x.root = asDense(b.finish())
	bl.builtOps = x.ops
}

// splitSettle is the size from which a buffer is built in two halves: a
// helper goroutine costs ~10 us, a full table's build ~10 ms.
const splitSettle = 1 << 15

func (bb *bulkBuf) build(b *builder, es []bufKey) {
	for i := range es {
		bk := &es[i]
		b.add(bulkEntry{key{bk.hi, bk.lo}, int(bk.plen), bb.sets[bk.set]})
	}
}

// splitAt returns the /16 at which the buckets split into two halves of
// about the same number of prefixes, at a root slot's start (a /8, so
// that each half builds its own root slots), or 0 if no split does.
func splitAt(ends []uint32) int {
	half := ends[len(ends)-1] / 2
	best, bestOff := 0, ^uint32(0)
	for s := 1; s < 256; s++ {
		at := ends[s<<8-1] // the prefixes before /8 s
		off := max(at, half) - min(at, half)
		if at > 0 && at < ends[len(ends)-1] && off < bestOff {
			best, bestOff = s<<8, off
		}
	}
	return best
}

// scatter moves the prefixes out of the chunks into one array, grouped
// by their top two bytes (a table's prefixes spread over a few thousand
// /16s): the first pass of the radix sort; ends[d] is where /16 d's
// bucket ends.
func (bb *bulkBuf) scatter() ([]bufKey, []uint32) {
	next := make([]uint32, 1<<16)
	for _, c := range bb.keys {
		for i := range c {
			next[c[i].hi>>48]++
		}
	}
	sum := uint32(0)
	for d, n := range next {
		next[d] = sum
		sum += n
	}
	es := make([]bufKey, bb.n)
	for _, c := range bb.keys {
		for i := range c {
			d := c[i].hi >> 48
			es[next[d]] = c[i]
			next[d]++
		}
	}
	return es, next
}

// sortBuckets sorts the buckets of /16s from to to (scatter's) in place.
func sortBuckets(es []bufKey, ends []uint32, from, to int) {
	start := uint32(0)
	if from > 0 {
		start = ends[from-1]
	}
	for _, end := range ends[from:to] {
		if end-start > 1 {
			sortKeys(es[start:end], 2)
		}
		start = end
	}
}

// sorted returns the prefixes in prefix order.
func (bb *bulkBuf) sorted() []bufKey {
	es, ends := bb.scatter()
	sortBuckets(es, ends, 0, len(ends))
	return es
}

// digit is byte d of a prefix's sort key: the address's 16 bytes, then
// the length (prefix order).
func (e *bufKey) digit(d int) uint8 {
	switch {
	case d < 8:
		return uint8(e.hi >> (56 - 8*d))
	case d < 16:
		return uint8(e.lo >> (120 - 8*d))
	}
	return uint8(e.plen)
}

func (e *bufKey) less(f *bufKey) bool {
	switch {
	case e.hi != f.hi:
		return e.hi < f.hi
	case e.lo != f.lo:
		return e.lo < f.lo
	}
	return e.plen < f.plen
}

// sortKeys sorts es, which agree on the digits before d, in prefix
// order: an in-place most-significant-digit radix sort (American flag
// sort), insertion sort for small buckets. The prefixes are distinct.
func sortKeys(es []bufKey, d int) {
	for len(es) > 32 && d <= 16 {
		var count [256]uint32
		for i := range es {
			count[es[i].digit(d)]++
		}
		if int(count[es[0].digit(d)]) == len(es) {
			d++ // one bucket: no pass needed
			continue
		}
		var next, end [256]uint32
		sum := uint32(0)
		for c, n := range count {
			next[c] = sum
			sum += n
			end[c] = sum
		}
		for c := range 256 {
			for next[c] < end[c] {
				v := es[next[c]]
				for dc := v.digit(d); int(dc) != c; dc = v.digit(d) {
					v, es[next[dc]] = es[next[dc]], v
					next[dc]++
				}
				es[next[c]] = v
				next[c]++
			}
		}
		if d == 16 {
			return
		}
		start := uint32(0)
		for c := range 256 {
			if end[c]-start > 1 {
				sortKeys(es[start:end[c]], d+1)
			}
			start = end[c]
		}
		return
	}
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].less(&es[j-1]); j-- {
			es[j-1], es[j] = es[j], es[j-1]
		}
	}
}
