package dataplane

import (
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Control-plane policing: what is punted to the router itself (local
// delivery, link-scope multicast given to a mirror, Neighbour and Router
// Discovery for the ND goroutine) passes a token bucket of its class on
// the link it came in by, so that a flood from one LAN cannot starve the
// control plane (FRR's sessions over the mirrors, the router's own ND) nor
// another LAN. Forwarded packets never meet it.

// CoPPClass is a class of packets punted to the router, highest first.
type CoPPClass uint8

// A class that any LAN host can fill is apart from routing, which BGP's
// and BFD's sessions share: the link-layer protocols a TAP mirror takes
// (IS-IS, LLDP), which come from whoever sends to their groups, have a
// class each.
const (
	CoPPND      CoPPClass = iota // Neighbour and Router Discovery, Redirects
	CoPPRouting                  // routing protocols, and a session peer's packets to a mirror
	CoPPISIS                     // IS-IS frames to a TAP mirror
	CoPPLLDP                     // LLDP frames to a TAP mirror
	CoPPEcho                     // echo requests to the router
	CoPPOther                    // everything else punted
	NumCoPPClasses
)

var coppNames = [NumCoPPClasses]string{"nd", "routing", "isis", "lldp", "echo", "other"}

func (c CoPPClass) String() string { return coppNames[c] }

// CoPPClassNamed returns the class called name.
func CoPPClassNamed(name string) (CoPPClass, bool) {
	for c, n := range coppNames {
		if n == name {
			return CoPPClass(c), true
		}
	}
	return 0, false
}

// CoPPLimit is a class's limit: packets a second (0: none) with bursts
// of Burst.
type CoPPLimit struct{ Rate, Burst int }

// DefaultCoPP are the limits a lab never reaches and a flood always does.
// routing is high because a session peer's bulk TCP to the kernel (iperf3
// through a mirror, a BGP full table) is in it. other is low because what
// it passes up a mirror mostly earns an answer from the kernel (a SYN+ACK,
// a reset) that crosses the router again: 10,000 SYNs a second passed
// cost a lab's router a tenth of a core more, and its transit a fifth.
// isis has room for a database's exchange (a router paces its LSPs at
// some 30 a second per link, its hellos every few seconds); lldp for a
// frame every 30 s from each of a hundred neighbours, and their bursts.
var DefaultCoPP = [NumCoPPClasses]CoPPLimit{
	CoPPND:      {2000, 1000},
	CoPPRouting: {1_000_000, 100_000},
	CoPPISIS:    {2000, 1000},
	CoPPLLDP:    {100, 100},
	CoPPEcho:    {1000, 1000},
	CoPPOther:   {2000, 2000},
}

// coppBuckets are a link's buckets, one per class, shared by its workers
// (and its Ethernet reader) through gcra's atomic words.
type coppBuckets [NumCoPPClasses]struct {
	gcra
	_ [40]byte // a bucket's own cache line: a flooded class does not slow the others
}

// Verdicts of CoPP counters.
const (
	coppPassed = iota
	coppDropped
)

// SetCoPP sets class c's limit on every link, and on links added later.
func (dp *Dataplane) SetCoPP(c CoPPClass, lim CoPPLimit) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.copp[c] = lim
	for _, l := range dp.Links.All() {
		l.copp[c].set(lim.Rate, lim.Burst)
	}
}

// CoPP returns class c's limit.
func (dp *Dataplane) CoPP(c CoPPClass) CoPPLimit {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	return dp.copp[c]
}

// applyCoPP gives a new link the current limits; dp.mu is held.
func (dp *Dataplane) applyCoPP(l *Link) {
	for c, lim := range dp.copp {
		l.copp[c].set(lim.Rate, lim.Burst)
	}
}

// allow charges one packet to the bucket if it has room: tat moves only
// by a compare-and-swap, so workers sharing it never pass more than it
// allows together.
func (g *gcra) allow(now int64) bool {
	iv := g.interval.Load()
	if iv == 0 {
		return true
	}
	slack := g.slack.Load()
	for {
		old := g.tat.Load()
		t := max(old, now)
		if t-now > slack {
			return false
		}
		if g.tat.CompareAndSwap(old, t+iv) {
			return true
		}
	}
}

// police charges a packet of class c to link l's bucket and counts the
// verdict in the worker's counters; a packet over the limit is dropped.
func (w *worker) police(l *Link, c CoPPClass, now int64) bool {
	ctr := w.ctr(l)
	if l.copp[c].allow(now) {
		ctr.CoPP[c][coppPassed].add(1)
		return true
	}
	ctr.CoPP[c][coppDropped].add(1)
	ctr.Drops[DropPoliced].add(1)
	return false
}

// police is the Ethernet reader's: what goes to the ND goroutine or up a
// mirror never reaches a worker's counters, so it counts in the link's
// shared ones, received too when dropped (ND counts its own otherwise).
func (e *ether) police(c CoPPClass, n int, countRx bool) bool {
	l, ctrs := e.link.Load(), e.ndCtrs.Load()
	if l == nil || ctrs == nil {
		return true
	}
	ok := l.copp[c].allow(e.dp.now())
	if countRx || !ok {
		ctrs.RxPackets.addShared(1)
		ctrs.RxBytes.addShared(uint64(n))
	}
	if ok {
		ctrs.CoPP[c][coppPassed].addShared(1)
		return true
	}
	ctrs.CoPP[c][coppDropped].addShared(1)
	ctrs.Drops[DropPoliced].addShared(1)
	return false
}

// Routing protocols by next header, and by UDP port.
const (
	protoOSPF = 89
	protoPIM  = 103
	protoVRRP = 112
	portBGP   = 179
)

func routingPort(p uint16) bool {
	switch p {
	case 3784, 3785, 4784, // BFD: single hop, echo, multihop
		521,  // RIPng
		6696: // Babel
		return true
	}
	return false
}

// coppClass is the class of packet p (its walk l4) punted to the router;
// toKernel says it goes up a mirror, where a session peer's packets are
// routing whatever they are, but for a bare SYN: anyone can send those
// (a peer reconnecting sends one), and a SYN flood makes the kernel send
// challenge ACKs that would teach its source as a peer.
func (t *peerTable) coppClass(p header.IPv6, l4 *l4info, toKernel bool, now int64) CoPPClass {
	switch l4.proto {
	case protoICMPv6:
		switch typ := header.ICMPv6Type(l4.icmpTy); {
		case !l4.icmp:
		case typ >= header.ICMPv6RouterSolicit && typ <= header.ICMPv6RedirectMsg:
			return CoPPND
		case typ == header.ICMPv6EchoRequest:
			return CoPPEcho
		}
	case protoTCP:
		if f, ok := tcpFlags(p, l4); ok && bareSYN(f) {
			return CoPPOther
		}
	}
	if toKernel && t.has((*[16]byte)(p.SourceAddressSlice()), uint64(now/int64(time.Second))) {
		return CoPPRouting
	}
	return protoClass(p, l4)
}

// protoClass classes a packet by its protocol and ports alone.
func protoClass(p header.IPv6, l4 *l4info) CoPPClass {
	switch l4.proto {
	case protoOSPF, protoPIM, protoVRRP:
		return CoPPRouting
	case protoUDP:
		if l4.ports && (routingPort(l4.dport) || routingPort(l4.sport)) {
			return CoPPRouting
		}
	case protoTCP: // BGP (its bare SYNs are other)
		if _, ok := tcpFlags(p, l4); ok && (l4.sport == portBGP || l4.dport == portBGP) {
			return CoPPRouting
		}
	}
	return CoPPOther
}

// tcpFlags are the flags of TCP packet p, if its header is all there.
func tcpFlags(p header.IPv6, l4 *l4info) (header.TCPFlags, bool) {
	if !l4.ports || l4.off < 0 || l4.off+header.TCPMinimumSize > len(p) {
		return 0, false
	}
	return header.TCP(p[l4.off:]).Flags(), true
}

func bareSYN(f header.TCPFlags) bool {
	return f.Contains(header.TCPFlagSyn) && !f.Contains(header.TCPFlagAck)
}

// peerSlots is how many session peers are remembered: a fixed table, so
// that what the kernel sends costs no memory; a router has tens or
// hundreds of sessions. An address may take any slot of its way group
// (four adjacent words, one cache line's half): with 100 peers, the
// chance that five share a group, and one is forgotten, is about 1%.
const (
	peerSlots = 1024
	peerWays  = 4
)

// peerTTL is how long a peer counts after the kernel last sent to it, in
// seconds (BGP's default hold time is 90 s).
const peerTTL = 90

// peerTable remembers the neighbours the kernel has established TCP
// sessions with, learnt from what it sends down the mirrors: one atomic
// word per slot, a 40-bit tag of the address and the coarse second it was
// last sent to (24 bits, compared modulo their width). A new address takes
// its group's empty or expired slot, never a live peer's: the table's
// peers cannot be evicted by newcomers, however many (an address that
// finds its group full is not a peer until a slot expires, and its BGP
// segments are routing by their port all the same).
type peerTable struct {
	seed  [2]uint64
	slots [peerSlots]atomic.Uint64
}

const (
	peerTimeBits = 24
	peerTimeMask = 1<<peerTimeBits - 1
)

func (t *peerTable) init() { t.seed = randomSeed() }

// group returns a's tag (never 0: an empty slot has none) and its slots.
func (t *peerTable) group(a *[16]byte) (uint64, []atomic.Uint64) {
	h := keyedHash(a, &t.seed)
	i := int(h) & (peerSlots - peerWays)
	return h>>peerTimeBits | 1, t.slots[i : i+peerWays]
}

// live: a slot's peer was sent to within peerTTL (an empty slot is 0).
func live(v, now uint64) bool { return v != 0 && age(v, now) < peerTTL }

func age(v, now uint64) uint64 { return (now - v) & peerTimeMask }

// learn stamps peer a as sent to at second now; admit says a may come in
// if it is not a live peer already (else it is only kept alive). Two
// mirrors' workers may learn at once: a stamp lost, or a newcomer that
// lost its slot to another, is made again by the kernel's next segment.
func (t *peerTable) learn(a *[16]byte, now uint64, admit bool) {
	tag, g := t.group(a)
	v := tag<<peerTimeBits | now&peerTimeMask
	free := -1
	for j := range g {
		old := g[j].Load()
		if old>>peerTimeBits == tag && (admit || live(old, now)) {
			if old != v {
				g[j].Store(v) // once a second at most: the line stays shared
			}
			return
		}
		if free < 0 && !live(old, now) {
			free = j
		}
	}
	if admit && free >= 0 {
		g[free].Store(v)
	}
}

// has reports whether a is a peer the kernel sent to within peerTTL.
func (t *peerTable) has(a *[16]byte, now uint64) bool {
	tag, g := t.group(a)
	for j := range g {
		if v := g[j].Load(); v>>peerTimeBits == tag && live(v, now) {
			return true
		}
	}
	return false
}

// learnPeer learns from a unicast packet the kernel sent: the destination
// of a TCP segment that is neither SYN nor RST (the kernel's answers to a
// flood of those establish nothing), nor FIN (a daemon closing a
// connection it did not want). Only a segment that carries data admits a
// new peer: a daemon spoke to it (bgpd's OPEN, its keepalives), where the
// kernel acknowledges anyone's data, even on a connection its daemon
// refuses (bgpd closes one from an address it has no neighbor for); a
// bare ACK keeps a peer alive.
func (w *worker) learnPeer(k *pkt, now uint64) {
	if k.l4.proto != protoTCP {
		return
	}
	if f, ok := tcpFlags(k.p, &k.l4); !ok || f&(header.TCPFlagSyn|header.TCPFlagRst|header.TCPFlagFin) != 0 {
		return
	}
	data := len(k.p) > k.l4.off+int(header.TCP(k.p[k.l4.off:]).DataOffset())
	w.dp.peers.learn((*[16]byte)(k.p.DestinationAddressSlice()), now, data)
}

// coarse is the peers' clock, seconds since epoch, at now (Dataplane.now).
func coarse(now int64) uint64 { return uint64(now / int64(time.Second)) }

// now is the limiters' clock: nanoseconds since epoch, the monotonic
// clock's unless a test gave the dataplane its own.
func (dp *Dataplane) now() int64 {
	if dp != nil {
		if f := dp.clock.Load(); f != nil {
			return (*f)()
		}
	}
	return int64(time.Since(epoch))
}
