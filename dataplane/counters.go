package dataplane

import (
	"slices"
	"sync/atomic"
)

// DropReason says why the router dropped a packet.
type DropReason uint8

const (
	DropTruncated       DropReason = iota // shorter than its headers
	DropVersion                           // not IPv6
	DropLength                            // shorter than its payload length says
	DropMartian                           // a source or destination that must not be routed
	DropHopLimit                          // hop limit expired
	DropNoRoute                           // no route, or an unreachable route
	DropProhibited                        // prohibit route
	DropBlackhole                         // blackhole route
	DropTooBig                            // larger than the egress MTU
	DropLinkDown                          // egress link down or gone
	DropLocal                             // for the router, not answered (e.g. an error message)
	DropWrite                             // the egress refused the write
	DropOption                            // a hop-by-hop option that says drop, or a malformed one
	DropChecksum                          // for the router, with a bad transport checksum
	DropNeighbour                         // its neighbour did not answer resolution
	DropNDInvalid                         // Neighbour Discovery that RFC 4861 says to discard, or with a group or zero MAC
	DropNDQueue                           // Neighbour Discovery the link's ND goroutine had no room for
	DropNotForwarding                     // to be forwarded while forwarding is off (net.ipv6.conf.all.forwarding 0)
	DropNDHopLimit                        // Neighbour Discovery with a hop limit other than 255
	DropNDChecksum                        // Neighbour Discovery with a bad checksum
	DropRAIgnored                         // another router's Router Advertisement: a router takes none
	DropRedirectIgnored                   // a Redirect: a router takes none
	DropDADConflict                       // an advertisement of the router's own address
	DropNeighDiscard                      // not held for its neighbour's resolution: refused under a flood, or over its queue's bounds
	DropPoliced                           // for the router, over its class's limit (copp.go)
	DropUnknownVLAN                       // tagged for a VLAN no link is on (ether.go)
	DropSRv6                              // refused by an SRv6 behaviour (no SRH or no segment left, a bad one, no VRF) or encapsulation (no room) (srv6.go)
	numDropReasons
)

var dropNames = [numDropReasons]string{
	"truncated", "version", "length", "martian", "hop_limit", "no_route", "prohibited",
	"blackhole", "too_big", "link_down", "local", "write", "option", "checksum", "neigh_failed",
	"nd_invalid", "nd_queue_full", "not_forwarding", "nd_hop_limit", "nd_checksum", "ra_ignored",
	"redirect_ignored", "dad_conflict", "neigh_discard", "policed", "unknown_vlan", "seg6",
}

func (d DropReason) String() string { return dropNames[d] }

// Counters are one worker's counts for one link. Only that worker adds to
// them, anyone reads them; a link sums its workers' counters when asked,
// so packets never share a counter.
type Counters struct {
	RxPackets, RxBytes Counter
	TxPackets, TxBytes Counter
	RxErrors, TxErrors Counter
	Drops              [numDropReasons]Counter
	// ICMPLimited counts the ICMPv6 errors that packets received on the
	// link earned but that the rate limits held back. The packets are
	// counted once, under their drop reason; this is not a drop.
	ICMPLimited Counter
	// CoPP counts the packets punted to the router by class, passed and
	// dropped (copp.go); the dropped are under DropPoliced too.
	CoPP [NumCoPPClasses][2]Counter
	_    [64]byte // keep workers' counters on separate cache lines
}

// Counter is a count with a single writer: it adds with a plain atomic
// store (no locked read-modify-write), readers load it atomically.
type Counter struct{ v atomic.Uint64 }

func (c *Counter) add(n uint64) { c.v.Store(c.v.Load() + n) }

// addShared adds for a counter with several writers (an Ethernet link's
// Neighbour Discovery: its readers, its ND goroutine, administrative
// calls), which use nothing else.
func (c *Counter) addShared(n uint64) { c.v.Add(n) }

// Load returns the count.
func (c *Counter) Load() uint64 { return c.v.Load() }

// Stats are a link's counters summed over its workers.
type Stats struct {
	RxPackets, RxBytes, TxPackets, TxBytes uint64
	RxErrors, TxErrors                     uint64
	RxDropped, TxDropped                   uint64
	Drops                                  []Drop // every reason, in a fixed order
	ICMPLimited                            uint64
	CoPP                                   []CoPPCount // every class, highest first
}

// CoPPCount is one class's packets punted to the router, passed and
// dropped by its limit.
type CoPPCount struct {
	Class           string
	Passed, Dropped uint64
}

// Drop is one reason's count.
type Drop struct {
	Reason string
	Count  uint64
}

// NewCounters gives a worker its own counters on l.
func (l *Link) NewCounters() *Counters {
	c := new(Counters)
	for {
		old := l.counters.Load()
		var next []*Counters
		if old != nil {
			next = slices.Clone(*old)
		}
		next = append(next, c)
		if l.counters.CompareAndSwap(old, &next) {
			return c
		}
	}
}

// Stats sums the link's counters.
func (l *Link) Stats() Stats {
	var s Stats
	var drops [numDropReasons]uint64
	var copp [NumCoPPClasses][2]uint64
	if p := l.counters.Load(); p != nil {
		for _, c := range *p {
			s.RxPackets += c.RxPackets.Load()
			s.RxBytes += c.RxBytes.Load()
			s.TxPackets += c.TxPackets.Load()
			s.TxBytes += c.TxBytes.Load()
			s.RxErrors += c.RxErrors.Load()
			s.TxErrors += c.TxErrors.Load()
			s.ICMPLimited += c.ICMPLimited.Load()
			for i := range drops {
				drops[i] += c.Drops[i].Load()
			}
			for i := range copp {
				copp[i][coppPassed] += c.CoPP[i][coppPassed].Load()
				copp[i][coppDropped] += c.CoPP[i][coppDropped].Load()
			}
		}
	}
	if t := l.Neigh(); t != nil { // the cache counts these, from any writer
		drops[DropNeighDiscard] += t.UnresDiscards.Load()
	}
	for i, n := range drops {
		s.Drops = append(s.Drops, Drop{Reason: dropNames[i], Count: n})
		switch DropReason(i) {
		case DropWrite, DropLinkDown:
			s.TxDropped += n
		default:
			s.RxDropped += n
		}
	}
	for i, n := range copp {
		s.CoPP = append(s.CoPP, CoPPCount{Class: coppNames[i], Passed: n[coppPassed], Dropped: n[coppDropped]})
	}
	return s
}
