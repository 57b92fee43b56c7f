package dataplane

import (
	"errors"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"urouter/dataplane/port"
	"urouter/decide"
	"urouter/ndisc"
)

// Dataplane runs the packet workers of the router's links: one goroutine
// per queue of each link's port, each reading a batch, deciding its routes
// and writing it out.
type Dataplane struct {
	Links   *Links
	Decider *decide.Decider
	icmp    icmpLimits
	// redirects are limited per destination and per source
	redirects redirectLimits
	noForward atomic.Bool // net.ipv6.conf.all.forwarding is 0
	// tunSrc is the source of SRv6's outer headers (`sr tunsrc`); nil:
	// selected for each
	tunSrc atomic.Pointer[netip.Addr]
	// controlShare: a control-plane writer's share of one CPU while the
	// workers forward, in millionths (see Pacer), 0 is no limit; and the
	// nice value of its threads (NiceIdle: SCHED_IDLE), 0 is unlowered
	controlShare atomic.Uint64
	controlNice  atomic.Int32
	// paceClock is what pacers measure CPU and sleep by; nil: the
	// kernel's (a test gives its own)
	paceClock paceClock
	// clock is the limiters' and the peers' clock, nanoseconds since
	// epoch; nil: the monotonic clock (a test gives its own)
	clock atomic.Pointer[func() int64]
	// copp are the router-wide limits each link's buckets take (under
	// mu); peers the neighbours the kernel has sessions with
	copp  [NumCoPPClasses]CoPPLimit
	peers peerTable

	// neighWatch hears the Ethernet links' neighbour changes (the
	// router's gateway probing); it must not block.
	neighWatch atomic.Pointer[func(l *Link, addr netip.Addr, from, to ndisc.State)]

	// taps are the captures running and the trace armed (capture.go,
	// trace.go), nil when neither is: a batch's one load; changed under
	// tapMu (and a trace's last packet disarms it by compare-and-swap)
	taps   atomic.Pointer[taps]
	tapMu  sync.Mutex
	traces traceLog // the traced packets' records

	mu      sync.Mutex // link I/O set-up and tear-down
	workers atomic.Pointer[[]*worker]
	nextID  int
	// senders route what links make off the packet path (newSender); a
	// link's goes with it
	sendersMu sync.Mutex
	senders   []*worker
}

// New returns a dataplane over the router's links, deciding with d, with
// Linux's default ICMPv6 error limits (icmp_msgs_per_sec 1000 with bursts
// of 50; per destination one per 100 ms with bursts of 6) and the default
// limits of what is punted to the router (DefaultCoPP).
func New(links *Links, d *decide.Decider) *Dataplane {
	dp := &Dataplane{Links: links, Decider: d}
	dp.icmp.global.set(1000, 50)
	dp.icmp.perDst.set(100*time.Millisecond, 6)
	dp.SetICMPRateMask(DefaultRateMask)
	dp.redirects.init()
	dp.copp = DefaultCoPP
	dp.peers.init()
	return dp
}

// SetICMPRate limits the ICMPv6 errors the router sends to perSec a
// second with bursts of burst; 0 lifts the limit. Echo replies and Packet
// Too Big are not limited.
func (dp *Dataplane) SetICMPRate(perSec, burst int) { dp.icmp.global.set(perSec, burst) }

// SetICMPDestRate limits the ICMPv6 errors to any one destination to one
// per interval with bursts of burst (Linux's net.ipv6.icmp.ratelimit and
// its burst of 6); 0 lifts the limit.
func (dp *Dataplane) SetICMPDestRate(interval time.Duration, burst int) {
	dp.icmp.perDst.set(interval, burst)
}

// WatchNeighbours makes fn hear every change of state of the Ethernet
// links' neighbours; it runs on the link's ND goroutine or in the caller
// of a cache's administrative call, and must not block.
func (dp *Dataplane) WatchNeighbours(fn func(l *Link, addr netip.Addr, from, to ndisc.State)) {
	dp.neighWatch.Store(&fn)
}

// AddLink registers link name, down, with the given MTU, made of dev, at
// index (0: the next free one), and starts a worker for each of its port's
// queues.
func (dp *Dataplane) AddLink(name string, index int32, dev port.Device, mtu int) (*Link, error) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	l, err := dp.Links.add(name, index, dev, mtu)
	if err != nil {
		return nil, err
	}
	dp.applyCoPP(l)
	if e, ok := dev.(*ether); ok {
		e.attach(dp, l)
	}
	for _, w := range dp.addWorkers(l, dev, dev.Queues(), nil) {
		go w.RoutineRead()
	}
	return l, nil
}

// addWorkers makes and publishes (under mu) the workers of port p's first
// queues queues, reading for link l (for its mirror own, if not nil); the
// caller starts them.
func (dp *Dataplane) addWorkers(l *Link, p port.Port, queues int, own *Mirror) []*worker {
	ws := slices.Clone(dp.snapshot())
	n := len(ws)
	for q := 0; q < queues; q++ {
		w := newWorker(dp, l, p, q, dp.nextID)
		w.own = own
		dp.nextID++
		ws = append(ws, w)
	}
	dp.workers.Store(&ws)
	return ws[n:]
}

// AddLoopback creates the loopback link "lo", up, as every Linux host has
// one, at LoopbackIndex.
func (dp *Dataplane) AddLoopback() *Link {
	l, err := dp.AddLink("lo", LoopbackIndex, port.Loopback{}, 65536)
	if err != nil {
		panic("dataplane: a second loopback: " + err.Error())
	}
	dp.Links.SetUp(l, true)
	return l
}

func (dp *Dataplane) snapshot() []*worker {
	if p := dp.workers.Load(); p != nil {
		return *p
	}
	return nil
}

// Batches counts the batches the workers have read: a control-plane
// writer tells from it whether the data plane is busy (see control's
// pacer). It reads each worker's epoch, two steps a batch.
func (dp *Dataplane) Batches() uint64 {
	var n uint64
	for _, w := range dp.snapshot() {
		n += w.epoch.Load() / 2
	}
	return n
}

// Remove takes a link out of the registry and stops its I/O: after it
// returns no worker touches the link's port, which is closed.
func (dp *Dataplane) Remove(l *Link) error {
	merr := dp.ClearMirror(l)
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.Links.remove(l)
	dp.leaveVLAN(l)
	dp.endCaptures(l)
	ref := l.port.Swap(nil)
	if ref == nil {
		return merr
	}
	dp.synchronize()   // no worker is still writing to the port
	err := ref.Close() // its own workers see the close and end
	dp.dropWorkers(func(w *worker) bool { return w.home == l })
	dp.sendersMu.Lock()
	dp.senders = slices.DeleteFunc(dp.senders, func(w *worker) bool { return w.home == l })
	dp.sendersMu.Unlock()
	return errors.Join(merr, err)
}

// dropWorkers takes the workers gone selects out of the list (under mu):
// their ports are closed, so they end.
func (dp *Dataplane) dropWorkers(gone func(*worker) bool) {
	ws := slices.DeleteFunc(slices.Clone(dp.snapshot()), gone)
	dp.workers.Store(&ws)
}

// synchronize waits until every worker has finished the batch it was
// working on: the grace period after which nothing unlinked is in use.
func (dp *Dataplane) synchronize() {
	dp.sendersMu.Lock()
	ws := append(slices.Clone(dp.snapshot()), dp.senders...)
	dp.sendersMu.Unlock()
	seen := make([]uint64, len(ws))
	for i, w := range ws {
		seen[i] = w.epoch.Load()
	}
	deadline := time.Now().Add(5 * time.Second)
	for i, w := range ws {
		for seen[i]&1 == 1 && w.epoch.Load() == seen[i] && time.Now().Before(deadline) {
			runtime.Gosched()
		}
	}
}
