package ndisc

import (
	"encoding/binary"
	"iter"
	"maps"
	"math"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// cacheLink is what a cache asks of its link. The table calls it only from Run
// (and from Update and the administrative calls, for packets that waited),
// never with a lock held, never from Output.
type cacheLink interface {
	// solicit sends a Neighbour Solicitation for target: to its
	// solicited-node multicast group, or, when unicast, to mac.
	solicit(target netip.Addr, mac MAC, unicast bool)
	// release sends packets that waited for target's resolution to mac.
	release(target netip.Addr, mac MAC, pkts [][]byte)
	// unreachable answers packets whose resolution failed (ICMPv6
	// Address Unreachable).
	unreachable(target netip.Addr, pkts [][]byte)
	// changed says that target's entry went from one state to another.
	changed(target netip.Addr, from, to State)
}

// Entry is one neighbour. word is the fast path's view: the state in its
// top byte and the MAC in its low six bytes, stored together.
type Entry struct {
	addr netip.Addr
	word atomic.Uint64
	used atomic.Int64 // clock of the last packet sent to it

	tab       *Table
	mu        sync.Mutex
	state     State
	mac       MAC
	hasMAC    bool
	flags     Flags
	confirmed int64
	updated   int64
	deadline  int64 // the timer, for timed states; 0: none
	probes    int
	queue     [][]byte
	queued    int  // bytes in queue
	dead      bool // unlinked from the table
	pinned    bool // kept through collection: a gateway its owner watches
	// unres: counted among the table's entries awaiting resolution, and,
	// when source is not 0, its source's and its kind of traffic's; priority: asked for again, it
	// does not give way to a flood's entries; firstNS: when its first
	// multicast solicitation went, 0 before (unres.go)
	unres    bool
	priority bool
	source   uint16
	kind     uint16
	firstNS  int64
}

func pack(s State, m MAC) uint64 {
	return uint64(s)<<56 | uint64(m[0])<<40 | uint64(m[1])<<32 | uint64(m[2])<<24 |
		uint64(m[3])<<16 | uint64(m[4])<<8 | uint64(m[5])
}

func unpack(v uint64) (State, MAC) {
	return State(v >> 56), MAC{byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
}

// Fast returns the neighbour's MAC if a packet may go to it at once
// (REACHABLE, PERMANENT, NOARP, DELAY, PROBE), with one atomic load and,
// when the clock moved, one store.
func (e *Entry) Fast(clock *atomic.Int64) (MAC, bool) {
	s, m := unpack(e.word.Load())
	if s&fast == 0 {
		return MAC{}, false
	}
	if now := clock.Load(); e.used.Load() != now {
		e.used.Store(now)
	}
	return m, true
}

// MAC is the neighbour's MAC as the fast path last saw it (zero if none is
// known), read without marking the entry used: for labels, not sending.
func (e *Entry) MAC() MAC {
	_, m := unpack(e.word.Load())
	return m
}

// publish makes the entry's state and MAC what the fast path sees; e.mu
// is held.
func (e *Entry) publish() { e.word.Store(pack(e.state, e.mac)) }

// Table is one link's neighbour cache.
type Table struct {
	link   cacheLink
	params atomic.Pointer[Params]
	// Clock is what entries are stamped with and timers run by, in
	// nanoseconds: the package's coarse clock unless a test sets its own.
	Clock *atomic.Int64
	// reachable is the randomized reachable time (Linux's reachable_time,
	// base_reachable_time * [0.5, 1.5)), redrawn when the knob changes.
	reachable atomic.Int64

	mu sync.Mutex // entries coming and going
	// shards are the index: immutable maps behind atomic pointers, an
	// entry's chosen by a keyed hash of its address, so that an entry
	// that comes or goes copies one shard, not the whole cache (a flood
	// of new neighbours would otherwise copy thresh3 entries per packet)
	shards [nShards]atomic.Pointer[map[netip.Addr]*Entry]
	seed   uint64       // odd: the shards' multiplier
	seed2  uint64       // the keyed hashes' second key (unres.go)
	n      atomic.Int32 // entries
	kick   chan struct{}
	nextGC int64 // t.mu
	lastGC int64 // t.mu: the last forced collection

	// soonest is the earliest timer set since Run last looked at every
	// entry; lastScan when it did (Run's own)
	soonest  atomic.Int64
	lastScan int64

	// held is the router's unres_total_bytes, shared with its other
	// links' caches
	held *Budget

	unresolved
	stats
}

// nShards: enough that a shard holds an entry or two at thresh3's
// default, so that a new entry costs a copy of a map that small (a scan
// creates thousands a second); an empty shard is a nil pointer.
const (
	nShardsBits = 10
	nShards     = 1 << nShardsBits
)

// ErrFull is Linux's "neighbour table overflow": the cache is at thresh3
// and nothing can be collected.
var ErrFull = syscall.ENOBUFS

// newTable returns an empty cache for link with knobs p, holding packets
// within held.
func newTable(link cacheLink, p Params, held *Budget) *Table {
	startClock()
	t := &Table{link: link, Clock: &coarse, kick: make(chan struct{}, 1), seed: rand.Uint64() | 1, seed2: rand.Uint64(),
		held: held}
	t.SetParams(p)
	t.soonest.Store(math.MaxInt64)
	return t
}

// Params are the cache's knobs.
func (t *Table) Params() Params { return *t.params.Load() }

// SetParams changes the knobs; the reachable time is drawn again.
func (t *Table) SetParams(p Params) {
	t.params.Store(&p)
	b := int64(p.BaseReachable)
	t.reachable.Store(b/2 + rand.Int64N(b))
}

// ReachableTime is the cache's current randomized reachable time.
func (t *Table) ReachableTime() time.Duration { return time.Duration(t.reachable.Load()) }

// Kick is signalled when Run has work before its deadline: a resolution
// started. Its owner's goroutine waits on it and on Run's deadline.
func (t *Table) Kick() <-chan struct{} { return t.kick }

func (t *Table) wake() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// shardOf is addr's shard, by a hash of its interface identifier keyed
// with the table's random seed (a multiply, on the fast path): a sender
// cannot aim a flood at one shard. On a link the prefixes are few; the
// identifiers are what differ.
func (t *Table) shardOf(addr netip.Addr) int {
	b := addr.As16()
	return int((binary.BigEndian.Uint64(b[8:]) * t.seed) >> (64 - nShardsBits))
}

// Lookup returns the entry of addr, or nil, without a lock.
func (t *Table) Lookup(addr netip.Addr) *Entry {
	if m := t.shards[t.shardOf(addr)].Load(); m != nil {
		return (*m)[addr]
	}
	return nil
}

// StateOf is addr's state as the fast path sees it, and false if it has no
// entry: without a lock, for a multipath selection on the packet path.
func (t *Table) StateOf(addr netip.Addr) (State, bool) {
	if e := t.Lookup(addr); e != nil {
		s, _ := unpack(e.word.Load())
		return s, true
	}
	return None, false
}

// Len is the number of entries.
func (t *Table) Len() int { return int(t.n.Load()) }

// all is every entry, shard by shard, each shard as it was when reached.
func (t *Table) all() iter.Seq[*Entry] {
	return func(yield func(*Entry) bool) {
		for i := range t.shards {
			if m := t.shards[i].Load(); m != nil {
				for _, e := range *m {
					if !yield(e) {
						return
					}
				}
			}
		}
	}
}

// Output is the way out for a packet to addr: the MAC to send it to now,
// or false when the packet was queued for the resolution (a copy is kept)
// or dropped (counted in UnresDiscards). The fast path is Lookup and Entry.Fast; only a neighbour
// that is not valid takes the entry's lock, as Linux's
// __neigh_event_send.
func (t *Table) Output(addr netip.Addr, pkt []byte) (MAC, bool) {
	e := t.Lookup(addr)
	if e != nil {
		if m, ok := e.Fast(t.Clock); ok {
			return m, true
		}
	} else {
		var err error
		if e, err = t.resolve(addr, pkt); err != nil {
			t.UnresDiscards.Add(1)
			return MAC{}, false
		}
		return t.slowOutput(e, pkt, true)
	}
	return t.slowOutput(e, pkt, false)
}

// slowOutput is Output for a neighbour that is not valid; admitted: the
// packet's resolution was admitted already (its entry is new).
func (t *Table) slowOutput(e *Entry, pkt []byte, admitted bool) (MAC, bool) {
	p := t.params.Load()
	// a FAILED entry asked for again is a neighbour someone wants, not a
	// scan's (a scan asks for each address once)
	if s, _ := unpack(e.word.Load()); !admitted && (s == None || s == Failed) && !t.admit(e.addr, pkt, p, true) {
		t.UnresDiscards.Add(1)
		return MAC{}, false
	}
	now := t.Clock.Load()
	e.mu.Lock()
	if e.dead { // collected between lookup and lock: drop, as a race with GC does in Linux
		e.mu.Unlock()
		t.UnresDiscards.Add(1)
		return MAC{}, false
	}
	e.used.Store(now)
	var from State
	switch {
	case e.state&fast != 0:
		m := e.mac
		e.mu.Unlock()
		return m, true
	case e.state == Stale:
		from = e.set(Delay, now, now+int64(p.DelayProbe))
		m := e.mac
		e.mu.Unlock()
		t.link.changed(e.addr, from, Delay)
		t.wake() // its timer is the soonest now
		return m, true
	case e.state == None || e.state == Failed:
		if p.McastProbes == 0 {
			e.mu.Unlock()
			t.UnresDiscards.Add(1)
			return MAC{}, false
		}
		e.probes = p.UcastProbes // an unknown neighbour gets multicast probes only
		from = e.set(Incomplete, now, now)
		e.priority, e.firstNS = e.priority || !admitted, 0
		t.startedBy(e, pkt)
		e.hold(pkt, p)
		e.mu.Unlock()
		t.link.changed(e.addr, from, Incomplete)
		t.wake()
		return MAC{}, false
	default: // INCOMPLETE
		e.hold(pkt, p)
		again := !e.priority && e.firstNS == 0
		if again { // asked for again before its solicitation could go: let it go now
			e.priority, e.deadline = true, now
			t.note(now)
		}
		e.mu.Unlock()
		if again {
			t.wake()
		}
		return MAC{}, false
	}
}

// hold queues a copy of pkt, dropping the oldest while the queue is over
// unres_qlen packets or unres_qlen_bytes (Linux drops the head of
// arp_queue): a scan through the router costs at most thresh3 entries'
// queues.
//
// Every held byte also counts against the router's unres_total_bytes
// (its Budget): past it a packet is not held, so that memory stays flat
// however many entries a flood keeps waiting.
func (e *Entry) hold(pkt []byte, p *Params) {
	if p.QueueLen <= 0 || len(pkt) > p.QueueBytes {
		e.tab.UnresDiscards.Add(1)
		return
	}
	for len(e.queue) > 0 && (len(e.queue) >= p.QueueLen || e.queued+len(pkt) > p.QueueBytes) {
		e.queued -= len(e.queue[0])
		e.tab.held.give(int64(len(e.queue[0])))
		e.queue = e.queue[1:]
		e.tab.UnresDiscards.Add(1)
	}
	if !e.tab.held.take(int64(len(pkt))) {
		e.tab.HeldLimited.Add(1)
		e.tab.UnresDiscards.Add(1)
		return
	}
	e.queue = append(e.queue, append([]byte(nil), pkt...))
	e.queued += len(pkt)
}

// drain takes the queue; e.mu is held.
func (e *Entry) drain() [][]byte {
	q := e.queue
	e.tab.held.give(int64(e.queued))
	e.queue, e.queued = nil, 0
	return q
}

// set moves the entry to state s with its timer at deadline (for timed
// states) and publishes it; it returns the old state. e.mu is held.
func (e *Entry) set(s State, now, deadline int64) State {
	from := e.state
	e.state = s
	e.updated = now
	e.deadline = 0
	if s&timed != 0 {
		e.deadline = deadline
		e.tab.note(deadline)
	}
	switch {
	case s == Incomplete && !e.unres:
		e.tab.countUnres(e)
	case s != Incomplete && e.unres:
		e.tab.uncountUnres(e)
	}
	if s&Probe != 0 && from&Probe == 0 {
		e.probes = 0
	}
	e.publish()
	return from
}

// create adds an entry for addr in state None. At thresh3 it collects
// first (at most every 100 ms: a flood does not buy a scan per packet),
// then an entry that never answered gives way (RFC 6583 7.1: entries
// that have answered are kept), and only then is addr refused. A strong
// newcomer (one that answered, or asked for again) may take the place of
// a priority entry that has had its chance.
func (t *Table) create(addr netip.Addr, strong bool) (*Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.Lookup(addr); e != nil {
		return e, nil
	}
	p := t.params.Load()
	now := t.Clock.Load()
	if n := t.Len(); n >= p.Thresh3 && now-t.lastGC >= int64(100*time.Millisecond) || n >= p.Thresh2 && now >= t.nextGC {
		t.forcedGC(p)
	}
	if t.Len() >= p.Thresh3 && !t.giveWay(Incomplete|Failed|None, strong) {
		t.Overflows.Add(1)
		return nil, ErrFull
	}
	e := &Entry{tab: t, addr: addr, updated: now, confirmed: now - 2*int64(p.BaseReachable)}
	e.used.Store(now)
	t.edit(t.shardOf(addr), func(m map[netip.Addr]*Entry) { m[addr] = e })
	t.n.Add(1)
	return e, nil
}

// edit publishes a copy of shard i that f changed: readers keep the one
// they loaded. t.mu is held.
func (t *Table) edit(i int, f func(m map[netip.Addr]*Entry)) {
	var next map[netip.Addr]*Entry
	if cur := t.shards[i].Load(); cur != nil {
		next = make(map[netip.Addr]*Entry, len(*cur)+1) // room for one more: no growing on an add
		maps.Copy(next, *cur)
	} else {
		next = make(map[netip.Addr]*Entry, 1)
	}
	f(next)
	if len(next) == 0 {
		t.shards[i].Store(nil)
		return
	}
	t.shards[i].Store(&next)
}

// unlink takes entries out of the index, copying each shard they are in
// once; t.mu is held.
func (t *Table) unlink(gone []*Entry) {
	if len(gone) == 0 {
		return
	}
	if len(gone) == 1 { // an entry giving way, as often as a scan's packets come
		e := gone[0]
		t.edit(t.shardOf(e.addr), func(m map[netip.Addr]*Entry) { delete(m, e.addr) })
		t.n.Add(-1)
		return
	}
	by := map[int][]*Entry{}
	for _, e := range gone {
		i := t.shardOf(e.addr)
		by[i] = append(by[i], e)
	}
	for i, es := range by {
		if len(es) > 0 {
			t.edit(i, func(m map[netip.Addr]*Entry) {
				for _, e := range es {
					delete(m, e.addr)
				}
			})
		}
	}
	t.n.Add(-int32(len(gone)))
}

// collect unlinks entries goes picks, down to keep entries, but never a
// static or pinned one, nor one holding packets; t.mu is held.
func (t *Table) collect(keep int, goes func(e *Entry) bool) {
	n := t.Len()
	var gone []*Entry
	for e := range t.all() {
		if n-len(gone) <= keep {
			break
		}
		e.mu.Lock()
		if e.state&static == 0 && !e.pinned && len(e.queue) == 0 && goes(e) {
			e.dead = true
			if e.unres {
				t.uncountUnres(e)
			}
			gone = append(gone, e)
		}
		e.mu.Unlock()
	}
	t.unlink(gone)
}

// forcedGC is Linux's neigh_forced_gc: down to thresh2, entries that are
// FAILED, NONE or STALE, or unused for gc_stale, go; t.mu is held.
func (t *Table) forcedGC(p *Params) {
	now := t.Clock.Load()
	t.ForcedGCs.Add(1)
	t.collect(p.Thresh2, func(e *Entry) bool {
		return e.state&(Failed|None|Stale) != 0 || now-e.used.Load() > int64(p.GCStale)
	})
	t.nextGC, t.lastGC = now+int64(5*time.Second), now
}

// note says a timer is set for deadline: Run looks at every entry by
// then.
func (t *Table) note(deadline int64) {
	for {
		cur := t.soonest.Load()
		if deadline >= cur || t.soonest.CompareAndSwap(cur, deadline) {
			return
		}
	}
}
