package ndisc

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"
)

// State is a NUD state, Linux's NUD_* bits.
type State uint8

const (
	None       State = 0x00
	Incomplete State = 0x01
	Reachable  State = 0x02
	Stale      State = 0x04
	Delay      State = 0x08
	Probe      State = 0x10
	Failed     State = 0x20
	NoARP      State = 0x40
	Permanent  State = 0x80

	// Valid states have a link-layer address (NUD_VALID).
	Valid = Permanent | NoARP | Reachable | Probe | Stale | Delay
	// Connected states need no probe to send (NUD_CONNECTED).
	Connected = Permanent | NoARP | Reachable
	// fast states send at once, without the entry's lock.
	fast = Connected | Delay | Probe
	// timed states run a timer (NUD_IN_TIMER).
	timed = Incomplete | Reachable | Delay | Probe
	// static states are the administrator's: ND never changes them.
	static = Permanent | NoARP
)

var stateNames = []struct {
	s    State
	name string
}{
	{Incomplete, "INCOMPLETE"}, {Reachable, "REACHABLE"}, {Stale, "STALE"}, {Delay, "DELAY"},
	{Probe, "PROBE"}, {Failed, "FAILED"}, {NoARP, "NOARP"}, {Permanent, "PERMANENT"},
}

// String is the state as `ip neigh` prints it.
func (s State) String() string {
	if s == None {
		return "NONE"
	}
	var names []string
	for _, n := range stateNames {
		if s&n.s != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ",")
}

// ParseState reads a state as `ip neigh ... nud STATE` names it
// (case-insensitive, "none" included).
func ParseState(s string) (State, bool) {
	u := strings.ToUpper(s)
	if u == "NONE" {
		return None, true
	}
	for _, n := range stateNames {
		if n.name == u {
			return n.s, true
		}
	}
	return 0, false
}

// MAC is an Ethernet address.
type MAC [6]byte

func (m MAC) String() string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// Params are a cache's knobs, Linux's ndisc_cache parameters (ip ntable,
// net.ipv6.neigh.DEV.*).
type Params struct {
	BaseReachable time.Duration // base_reachable_time_ms
	Retrans       time.Duration // retrans_time_ms
	DelayProbe    time.Duration // delay_first_probe_time
	GCStale       time.Duration // gc_stale_time
	UcastProbes   int           // ucast_solicit
	McastProbes   int           // mcast_solicit
	McastReprobes int           // mcast_resolicit
	QueueLen      int           // unres_qlen: packets waiting per neighbour
	QueueBytes    int           // unres_qlen_bytes: their bytes at most
	// Thresh1..3 bound the entries (gc_thresh1..3): below 1 nothing is
	// collected, above 2 collection is forced, 3 is the hard limit.
	Thresh1, Thresh2, Thresh3 int
	GCInterval                time.Duration // gc_interval
	// RFC 6583's bounds (unres.go), beyond Linux's knobs: entries
	// awaiting resolution (unres_max), those one source address may start
	// (unres_src_max), and the multicast solicitations for them per second
	// (solicit_rate, solicit_burst at once); 0 is no bound.
	UnresMax, UnresSrcMax     int
	SolicitRate, SolicitBurst int
}

// UnresFrame is what Linux counts a queued packet as, SKB_TRUESIZE of an
// Ethernet frame: a queue of N packets (unres_qlen, ntable's queue) is
// N of these in bytes (unres_qlen_bytes).
const UnresFrame = 2090

// DefaultParams are Linux's ndisc_cache defaults.
func DefaultParams() Params {
	return Params{
		BaseReachable: 30 * time.Second, Retrans: time.Second, DelayProbe: 5 * time.Second,
		GCStale: 60 * time.Second, UcastProbes: 3, McastProbes: 3, QueueLen: 101, QueueBytes: 212992,
		Thresh1: 128, Thresh2: 512, Thresh3: 1024, GCInterval: 30 * time.Second,
		UnresMax: 256, UnresSrcMax: 64, SolicitRate: 1000, SolicitBurst: 1000,
	}
}

// Check refuses knobs a cache cannot run with.
func (p Params) Check() error {
	switch {
	case p.BaseReachable <= 0 || p.Retrans <= 0 || p.DelayProbe <= 0:
		return errors.New("times must be positive")
	case p.UcastProbes < 0 || p.McastProbes < 0 || p.McastReprobes < 0 || p.QueueLen < 0 ||
		p.UnresMax < 0 || p.UnresSrcMax < 0 || p.SolicitRate < 0 || p.SolicitBurst < 0:
		return errors.New("counts must not be negative")
	case p.Thresh3 <= 0:
		return errors.New("thresh3 must be positive")
	}
	return nil
}

// Flags are an entry's NTF_* flags that `ip neigh` shows and sets.
type Flags uint8

const (
	// Router: the neighbour said it is a router (NA's R flag), or the
	// administrator said so (`ip neigh ... router`).
	Router Flags = 1 << iota
)

// Info is an entry as `ip neigh show` lists it.
type Info struct {
	Addr   netip.Addr
	MAC    MAC
	HasMAC bool
	State  State
	Flags  Flags
	// Used, Confirmed and Updated are how long ago the entry was last used,
	// confirmed reachable and changed (`ip -s neigh`).
	Used, Confirmed, Updated time.Duration
	Probes                   int
	Queued                   int
}

// coarse is the clock the fast path stamps entries with, in nanoseconds
// since start, advanced every tick by one goroutine: reading it is one
// load, where time.Now costs tens of nanoseconds per packet.
var (
	coarse    atomic.Int64
	start     = time.Now()
	clockOnce atomic.Bool
)

const tick = 10 * time.Millisecond

// Now is the cache's clock, brought up to date: what Table.Run takes.
func Now() int64 {
	t := int64(time.Since(start))
	for {
		c := coarse.Load()
		if c >= t || coarse.CompareAndSwap(c, t) {
			return max(c, t)
		}
	}
}

func startClock() {
	if clockOnce.Swap(true) {
		return
	}
	coarse.Store(int64(time.Since(start)))
	go func() {
		for range time.Tick(tick) {
			coarse.Store(int64(time.Since(start)))
		}
	}()
}
