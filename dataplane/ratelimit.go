package dataplane

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// icmpLimits are Linux's two limits on the ICMPv6 errors the router sends:
// a global token bucket (icmp_msgs_per_sec 1000, icmp_msgs_burst 50) and a
// bucket per destination (net.ipv6.icmp.ratelimit, 100 ms, with a burst of
// 6: inet_peer_xrlim_allow). Packet Too Big is exempt from both, as
// net.ipv6.icmp.ratemask (0-1,3-127) has it. As in icmp6_send, the global
// bucket is asked first, the destination's consulted only when it allows,
// and the global one charged only when both do.
type icmpLimits struct {
	global gcra
	perDst destBuckets
	mask   [4]atomic.Uint64 // the types limited, a bit each (ratemask)
}

// DefaultRateMask is Linux's ratemask, 0-1,3-127: every error but Packet
// Too Big, and no informational message.
var DefaultRateMask = [4]uint64{^uint64(1 << header.ICMPv6PacketTooBig), ^uint64(0)}

func (l *icmpLimits) allow(typ uint8, dst *[16]byte, now int64) bool {
	if l.mask[typ/64].Load()&(1<<(typ%64)) == 0 {
		return true
	}
	if !l.global.ready(now) || !l.perDst.allow(dst, now) {
		return false
	}
	l.global.take(now)
	return true
}

// epoch is the limiters' clock origin (time.Since is monotonic).
var epoch = time.Now()

// gcra is a token bucket kept as one "theoretical arrival time" (the
// generic cell rate algorithm), so that workers share it with one atomic
// word and no lock.
type gcra struct {
	interval atomic.Int64 // ns per message; 0: no limit
	slack    atomic.Int64 // how far ahead of now the bucket may run: the burst
	tat      atomic.Int64
}

func (g *gcra) set(perSec, burst int) {
	if perSec <= 0 {
		g.interval.Store(0)
		return
	}
	iv := int64(time.Second) / int64(perSec)
	g.interval.Store(iv)
	g.slack.Store(int64(max(burst, 1)-1) * iv)
}

// ready reports whether a message may go now.
func (g *gcra) ready(now int64) bool {
	iv := g.interval.Load()
	return iv == 0 || g.tat.Load()-now <= g.slack.Load()
}

// take charges one message. Two workers may both find the bucket ready
// and both take: a message over the limit, as Linux's own race allows.
func (g *gcra) take(now int64) {
	iv := g.interval.Load()
	if iv == 0 {
		return
	}
	for {
		old := g.tat.Load()
		if g.tat.CompareAndSwap(old, max(old, now)+iv) {
			return
		}
	}
}

// destSlots is how many destinations the per-destination limiter tracks:
// a fixed table, so that sources an attacker invents cost no memory. A
// destination's bucket matters only while it is not full again (for a
// burst of 6 at 100 ms, 600 ms after its last error), and the global
// bucket lets at most 1,000 errors a second reach this table, so a few
// hundred slots are in use at a time.
const destSlots = 1 << 14

// destBuckets is the per-destination limiter: a token bucket (GCRA) per
// destination in a hash table of one atomic word per slot. A word holds a
// 16-bit tag of the destination and its theoretical arrival time in µs
// since epoch (48 bits: nine years). A destination may take either of two
// adjacent slots; a new one takes the one whose bucket is fuller (its time
// oldest), and one whose time has passed is as good as free.
type destBuckets struct {
	interval atomic.Int64 // µs per message; 0: no limit
	slack    atomic.Int64 // µs: (burst-1) intervals
	seed     [2]uint64    // random: an attacker cannot aim at one slot
	slots    [destSlots]atomic.Uint64
}

const tatMask = 1<<48 - 1

// randomSeed seeds a hash table's hash: an attacker cannot aim at one slot.
func randomSeed() [2]uint64 {
	var b [16]byte
	rand.Read(b[:])
	return [2]uint64{binary.LittleEndian.Uint64(b[:8]) | 1, binary.LittleEndian.Uint64(b[8:])}
}

func (d *destBuckets) set(interval time.Duration, burst int) {
	if d.seed == [2]uint64{} {
		d.seed = randomSeed()
	}
	iv := interval.Microseconds()
	d.interval.Store(iv)
	d.slack.Store(int64(max(burst, 1)-1) * iv)
}

// keyedHash is an address's hash under seed: the halves of a 128-bit
// product, then mixed (murmur3's fmix64) so that its low bits, which
// pick a slot, depend on every bit of the address. Without the mix,
// addresses that differ in their last bytes only (the high bits of the
// product's operand) fell into a few slot groups under some seeds: 28
// of 100 session peers forgotten in 1% of TestCoPPPeers' runs.
func keyedHash(a *[16]byte, seed *[2]uint64) uint64 {
	hi, lo := bits.Mul64(binary.LittleEndian.Uint64(a[:8])^seed[0], binary.LittleEndian.Uint64(a[8:])^seed[1])
	h := hi ^ lo
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}

// allow charges one error to dst if its bucket has room.
func (d *destBuckets) allow(dst *[16]byte, nowNs int64) bool {
	iv := d.interval.Load()
	if iv == 0 {
		return true
	}
	now := nowNs / 1000
	h := keyedHash(dst, &d.seed)
	tag := h>>48 | 1 // never 0: an empty slot has no tag
	i := h & (destSlots - 2)
	for {
		s := &d.slots[i]
		v := s.Load()
		if v>>48 != tag {
			if o := d.slots[i+1].Load(); o>>48 == tag || o&tatMask < v&tatMask {
				s, v = &d.slots[i+1], o
			}
		}
		tat := now
		if v>>48 == tag {
			tat = max(int64(v&tatMask), now)
		}
		if tat-now > d.slack.Load() {
			return false
		}
		if s.CompareAndSwap(v, tag<<48|uint64(tat+iv)&tatMask) {
			return true
		}
	}
}
