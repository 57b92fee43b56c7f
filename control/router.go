package control

import (
	"net/netip"
	"sync"
	"syscall"
	"time"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/nexthop"
)

// Metrics of the routes the router derives from its addresses, as Linux
// gives them.
const (
	connectedMetric = 256
	localMetric     = 0
)

// Router is the state the daemon serves: routing tables and links. Route
// commands go straight to their table's transaction; link and address
// commands, which change several tables at once, take mu.
type Router struct {
	Tables *fib6.Tables
	Links  *dataplane.Links
	DP     *dataplane.Dataplane
	mu     sync.Mutex
	hub    hub
}

// NewRouter returns a router with its loopback link and ::1 on it.
func NewRouter() *Router {
	r := &Router{Tables: fib6.NewTables()}
	r.hub.r = r
	r.Links = dataplane.NewLinks(r.hub.linkChanged)
	r.DP = dataplane.New(r.Links, r.Tables)
	lo := r.Links.ByName("lo")
	r.addAddr(lo, netip.PrefixFrom(netip.IPv6Loopback(), 128))
	return r
}

// addrRoutes are the routes Linux derives from an address: the local
// route of the address itself, and the connected route of its prefix.
func addrRoutes(l *dataplane.Link, a netip.Prefix) (local, connected fib6.Route) {
	nh := nexthop.Nexthop{Link: l.Index}
	local = fib6.Route{Dst: netip.PrefixFrom(a.Addr(), 128),
		Attrs: fib6.Attrs{Type: fib6.Local, Proto: fib6.ProtoKernel, Metric: localMetric, Nexthop: nh}}
	connected = fib6.Route{Dst: a.Masked(),
		Attrs: fib6.Attrs{Type: fib6.Unicast, Proto: fib6.ProtoKernel, Metric: connectedMetric, Nexthop: nh}}
	return local, connected
}

func (r *Router) installAddr(l *dataplane.Link, a netip.Prefix) {
	local, connected := addrRoutes(l, a)
	x := r.Tables.Local().Begin()
	x.Add(local)
	x.Commit()
	if a.Bits() < 128 && l.Kind != dataplane.Loopback {
		x = r.Tables.Main().Begin()
		x.Add(connected) // a second address in the prefix finds it there
		x.Commit()
	}
}

func (r *Router) uninstallAddr(l *dataplane.Link, a netip.Prefix) {
	local, connected := addrRoutes(l, a)
	x := r.Tables.Local().Begin()
	x.Delete(fib6.Match{Dst: local.Dst, Metric: localMetric, Proto: fib6.ProtoKernel, Type: fib6.Local, Link: l.Index})
	x.Commit()
	for _, o := range l.Addrs() {
		if o.Masked() == connected.Dst {
			return // another address still has the prefix
		}
	}
	x = r.Tables.Main().Begin()
	x.Delete(fib6.Match{Dst: connected.Dst, Metric: connectedMetric, Proto: fib6.ProtoKernel, Link: l.Index})
	x.Commit()
}

func (r *Router) addAddr(l *dataplane.Link, a netip.Prefix) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.Links.AddAddr(l, a); err != nil {
		return err
	}
	if l.Up() {
		r.installAddr(l, a)
	}
	r.hub.addrChanged(l, a, false)
	return nil
}

func (r *Router) delAddr(l *dataplane.Link, a netip.Prefix) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	removed, err := r.Links.DelAddr(l, a)
	if err != nil {
		return err
	}
	if l.Up() {
		r.uninstallAddr(l, removed)
	}
	r.hub.addrChanged(l, removed, true)
	return nil
}

// setUp brings a link up or down. Down does what Linux does to IPv6 on a
// link going down: its routes go from every table, and so do its
// addresses (keep_addr_on_down is 0 by default).
func (r *Router) setUp(l *dataplane.Link, up bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setUpLocked(l, up)
}

func (r *Router) setUpLocked(l *dataplane.Link, up bool) {
	r.DP.SetKernelUp(l, up)
	if l.Up() == up {
		return
	}
	r.Links.SetUp(l, up)
	if up {
		for _, a := range l.Addrs() {
			r.installAddr(l, a)
		}
		return
	}
	// Route adds check that their link is up inside their table's
	// transaction, so after this flush no route through l remains.
	for _, t := range r.Tables.All() {
		t.Flush(fib6.Filter{Link: l.Index})
	}
	for _, a := range l.Addrs() {
		r.Links.DelAddr(l, a)
		r.hub.addrChanged(l, a, true)
	}
}

func (r *Router) delLink(l *dataplane.Link) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l.Kind == dataplane.Loopback {
		return syscall.EOPNOTSUPP
	}
	r.setUpLocked(l, false)
	r.DP.Remove(l)
	r.Links.Delete(l)
	return nil
}

// expireRoutes deletes routes whose time has come, once a second.
func (r *Router) expireRoutes(stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			for _, t := range r.Tables.All() {
				t.Expire(now.UnixNano())
			}
		}
	}
}
