package router

import (
	"net/netip"
	"sync/atomic"
	"time"

	"urouter/dataplane"
	"urouter/dataplane/port"
	"urouter/ndisc"
	"urouter/nexthop"
)

// Ethernet links: a TAP of the router's or an existing interface
// (AF_PACKET), each with a link-local address while up, a neighbour cache
// and Neighbour Discovery (packages dataplane and ndisc), and what a
// gateway's failure does to routes, below (ndisc.Probes keeps its
// probes' schedule).

// AddTAP creates link name as a TAP device of the router's, down.
func (r *Router) AddTAP(name string, o port.TAPOptions, eo dataplane.EtherOptions) (*dataplane.Link, error) {
	if o.MTU == 0 {
		o.MTU = 1500
	}
	eo.Neigh, eo.Held = r.defaultNeigh(eo.Neigh), r.held
	open := func() (port.Device, error) { return dataplane.OpenTAP(name, o, eo) }
	if r.paper {
		open = func() (port.Device, error) { return dataplane.PaperTAP(o, eo) }
	}
	return r.addLink(name, eo.Index, o.MTU, open)
}

// AddHost attaches link name to interface dev, down; the link's MTU is
// the interface's. Without an interface of that name the link waits for
// one (hostlink.go), its MTU 1500 until then.
func (r *Router) AddHost(name, dev string, eo dataplane.EtherOptions) (*dataplane.Link, error) {
	eo.Neigh, eo.Held = r.defaultNeigh(eo.Neigh), r.held
	return r.addLinkMTU(name, eo.Index, func() (port.Device, int, error) {
		openHost := dataplane.OpenHost
		if r.paper {
			openHost = dataplane.PaperHost
		}
		d, mtu, err := openHost(dev, eo)
		if mtu == 0 {
			mtu = 1500
		}
		return d, mtu, err
	})
}

// defaultNeigh is p, or if none is given net.ipv6.neigh.default's knobs.
func (r *Router) defaultNeigh(p ndisc.Params) ndisc.Params {
	if p == (ndisc.Params{}) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.sys.neighDflt
	}
	return p
}

// Held is what the links' caches hold for resolution now, together.
func (r *Router) Held() int64 { return r.held.Held() }

// HeldMax bounds it (unres_total_bytes).
func (r *Router) HeldMax() int64 { return r.held.Max() }

// DefaultRouterProbeInterval is Linux's router_probe_interval: how often a
// gateway that does not answer is solicited again.
const DefaultRouterProbeInterval = 60 * time.Second

// gateways is the router's view of the gateways whose neighbour entry
// FAILED: their members of inline multipath routes are dead (no flows hash
// to them; groups of nexthop objects pass over them as they select, see
// neighbours) and they are solicited again every probe interval
// (ndisc.Probes, Linux's rt6_probe), until one answers and its members
// come back.
type gateways struct {
	failed *ndisc.Probes[nexthop.Gateway]
	events chan neighEvent // failures and recoveries
	all    chan neighEvent // every change, while someone watches
	watch  atomic.Pointer[func(l *dataplane.Link, a netip.Addr, from, to ndisc.State)]
}

type neighEvent struct {
	l        *dataplane.Link
	addr     netip.Addr
	from, to ndisc.State
}

// SetRouterProbeInterval sets how often a gateway that failed is probed.
func (r *Router) SetRouterProbeInterval(d time.Duration) { r.gws.failed.SetInterval(d) }

// WatchNeighbours makes fn hear every change of a neighbour's state from
// now on (nil: none), as `ip monitor neigh` reports them. fn runs on the
// router's own goroutine and must not block.
func (r *Router) WatchNeighbours(fn func(l *dataplane.Link, a netip.Addr, from, to ndisc.State)) {
	if fn == nil {
		r.gws.watch.Store(nil)
	} else {
		r.gws.watch.Store(&fn)
	}
}

// neighChanged hears the links' neighbour news; it runs on a link's ND
// goroutine (or in a packet worker starting a resolution) and never
// blocks: a full queue loses the news (the next failure or answer brings
// it again).
func (r *Router) neighChanged(l *dataplane.Link, a netip.Addr, from, to ndisc.State) {
	ev := neighEvent{l, a, from, to}
	if to == ndisc.Failed || to&ndisc.Valid != 0 && from&ndisc.Valid == 0 {
		select { // failures and recoveries: a queue of their own, so a flood of others cannot crowd them out
		case r.gws.events <- ev:
		default:
		}
	}
	if r.gws.watch.Load() != nil {
		select {
		case r.gws.all <- ev:
		default:
		}
	}
}

// routineGateways applies neighbour failures and recoveries to the paths
// through them, and probes the failed gateways.
func (r *Router) routineGateways(stop <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case ev := <-r.gws.events:
			r.gatewayEvent(ev)
		case ev := <-r.gws.all:
			if fn := r.gws.watch.Load(); fn != nil {
				(*fn)(ev.l, ev.addr, ev.from, ev.to)
			}
		case now := <-tick.C:
			r.probeGateways(now)
		}
	}
}

func (r *Router) gatewayEvent(ev neighEvent) {
	g := nexthop.Gateway{Link: ev.l.Index, Addr: ev.addr}
	failed := ev.to == ndisc.Failed
	if failed == r.gws.failed.Failing(g) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Links.ByIndex(g.Link) != ev.l {
		return // the link went
	}
	n := 0
	if failed && r.Nexthops.Uses(g) {
		n++ // its groups pass over it as they select (neighbours.Good): it is probed
	}
	for _, t := range r.Tables.All() {
		x := t.Begin()
		n += x.GatewayChanged(g.Link, g.Addr, failed)
		x.Commit()
	}
	if failed && n == 0 {
		return // not a gateway of any multipath route or group
	}
	tbl := ev.l.Neigh()
	if failed {
		r.gws.failed.Fail(g, time.Now())
	} else {
		r.gws.failed.Recover(g)
	}
	if tbl != nil {
		tbl.Pin(g.Addr, failed)
	}
}

// probeGateways solicits each failed gateway once per probe interval.
func (r *Router) probeGateways(now time.Time) {
	for _, g := range r.gws.failed.Due(now) {
		if l := r.Links.ByIndex(g.Link); l != nil && l.Neigh() != nil {
			l.Neigh().Probe(g.Addr)
		}
	}
}

// forgetGateways drops the failed gateways of a link that goes; r.mu is
// held.
func (r *Router) forgetGateways(l *dataplane.Link) {
	r.gws.failed.Forget(func(g nexthop.Gateway) bool { return g.Link == l.Index })
}

// neighbours tells a group of nexthop objects which gateways it may
// choose (Linux's ipv6_good_nh): those with no neighbour entry, or a valid
// one. It reads the links and their caches without a lock, for the packet
// path.
type neighbours struct{ links *dataplane.Links }

func (n neighbours) Good(link int32, gw netip.Addr) bool {
	l := n.links.ByIndex(link)
	if l == nil {
		return true
	}
	t := l.Neigh()
	if t == nil {
		return true // a link without neighbours (TUN) resolves none
	}
	s, ok := t.StateOf(gw)
	return !ok || s&ndisc.Valid != 0
}

// addLinkLocal gives an Ethernet link coming up its link-local address
// (from its MAC), as Linux's addrconf does; r.mu is held.
func (r *Router) addLinkLocal(l *dataplane.Link) error {
	ll, ok := l.LinkLocal()
	if !ok {
		return nil
	}
	if err := r.Links.AddAddr(l, ll); err != nil {
		return nil // the user gave it already
	}
	r.tell(AddrAdded, l, ll)
	return r.install(l, ll)
}
