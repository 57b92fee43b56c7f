package dataplane

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"urouter/dataplane/port"
)

// Packet capture: copies of the packets a capture takes, at the packet
// path's own points (as read, before they are parsed; as the port took
// them; as dropped, with why), into the capture's ring, which its reader
// (the control socket's session streaming pcapng) empties.
//
// With no capture running and no trace armed, a batch pays one atomic
// load (the taps, nil). A capture's filter runs on every packet of the
// links it takes; a packet it takes is copied into a free slot of the
// ring, whose memory is made when the capture starts. A full
// ring loses the packet and counts it: a slow reader never slows the
// packet path, and nothing here takes a lock.

// Direction is where a captured packet was going, as pcapng's flags say.
type Direction uint8

const (
	DirIn  Direction = 1 // received on the link
	DirOut Direction = 2 // sent on the link
)

// Filter chooses the packets a capture or a trace takes (a compiled
// tcpdump expression); it is given the IPv6 packet.
type Filter interface {
	Match(p []byte) bool
}

// CaptureSpec is what a capture takes.
type CaptureSpec struct {
	Links   []*Link // the links it captures; none: every link
	In, Out bool    // the directions it takes
	Drops   bool    // the packets the router drops, with the reason
	Filter  Filter  // nil: every packet
	Snaplen int     // the bytes of a packet kept (0: all of it)
	Slots   int     // the ring's size in packets (0: as CaptureBytes says)
}

// DefaultCaptureSlots is a capture's ring at most: a few batches of every
// link at once, so that a reader that keeps up loses nothing to bursts.
const DefaultCaptureSlots = 4096

// Captured is one packet a capture took.
type Captured struct {
	Link    int32 // the link's index
	Dir     Direction
	Dropped bool
	Reason  DropReason // for Dropped
	Time    int64      // Unix nanoseconds
	Len     int        // the packet's length on the path
	Data    []byte     // what was kept of it (Snaplen)
	// the virtio_net_hdr's segmentation of a super-packet (GSOType 0:
	// none), which a capture writes whole
	GSOType uint8
	GSOSize uint16
}

// Capture is a capture running in the packet path.
type Capture struct {
	spec  CaptureSpec
	links []*Link // those it captures, in the order given
	pos   []int32 // by link index: its place in links, -1 if not captured
	ring  captureRing
	stats []CaptureStats // by place in links
	wake  chan struct{}
	// ended is closed when a link the capture names is removed (gone):
	// the capture has left the packet path
	ended chan struct{}
	gone  atomic.Pointer[Link]
}

// CaptureStats count a capture's packets of one link.
type CaptureStats struct {
	Taken atomic.Uint64 // the filter took it
	Lost  atomic.Uint64 // ... but the ring was full
}

// captureSet is the captures running: what a batch loads.
type captureSet struct {
	caps  []*Capture
	drops bool // some capture takes drops
}

// MaxCaptures bounds the captures running at once, and so the memory
// their rings hold (CaptureBytes each).
const MaxCaptures = 8

// CaptureBytes is a capture ring's memory, made when it starts: its slots
// are Snaplen bytes each (what a packet can be at most, when the snaplen
// is larger), and as many as fit, from 256 to Slots.
const CaptureBytes = 32 << 20

var ErrTooManyCaptures = fmt.Errorf("%d captures run already", MaxCaptures)

// StartCapture starts a capture; its packets are read with Next until
// StopCapture.
func (dp *Dataplane) StartCapture(spec CaptureSpec) (*Capture, error) {
	c := &Capture{spec: spec, wake: make(chan struct{}, 1), ended: make(chan struct{})}
	c.links = spec.Links
	if len(c.links) == 0 {
		c.links = dp.Links.All()
	}
	maxIndex := int32(0)
	for _, l := range c.links {
		maxIndex = max(maxIndex, l.Index)
	}
	c.pos = make([]int32, maxIndex+1)
	for i := range c.pos {
		c.pos[i] = -1
	}
	for i, l := range c.links {
		c.pos[l.Index] = int32(i)
	}
	c.stats = make([]CaptureStats, len(c.links))
	if c.spec.Snaplen <= 0 || c.spec.Snaplen > maxPacket {
		c.spec.Snaplen = maxPacket
	}
	slots := spec.Slots
	if slots <= 0 {
		slots = min(DefaultCaptureSlots, max(256, CaptureBytes/c.spec.Snaplen))
	}
	dp.tapMu.Lock()
	defer dp.tapMu.Unlock()
	cur := dp.taps.Load()
	caps := slices.Clone(cur.captures())
	if len(caps) == MaxCaptures {
		return nil, ErrTooManyCaptures
	}
	for _, l := range spec.Links {
		// removed since it was named: Remove ended the captures it found
		// before this one could be among them
		if dp.Links.ByIndex(l.Index) != l {
			return nil, fmt.Errorf("the link %s disappeared", l.Name)
		}
	}
	c.ring.init(slots, c.spec.Snaplen)
	dp.publishTaps(append(caps, c), cur.tracer())
	return c, nil
}

// StopCapture takes capture c out of the packet path: once it returns, no
// worker adds to it (what the ring holds can still be read).
func (dp *Dataplane) StopCapture(c *Capture) {
	dp.tapMu.Lock()
	cur := dp.taps.Load()
	dp.publishTaps(slices.DeleteFunc(slices.Clone(cur.captures()), func(x *Capture) bool { return x == c }), cur.tracer())
	dp.tapMu.Unlock()
	dp.synchronize() // the batches that had it are done
}

// endCaptures ends the captures that name link l, which Remove has taken
// out of the registry: they leave the packet path and their readers see
// Ended, as tcpdump's loop ends when its interface disappears. A capture
// of every link goes on with the others.
func (dp *Dataplane) endCaptures(l *Link) {
	dp.tapMu.Lock()
	defer dp.tapMu.Unlock()
	cur := dp.taps.Load()
	caps := cur.captures()
	keep := slices.DeleteFunc(slices.Clone(caps), func(c *Capture) bool {
		if !slices.Contains(c.spec.Links, l) {
			return false
		}
		c.gone.Store(l)
		close(c.ended) // once: it leaves the set here
		return true
	})
	if len(keep) < len(caps) {
		dp.publishTaps(keep, cur.tracer())
	}
}

// Ended is closed when a link c names has been removed: c has left the
// packet path (what its ring holds can still be read).
func (c *Capture) Ended() <-chan struct{} { return c.ended }

// Gone is the removed link that ended c, nil while c runs.
func (c *Capture) Gone() *Link { return c.gone.Load() }

// taps are what watches the packet path: the captures running and the
// trace armed; a batch loads them once.
type taps struct {
	caps *captureSet // nil: none
	tr   *Tracer     // nil: none armed
}

func (t *taps) captures() []*Capture {
	if t == nil || t.caps == nil {
		return nil
	}
	return t.caps.caps
}

func (t *taps) tracer() *Tracer {
	if t == nil || t.tr == nil || t.tr.left.Load() <= 0 {
		return nil
	}
	return t.tr
}

// publishTaps makes caps and tr what watches the packet path (under
// tapMu): nil when neither is, so a batch sees nothing in one load.
func (dp *Dataplane) publishTaps(caps []*Capture, tr *Tracer) {
	var set *captureSet
	if len(caps) > 0 {
		set = &captureSet{caps: caps}
		for _, c := range caps {
			set.drops = set.drops || c.spec.Drops
		}
	}
	if set == nil && tr == nil {
		dp.taps.Store(nil)
		return
	}
	dp.taps.Store(&taps{caps: set, tr: tr})
}

// Captures is how many captures run.
func (dp *Dataplane) Captures() int {
	if t := dp.taps.Load(); t != nil && t.caps != nil {
		return len(t.caps.caps)
	}
	return 0
}

// Links are the links c captures, in the order of its interfaces.
func (c *Capture) Links() []*Link { return c.links }

// Stats are c's counts for its i'th link.
func (c *Capture) Stats(i int) *CaptureStats { return &c.stats[i] }

// Wake is signalled when packets wait in an empty ring's reader.
func (c *Capture) Wake() <-chan struct{} { return c.wake }

// Next hands the oldest packet waiting to fn, which must not keep it, and
// reports whether there was one. One goroutine reads a capture.
func (c *Capture) Next(fn func(place int, p *Captured)) bool {
	s := c.ring.peek()
	if s == nil {
		return false
	}
	fn(int(c.pos[s.pk.Link]), &s.pk)
	c.ring.release()
	return true
}

// takes reports c's place for link l in direction d, -1 if it does not take it.
func (c *Capture) takes(l *Link, d Direction, dropped bool) int {
	switch {
	case dropped && !c.spec.Drops, !dropped && d == DirIn && !c.spec.In, !dropped && d == DirOut && !c.spec.Out:
		return -1
	case int(l.Index) >= len(c.pos):
		return -1
	}
	return int(c.pos[l.Index])
}

// capture offers packet b (virtio_net_hdr and packet) on link l to the
// captures of set.
func (set *captureSet) capture(l *Link, d Direction, b []byte, dropped bool, why DropReason) {
	for _, c := range set.caps {
		if i := c.takes(l, d, dropped); i >= 0 {
			c.offer(i, l, d, b, dropped, why)
		}
	}
}

// offer puts packet b in the ring of c, whose place for link l is i, if
// its filter takes it.
func (c *Capture) offer(i int, l *Link, d Direction, b []byte, dropped bool, why DropReason) {
	if len(b) < vnetHdrLen {
		return
	}
	p := b[vnetHdrLen:]
	if c.spec.Filter != nil && !c.spec.Filter.Match(p) {
		return
	}
	st := &c.stats[i]
	st.Taken.Add(1)
	s := c.ring.claim()
	if s == nil {
		st.Lost.Add(1)
		return
	}
	vh := port.DecodeVnet(b)
	s.pk = Captured{Link: l.Index, Dir: d, Dropped: dropped, Reason: why, Time: time.Now().UnixNano(),
		Len: len(p), Data: s.buf[:copy(s.buf, p)]}
	if vh.GSO() {
		s.pk.GSOType, s.pk.GSOSize = vh.GSOType, vh.GSOSize
	}
	c.ring.publish(s)
	if len(c.wake) == 0 { // a reader asleep: wake it (the send takes the channel's lock)
		select {
		case c.wake <- struct{}{}:
		default: // woken already
		}
	}
}

// captureBatch offers the n packets a worker read to the captures, each
// capture's interest in the link found once for the batch.
func (w *worker) captureBatch(n int) {
	for _, c := range w.caps.caps {
		i := c.takes(w.in, DirIn, false)
		if i < 0 {
			continue
		}
		for j := 0; j < n; j++ {
			c.offer(i, w.in, DirIn, w.bufs[j][:w.sizes[j]], false, 0)
		}
	}
}

// dropPacket counts packet k dropped for why, and offers it to the
// captures of drops and to its trace.
func (w *worker) dropPacket(k *pkt, why DropReason) {
	w.drop(w.in, why)
	w.dropped(w.in, DirIn, k.b, k.tr, why)
}

// dropped offers packet b, going d on link l and dropped for why (counted
// by the caller), to the captures of drops and to its trace tr, if any.
func (w *worker) dropped(l *Link, d Direction, b []byte, tr *TraceRecord, why DropReason) {
	if w.caps != nil && w.caps.drops {
		w.caps.capture(l, d, b, true, why)
	}
	if tr != nil {
		tr.add(StageDrop, "%s", why)
	}
}

// captureOff offers a packet the link sends or reads off the packet path
// (Neighbour Discovery), with a load of its own.
func (dp *Dataplane) captureOff(l *Link, d Direction, b []byte) {
	if t := dp.taps.Load(); t != nil && t.caps != nil {
		t.caps.capture(l, d, b, false, 0)
	}
}

// loadTaps loads what watches the packet path for a batch: the captures,
// and the trace if the batch can be traced.
func (w *worker) loadTaps(traced bool) {
	w.caps, w.tr = nil, nil
	if t := w.dp.taps.Load(); t != nil {
		w.caps = t.caps
		if traced {
			w.tr = t.tr
		}
	}
}

// dropTaps forgets them after the batch, so that an idle worker keeps no
// stopped capture's ring.
func (w *worker) dropTaps() { w.caps, w.tr = nil, nil }

// captureRing is a bounded lock-free queue of many writers and one reader
// (Vyukov's): a slot's sequence says whose turn it is, so a writer claims
// a slot with one compare-and-swap and fills it while others claim the
// next ones.
type captureRing struct {
	slots []captureSlot
	mask  uint64
	_     [56]byte // the writers' head on a line of its own
	head  atomic.Uint64
	_     [56]byte
	tail  uint64 // the reader's
}

type captureSlot struct {
	seq atomic.Uint64
	pk  Captured
	buf []byte // the slot's own piece of the ring's memory
}

// init makes a ring of n slots (a power of two at least) of snap bytes
// each, in one allocation.
func (r *captureRing) init(n, snap int) {
	size := 1
	for size < n {
		size <<= 1
	}
	r.slots = make([]captureSlot, size)
	r.mask = uint64(size - 1)
	mem := make([]byte, size*snap)
	for i := range r.slots {
		r.slots[i].seq.Store(uint64(i))
		r.slots[i].buf = mem[i*snap : (i+1)*snap : (i+1)*snap]
	}
}

// claim returns a free slot for a writer to fill, nil if the ring is full.
func (r *captureRing) claim() *captureSlot {
	pos := r.head.Load()
	for {
		s := &r.slots[pos&r.mask]
		switch seq := s.seq.Load(); {
		case seq == pos:
			if r.head.CompareAndSwap(pos, pos+1) {
				return s
			}
			pos = r.head.Load()
		case seq < pos:
			return nil // a lap behind: the reader has not freed it
		default:
			pos = r.head.Load() // another writer took it
		}
	}
}

// publish hands a filled slot to the reader.
func (r *captureRing) publish(s *captureSlot) { s.seq.Add(1) }

// peek returns the reader's next slot if it is filled.
func (r *captureRing) peek() *captureSlot {
	s := &r.slots[r.tail&r.mask]
	if s.seq.Load() != r.tail+1 {
		return nil
	}
	return s
}

// release frees the slot peek returned for the writers' next lap.
func (r *captureRing) release() {
	s := &r.slots[r.tail&r.mask]
	s.seq.Store(r.tail + r.mask + 1)
	r.tail++
}
