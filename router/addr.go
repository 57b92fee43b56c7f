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

// addrRoutes are the routes Linux derives from an address: the local
// route of the address itself, and the connected route of its prefix
// (none on the loopback).
func addrRoutes(l *dataplane.Link, a netip.Prefix) (local fib6.Route, connected *fib6.Route) {
	nh := nexthop.Nexthop{Link: l.Index}
	local = fib6.Route{Dst: netip.PrefixFrom(a.Addr(), 128),
		Attrs: fib6.Attrs{Type: fib6.Local, Proto: fib6.ProtoKernel, Metric: LocalMetric, Nexthop: nh}}
	if l.Flags()&port.FlagLoopback == 0 {
		connected = &fib6.Route{Dst: a.Masked(),
			Attrs: fib6.Attrs{Type: fib6.Unicast, Proto: fib6.ProtoKernel, Metric: ConnectedMetric, Nexthop: nh}}
	}
	return local, connected
}

// install adds an address's routes. They are appended beside what is
// there, as Linux inserts kernel routes without NLM_F_EXCL: the same
// address on two links has two local routes, a prefix on two links two
// connected routes; the same route again (a second address in a prefix)
// is already there.
func (r *Router) install(l *dataplane.Link, a netip.Prefix) error {
	local, connected := addrRoutes(l, a)
	if err := appendRoute(r.Tables.Local(), local); err != nil {
		return fmt.Errorf("local route of %s: %w", a, err)
	}
	if connected != nil {
		if err := appendRoute(r.Tables.Main(), *connected); err != nil {
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
// prefix.
func (r *Router) uninstall(l *dataplane.Link, a netip.Prefix) {
	local, connected := addrRoutes(l, a)
	deleteRoute(r.Tables.Local(), local)
	if connected == nil {
		return
	}
	for _, o := range l.Addrs() {
		if o.Masked() == connected.Dst && o != a {
			return // another address still has the prefix
		}
	}
	deleteRoute(r.Tables.Main(), *connected)
}

// deleteRoute removes rt; it may be gone already (a flush, a user's
// `route del`), which is no error.
func deleteRoute(t *fib6.Table, rt fib6.Route) {
	x := t.Begin()
	defer x.Commit()
	_, _ = x.Delete(fib6.Match{Dst: rt.Dst, Metric: rt.Metric, Proto: rt.Proto, Type: rt.Type, Link: rt.Nexthop.Link}) // gone already is fine
}

// AddAddr gives the router address a (with its prefix length) on link l,
// and, if l is up, the address's routes. On error nothing changed.
func (r *Router) AddAddr(l *dataplane.Link, a netip.Prefix) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.Links.AddAddr(l, a); err != nil {
		return err
	}
	if l.Up() {
		if err := r.install(l, a); err != nil {
			// the address was added just now under r.mu: it is there to delete
			_, _ = r.Links.DelAddr(l, a)
			return err
		}
	}
	r.tell(AddrAdded, l, a)
	return nil
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
	r.tell(AddrDeleted, l, removed)
	return removed, nil
}
