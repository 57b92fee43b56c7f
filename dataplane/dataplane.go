package dataplane

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"urouter/fib6"
	"urouter/rules"
)

// Dataplane runs the packet workers of the router's links: one goroutine
// per TUN queue, each reading a batch, routing it through the tables and
// writing it out.
type Dataplane struct {
	Links  *Links
	Tables *fib6.Tables
	Rules  *rules.Current
	icmp   limiter

	mu      sync.Mutex // link I/O set-up and tear-down
	workers atomic.Pointer[[]*worker]
	nextID  int
}

// New returns a dataplane over the router's links and tables, with
// Linux's default ICMPv6 error rate (icmp_msgs_per_sec 1000, burst 50).
func New(links *Links, tables *fib6.Tables) *Dataplane {
	dp := &Dataplane{Links: links, Tables: tables, Rules: rules.NewCurrent()}
	dp.SetICMPRate(1000, 50)
	return dp
}

// SetICMPRate limits the ICMPv6 errors the router sends to perSec a
// second with bursts of burst; 0 lifts the limit. Echo replies are not
// limited.
func (dp *Dataplane) SetICMPRate(perSec, burst int) { dp.icmp.set(perSec, burst) }

// AddTUN creates link name as a TUN device owned by the router and starts
// its workers. The link starts down.
func (dp *Dataplane) AddTUN(name string, o TUNOptions) (*Link, error) {
	if o.MTU == 0 {
		o.MTU = 1500
	}
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.Links.ByName(name) != nil {
		return nil, ErrLinkExists
	}
	dev, err := openTUN(name, o)
	if err != nil {
		return nil, err
	}
	l, err := dp.Links.Add(name, TUN, o.MTU)
	if err != nil {
		dev.close()
		return nil, err
	}
	l.dev.Store(dev)
	ws := slices.Clone(dp.snapshot())
	for _, q := range dev.queues {
		w := newWorker(dp, l, q, dp.nextID)
		dp.nextID++
		ws = append(ws, w)
		go w.RoutineRead()
	}
	dp.workers.Store(&ws)
	return l, nil
}

func (dp *Dataplane) snapshot() []*worker {
	if p := dp.workers.Load(); p != nil {
		return *p
	}
	return nil
}

// Remove stops a link's I/O: after it returns no worker touches the link's
// device, which is closed.
func (dp *Dataplane) Remove(l *Link) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dev := l.dev.Swap(nil)
	if dev == nil {
		return
	}
	dp.synchronize() // no worker is still writing to the device
	dev.close()      // its own workers see the close and end
	var ws []*worker
	for _, w := range dp.snapshot() {
		if w.in != l {
			ws = append(ws, w)
		}
	}
	dp.workers.Store(&ws)
}

// synchronize waits until every worker has finished the batch it was
// working on: the grace period after which nothing unlinked is in use.
func (dp *Dataplane) synchronize() {
	ws := dp.snapshot()
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

// SetKernelUp brings the kernel side of a TUN link up or down while it
// is in the daemon's namespace (the forwarding lab waits for that).
func (dp *Dataplane) SetKernelUp(l *Link, up bool) {
	if l.Kind == TUN {
		setKernelUp(l.Name, up)
	}
}

// SetKernelMTU does the same for the MTU.
func (dp *Dataplane) SetKernelMTU(l *Link, mtu int) {
	if l.Kind == TUN {
		setKernelMTU(l.Name, mtu)
	}
}
