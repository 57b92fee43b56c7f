package router

import (
	"errors"
	"fmt"
	"net/netip"

	"urouter/dataplane"
	"urouter/dataplane/port"
	"urouter/fib6"
	"urouter/nexthop"
)

// The router's addresses and the routes Linux derives from them.

// addrKey names an address of a link.
type addrKey struct {
	link int32
	addr netip.Addr
}

// AddrMetric is the metric address a of link l gives its prefix route
// (`address add ... metric N`), 0 if it was given none.
func (r *Router) AddrMetric(l *dataplane.Link, a netip.Addr) uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addrMetrics[addrKey{l.Index, a}]
}

// connectedMetric is the metric of the prefix route of address a of l:
// its own, or Linux's IP6_RT_PRIO_ADDRCONF.
func (r *Router) connectedMetric(l *dataplane.Link, a netip.Addr) uint32 {
	if m := r.addrMetrics[addrKey{l.Index, a}]; m != 0 {
		return m
	}
	return ConnectedMetric
}

// addrRoutes are the routes Linux derives from an address: the local
// route of the address itself, and the connected route of its prefix
// (none on the loopback).
func (r *Router) addrRoutes(l *dataplane.Link, a netip.Prefix) (local fib6.Route, connected *fib6.Route) {
	nh := nexthop.Nexthop{Link: l.Index}
	local = fib6.Route{Dst: netip.PrefixFrom(a.Addr(), 128),
		Attrs: fib6.Attrs{Type: fib6.Local, Proto: fib6.ProtoKernel, Metric: LocalMetric, Nexthop: nh}}
	if l.Hardware().Flags()&port.FlagLoopback == 0 {
		connected = &fib6.Route{Dst: a.Masked(),
			Attrs: fib6.Attrs{Type: fib6.Unicast, Proto: fib6.ProtoKernel, Metric: r.connectedMetric(l, a.Addr()), Nexthop: nh}}
	}
	return local, connected
}

// tablesOf are the tables l's addresses put their local and connected
// routes in: its VRF's for both, else local and main (Linux's
// l3mdev_fib_table).
func (r *Router) tablesOf(l *dataplane.Link) (local, main *fib6.Table) {
	if _, t := l.L3(); t != 0 {
		vt := r.Tables.Ensure(t)
		return vt, vt
	}
	return r.Tables.Local(), r.Tables.Main()
}

// install adds an address's routes. They are appended beside what is
// there, as Linux inserts kernel routes without NLM_F_EXCL: the same
// address on two links has two local routes, a prefix on two links two
// connected routes; the same route again (a second address in a prefix)
// is already there.
func (r *Router) install(l *dataplane.Link, a netip.Prefix) error {
	local, connected := r.addrRoutes(l, a)
	lt, mt := r.tablesOf(l)
	if err := appendRoute(lt, local); err != nil {
		return fmt.Errorf("local route of %s: %w", a, err)
	}
	if connected != nil {
		if err := appendRoute(mt, *connected); err != nil {
			r.uninstall(l, a)
			return fmt.Errorf("connected route of %s: %w", a, err)
		}
	}
	return nil
}

func appendRoute(t *fib6.Table, rt fib6.Route) error {
	x := t.Begin()
	defer x.Commit()
	if err := x.Append(rt); err != nil && !errors.Is(err, fib6.ErrExists) {
		return err
	}
	return nil
}

// uninstall removes an address's routes: its local route, and the
// connected route unless another address of the link still has the
// prefix and the metric.
func (r *Router) uninstall(l *dataplane.Link, a netip.Prefix) {
	local, connected := r.addrRoutes(l, a)
	lt, _ := r.tablesOf(l)
	deleteRoute(lt, local)
	if connected != nil {
		r.uninstallConnected(l, a, *connected)
	}
}

func (r *Router) uninstallConnected(l *dataplane.Link, a netip.Prefix, connected fib6.Route) {
	for _, o := range l.Addrs() {
		if o.Masked() == connected.Dst && o != a && r.connectedMetric(l, o.Addr()) == connected.Metric {
			return // another address still has the prefix
		}
	}
	_, mt := r.tablesOf(l)
	deleteRoute(mt, connected)
}

// deleteRoute removes rt; it may be gone already (a flush, a user's
// `route del`), which is no error.
func deleteRoute(t *fib6.Table, rt fib6.Route) {
	x := t.Begin()
	defer x.Commit()
	_, _ = x.Delete(fib6.Match{Dst: rt.Dst, Metric: rt.Metric, Proto: rt.Proto, Type: rt.Type, Link: rt.Nexthop.Link}) // gone already is fine
}

// ErrIPv6Disabled refuses an address on a link with disable_ipv6 set.
var ErrIPv6Disabled = errors.New("ipv6: IPv6 is disabled on this device.")

// AddAddr gives the router address a (with its prefix length) on link l,
// and, if l is up, the address's routes. On error nothing changed.
func (r *Router) AddAddr(l *dataplane.Link, a netip.Prefix) error {
	return r.SetAddr(l, a, 0, false)
}

// SetAddr gives l address a whose prefix route has the given metric (0:
// Linux's 256). With replace, an address l has already is changed (a new
// metric, if one is given, moves its prefix route) rather than refused,
// as `address change` and `replace` do.
func (r *Router) SetAddr(l *dataplane.Link, a netip.Prefix, metric uint32, replace bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !l.IPv6Enabled() {
		return ErrIPv6Disabled
	}
	key := addrKey{l.Index, a.Addr()}
	for _, o := range l.Addrs() {
		if o.Addr() == a.Addr() && replace {
			return r.changeMetric(l, o, metric)
		}
	}
	if err := r.Links.AddAddr(l, a); err != nil {
		return err
	}
	if metric != 0 {
		r.addrMetrics[key] = metric
	}
	if l.Up() {
		if err := r.install(l, a); err != nil {
			// the address was added just now under r.mu: it is there to delete
			_, _ = r.Links.DelAddr(l, a)
			delete(r.addrMetrics, key)
			return err
		}
	}
	r.tell(AddrAdded, l, a)
	return nil
}

// changeMetric moves address a's prefix route to metric (0: it stays),
// as Linux's modify_prefix_route.
func (r *Router) changeMetric(l *dataplane.Link, a netip.Prefix, metric uint32) error {
	key := addrKey{l.Index, a.Addr()}
	if metric == 0 || metric == r.addrMetrics[key] {
		return nil
	}
	_, old := r.addrRoutes(l, a) // with the old metric
	r.addrMetrics[key] = metric
	if old == nil || !l.Up() {
		return nil
	}
	r.uninstallConnected(l, a, *old)
	_, nw := r.addrRoutes(l, a)
	_, mt := r.tablesOf(l)
	return appendRoute(mt, *nw)
}

// DelAddr removes address a from l, with its routes, and returns the
// address removed.
func (r *Router) DelAddr(l *dataplane.Link, a netip.Prefix) (netip.Prefix, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	removed, err := r.Links.DelAddr(l, a)
	if err != nil {
		return netip.Prefix{}, err
	}
	if l.Up() {
		r.uninstall(l, removed)
	}
	delete(r.addrMetrics, addrKey{l.Index, removed.Addr()})
	r.tell(AddrDeleted, l, removed)
	return removed, nil
}
