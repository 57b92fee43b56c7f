package ndisc

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"time"
)

// The cache against the Neighbour Discovery exhaustion attack (RFC 6583):
// a sender that scans an on-link /64 through the router makes it create
// an INCOMPLETE entry, hold a packet and solicit for every address. Linux
// lets such entries fill the table to gc_thresh3, and then refuses every
// new neighbour, the real ones too. Here:
//   - entries awaiting resolution are at most unres_max, and one source
//     address may start at most unres_src_max of them (RFC 6583 6.3, 7.1),
//     one kind of its traffic (next header and destination port, or
//     ICMPv6 type) three quarters of those: past the first an unanswered
//     entry gives way to a new resolution, past the others it is refused.
//     A scan sends one kind, so the scanning host's other traffic to a
//     new neighbour (a ping among UDP probes) gets in at its first packet;
//   - at thresh3, an entry that never answered (INCOMPLETE, FAILED) gives
//     way before a new one is refused, so a neighbour that speaks (its
//     NS, its answer, an untracked NA when accept_untracked_na lets it
//     in) always gets in;
//   - a solicited NA for an address the link recently solicited gets in
//     even if its entry gave way meanwhile (asked);
//   - an address asked for again (a packet to it refused or its entry
//     gone, or a second packet before its solicitation went) is a
//     neighbour someone wants, where a scan asks for each address once:
//     it passes the source bound, its entry does not give way to the
//     scan's and its solicitations are not rate-limited (priority);
//   - multicast solicitations for unresolved entries are at most
//     solicit_rate a second (solicit_burst at once) per link, while NUD
//     probes of known neighbours are not limited;
//   - the bytes held for resolution are bounded for the whole router
//     (unres_total_bytes), not only per entry.

// unresolved is a table's account of its entries awaiting resolution.
type unresolved struct {
	unres    atomic.Int32           // INCOMPLETE entries
	bySource [nSources]atomic.Int32 // ... that each source address started, by keyed hash
	byKind   [nKinds]atomic.Int32   // ... that each kind of each source's traffic started
	asked    [nAsked]atomic.Uint64  // keyed hashes of targets recently solicited by multicast
	seen     [1 << 14]atomic.Uint32 // ... of addresses refused or given way lately (remember)
	solTAT   int64                  // the solicitations' token bucket (GCRA), Run's own
}

const (
	nSources = 1024
	nKinds   = 4096
	nAsked   = 4096
)

// stats are a table's counts, for `ip -s ntable`.
type stats struct {
	Overflows      atomic.Uint64 // entries refused at thresh3 (Linux's table_fulls)
	SourceLimited  atomic.Uint64 // resolutions refused: their source had unres_src_max waiting
	GaveWay        atomic.Uint64 // unanswered entries removed to make room
	SolicitLimited atomic.Uint64 // multicast solicitations not sent: over solicit_rate
	HeldLimited    atomic.Uint64 // packets not held: the router held unres_total_bytes
	UnresDiscards  atomic.Uint64 // packets dropped, not held: refused, or over a queue's bounds (unres_discards)
	ForcedGCs      atomic.Uint64 // forced collections (forced_gc_runs)
	PeriodicGCs    atomic.Uint64 // periodic collections (periodic_gc_runs)
}

// Stats are a table's counts at one time.
type Stats struct {
	Entries, Unresolved                                             int
	TableFulls, SourceLimited, GaveWay, SolicitLimited, HeldLimited uint64
	UnresDiscards, ForcedGCs, PeriodicGCs                           uint64
}

// Stats returns the table's counts.
func (t *Table) Stats() Stats {
	return Stats{Entries: t.Len(), Unresolved: int(t.unres.Load()),
		TableFulls: t.Overflows.Load(), SourceLimited: t.SourceLimited.Load(), GaveWay: t.GaveWay.Load(),
		SolicitLimited: t.SolicitLimited.Load(), HeldLimited: t.HeldLimited.Load(),
		UnresDiscards: t.UnresDiscards.Load(), ForcedGCs: t.ForcedGCs.Load(), PeriodicGCs: t.PeriodicGCs.Load()}
}

// A Budget bounds the bytes a router's caches hold for resolution
// together (unres_total_bytes): each router has its own, which its
// links' caches share.
type Budget struct{ held, max atomic.Int64 }

// DefaultHeldMax is unres_total_bytes' default: 4 MiB, some two thousand
// full frames, where Linux's per-entry bound alone lets 1,024 entries
// hold 200 MiB.
const DefaultHeldMax = 4 << 20

// NewBudget is a budget of DefaultHeldMax bytes.
func NewBudget() *Budget {
	b := &Budget{}
	b.max.Store(DefaultHeldMax)
	return b
}

// SetMax bounds the bytes held (unres_total_bytes).
func (b *Budget) SetMax(n int64) { b.max.Store(n) }

// Max is that bound.
func (b *Budget) Max() int64 { return b.max.Load() }

// Held is what the caches hold now.
func (b *Budget) Held() int64 { return b.held.Load() }

// take counts n more bytes held, if they fit in unres_total_bytes.
func (b *Budget) take(n int64) bool {
	for {
		cur := b.held.Load()
		if cur+n > b.max.Load() {
			return false
		}
		if b.held.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// give counts n bytes no longer held.
func (b *Budget) give(n int64) { b.held.Add(-n) }

// resolve creates the entry a packet to addr asks for, if the packet's
// source may start one more resolution. An address asked for again after
// it was refused or gave way (a scan asks for each once) is a neighbour
// someone wants: it passes the bounds, its entry has priority.
func (t *Table) resolve(addr netip.Addr, pkt []byte) (*Entry, error) {
	again := t.repeated(addr)
	if !t.admit(addr, pkt, t.params.Load(), again) {
		return nil, ErrFull
	}
	e, err := t.create(addr, again)
	if err != nil {
		t.remember(addr)
		return nil, err
	}
	if again {
		e.mu.Lock()
		e.priority = true
		e.mu.Unlock()
	}
	return e, nil
}

// admit reports whether a packet to addr may start a resolution: its
// source has fewer than unres_src_max waiting and its kind of traffic
// fewer than kindMax (unless addr is asked for again), and the table fewer
// than unres_max or an unanswered entry gives way. A refused addr is
// remembered: asked for again, it is let in.
func (t *Table) admit(addr netip.Addr, pkt []byte, p *Params, again bool) bool {
	if !again && p.UnresSrcMax > 0 && t.sourceFull(pkt, p) {
		t.SourceLimited.Add(1)
		t.remember(addr)
		return false
	}
	if p.UnresMax > 0 && t.unres.Load() >= int32(p.UnresMax) {
		t.mu.Lock()
		ok := t.giveWay(Incomplete, again)
		t.mu.Unlock()
		if !ok {
			t.Overflows.Add(1)
			t.remember(addr)
			return false
		}
	}
	return true
}

// sourceFull reports whether the source of pkt has unres_src_max
// resolutions waiting, or its kind of traffic kindMax of them.
func (t *Table) sourceFull(pkt []byte, p *Params) bool {
	s := t.sourceOf(pkt)
	if s == 0 {
		return false
	}
	return t.bySource[s-1].Load() >= int32(p.UnresSrcMax) || t.byKind[t.kindOf(pkt)-1].Load() >= kindMax(p.UnresSrcMax)
}

// kindMax is what one kind of a source's traffic may start of the
// source's n resolutions: three quarters, the rest left to its others.
func kindMax(n int) int32 { return int32(n - n/4) }

// kindOf is the slot (from 1) of pkt's kind of traffic from its source:
// the source address, the next header and, for TCP, UDP and SCTP, the
// destination port or, for ICMPv6, the type. pkt has a source (sourceOf).
func (t *Table) kindOf(pkt []byte) uint16 {
	ip := pkt[Headroom:]
	kind := uint64(ip[6]) << 16
	if l4 := ip[ipv6Len:]; len(l4) >= 4 && (ip[6] == 6 || ip[6] == 17 || ip[6] == 132) {
		kind |= uint64(binary.BigEndian.Uint16(l4[2:]))
	} else if len(l4) >= 1 && ip[6] == 58 {
		kind |= uint64(l4[0])
	}
	hi, lo := binary.BigEndian.Uint64(ip[8:]), binary.BigEndian.Uint64(ip[16:])
	h, l := bits.Mul64(hi^t.seed2, lo^kind^t.seed)
	return uint16((h^l)>>(64-12)) + 1
}

// sourceOf is the slot (from 1) of the source address of pkt (Headroom
// bytes, then IPv6), or 0 if it has none. The bound is per address, not
// per /64: a host's neighbours on its /64 are not refused for its flood.
func (t *Table) sourceOf(pkt []byte) uint16 {
	if len(pkt) < Headroom+ipv6Len {
		return 0
	}
	hi, lo := binary.BigEndian.Uint64(pkt[Headroom+8:]), binary.BigEndian.Uint64(pkt[Headroom+16:])
	return uint16(((hi*0x9e3779b97f4a7c15^lo)*t.seed)>>(64-10)) + 1
}

// countUnres counts e, going INCOMPLETE, among the entries awaiting
// resolution; e.mu is held.
func (t *Table) countUnres(e *Entry) {
	e.unres = true
	t.unres.Add(1)
}

// startedBy charges e's resolution to the source of pkt and its kind of
// traffic; e.mu is held.
func (t *Table) startedBy(e *Entry, pkt []byte) {
	if s := t.sourceOf(pkt); s != 0 && e.unres && e.source == 0 {
		e.source, e.kind = s, t.kindOf(pkt)
		t.bySource[s-1].Add(1)
		t.byKind[e.kind-1].Add(1)
	}
}

// uncountUnres undoes countUnres and startedBy, e resolved, failed or
// gone; e.mu is held.
func (t *Table) uncountUnres(e *Entry) {
	e.unres = false
	t.unres.Add(-1)
	if e.source != 0 {
		t.bySource[e.source-1].Add(-1)
		t.byKind[e.kind-1].Add(-1)
		e.source, e.kind = 0, 0
	}
}

// giveWay removes one entry in one of the states victims that is neither
// static nor pinned, from a shard picked at random: its packets are
// dropped, without an Address Unreachable (a flood's, most likely), and
// its address remembered (asked for again, it has priority). A priority
// entry gives way only to a strong newcomer, and only once its first
// solicitation is a retrans time old. It reports whether it found one;
// t.mu is held.
func (t *Table) giveWay(victims State, strong bool) bool {
	start := rand.IntN(nShards)
	now := t.Clock.Load()
	retrans := int64(t.params.Load().Retrans)
	for k := range nShards {
		m := t.shards[(start+k)%nShards].Load()
		if m == nil {
			continue
		}
		for _, e := range *m {
			if s, _ := unpack(e.word.Load()); s&victims == 0 || s&static != 0 {
				continue
			}
			e.mu.Lock()
			if e.dead || e.pinned || e.state&victims == 0 ||
				e.priority && (!strong || e.firstNS == 0 || now-e.firstNS < retrans) {
				e.mu.Unlock()
				continue
			}
			e.dead = true
			e.drain()
			if e.unres {
				t.uncountUnres(e)
			}
			e.mu.Unlock()
			t.unlink([]*Entry{e})
			t.remember(e.addr)
			t.GaveWay.Add(1)
			return true
		}
	}
	return false
}

// remember notes that addr was refused or gave way; repeated reports
// whether it was, lately. A flood's addresses overwrite each other's
// slots, but one asked for again within a few thousand others is found.
func (t *Table) remember(addr netip.Addr) {
	k := t.askKey(addr)
	t.seen[k>>(64-14)].Store(uint32(k))
}

func (t *Table) repeated(addr netip.Addr) bool {
	k := t.askKey(addr)
	return t.seen[k>>(64-14)].Load() == uint32(k)
}

// askKey is target's key in asked: a keyed hash, never 0.
//
// Its every bit depends on every bit of the address (the halves of a
// 128-bit product of both, each keyed): with a plain multiply the low
// bits, the tag, would be the same for addresses that differ in their
// high bits only, and one that gave way would make all of them look
// asked for again.
func (t *Table) askKey(target netip.Addr) uint64 {
	b := target.As16()
	hi, lo := bits.Mul64(binary.LittleEndian.Uint64(b[:8])^t.seed, binary.LittleEndian.Uint64(b[8:])^t.seed2)
	return (hi ^ lo) | 1
}

func (t *Table) ask(target netip.Addr) {
	k := t.askKey(target)
	t.asked[k>>(64-12)].Store(k)
}

func (t *Table) wasAsked(target netip.Addr) bool {
	k := t.askKey(target)
	return t.asked[k>>(64-12)].Load() == k
}

// mayMulticast reports whether a multicast solicitation for an
// unresolved entry may go now, within solicit_rate and solicit_burst;
// Run's goroutine only.
func (t *Table) mayMulticast(p *Params, now int64) bool {
	if p.SolicitRate <= 0 {
		return true
	}
	iv := int64(time.Second) / int64(p.SolicitRate)
	if t.solTAT-now > int64(max(p.SolicitBurst, 1)-1)*iv {
		t.SolicitLimited.Add(1)
		return false
	}
	t.solTAT = max(t.solTAT, now) + iv
	return true
}
