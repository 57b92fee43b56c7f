package control

import (
	"net/netip"
	"syscall"
	"time"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/nexthop"
)

// route runs one route command.
func (s *Session) route(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.routeShow(nil, false)
	}
	w, rest := args[0], args[1:]
	switch s.routes.cmd.of(routeCmds(), w) {
	case rcAdd:
		return s.routeModify(opAdd, rest)
	case rcChange:
		return s.routeModify(opChange, rest)
	case rcReplace:
		return s.routeModify(opReplace, rest)
	case rcPrepend:
		return s.routeModify(opPrepend, rest)
	case rcAppend:
		return s.routeModify(opAppend, rest)
	case rcTest:
		return unsupported(w)
	case rcDelete:
		return s.routeModify(opDel, rest)
	case rcList:
		return s.routeShow(rest, false)
	case rcGet:
		return s.routeGet(rest)
	case rcFlush:
		return s.routeShow(rest, true)
	case rcSave:
		return s.routeSave(rest)
	case rcRestore:
		return parseErr("Error: \"route restore\" reads its routes from standard input: run it from the client (urouter route restore < FILE).")
	case rcShowdump:
		return unsupported(w)
	case rcHelp:
		return routeUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip route help\".", w)
}

// link is the link of that name, for any object's command.
func (s *Session) link(name []byte) (*dataplane.Link, *cmdErr) {
	l := s.r.Links.ByName(str(name))
	if l == nil {
		return nil, nodev(name)
	}
	return l, nil
}

// routeLink is s.link for route commands: a batch names the same link on
// every line, and the one named last is kept while it is still the link
// of that name.
func (s *Session) routeLink(name []byte) (*dataplane.Link, *cmdErr) {
	if l := s.routes.dev; l != nil && l.Name == string(name) && s.r.Links.ByIndex(l.Index) == l {
		return l, nil
	}
	l, err := s.link(name)
	if err == nil {
		s.routes.dev = l
	}
	return l, err
}

// routeModify validates and allocates everything it can before it takes
// the table's transaction, then checks the link inside it (so a link going
// down cannot race the route in) and applies.
func (s *Session) routeModify(op routeOp, args [][]byte) *cmdErr {
	var req routeReq
	q := &req
	if a := s.ahead; a != nil { // parsed ahead, from these args
		s.ahead = nil
		if a.perr != nil {
			return a.perr
		}
		q = &a.req
	} else if perr := parseRouteModify(q, args, &s.routes.words); perr != nil {
		return perr
	}
	tid, t, l, err := s.routeTarget(q)
	if err != nil {
		return err
	}
	if op == opDel {
		return s.routeDelete(q, l, t)
	}
	var rt fib6.Route
	x, err := s.routeMake(q, l, tid, t, &rt)
	if err != nil {
		return err
	}
	if err := applyRoute(x, op, &rt); err != nil {
		return err
	}
	s.routes.changed(q.dst)
	if s.adopt != nil {
		s.adopt.Adopt(x.Table().ID(), rt.Dst, rt.Src, rt.Metric)
	}
	return nil
}

// routeTarget is what a route change's request names, checked first as
// the kernel checks it: its table's id, the table (nil until a route is
// added to it) and the link.
func (s *Session) routeTarget(q *routeReq) (uint32, *fib6.Table, *dataplane.Link, *cmdErr) {
	tid := q.table
	if q.vrf != nil {
		t, err := s.vrfTable(q.vrf)
		if err != nil {
			return 0, nil, nil, err
		}
		tid = t
	}
	if tid == 0 {
		tid = fib6.TableMain
	}
	if q.tosSet { // the kernel's first check (rtm_to_fib6_config)
		return 0, nil, nil, extack("Invalid dsfield (tos): option not available for IPv6.")
	}
	if q.dst.Masked() != q.dst {
		return 0, nil, nil, extack("Invalid prefix for given prefix length.")
	}
	if q.src.IsValid() && q.src.Masked() != q.src {
		return 0, nil, nil, extack("Invalid prefix for given prefix length.")
	}
	var l *dataplane.Link
	if q.dev != nil {
		var err *cmdErr
		if l, err = s.routeLink(q.dev); err != nil {
			return 0, nil, nil, err
		}
	}
	return tid, s.r.Tables.Get(tid), l, nil
}

// routeMake makes rt the route q adds to table tid (t, nil if it does not
// exist yet), its paths checked, and returns the transaction it goes in.
func (s *Session) routeMake(q *routeReq, l *dataplane.Link, tid uint32, t *fib6.Table, rt *fib6.Route) (*fib6.Txn, *cmdErr) {
	q.fill(rt, s.clock)
	if err := s.routePaths(q, l, rt, tid, t); err != nil {
		return nil, err
	}
	if t == nil {
		t = s.r.Tables.Ensure(tid)
	}
	x := s.txnFor(t)
	if l != nil && !l.Up() && (rt.Type == fib6.Unicast || rt.Type == fib6.Local) {
		return nil, extack("Nexthop device is not up.")
	}
	if rt.Group != nil {
		for _, m := range rt.Group.Members() {
			if ll := s.r.Links.ByIndex(m.Link); ll == nil || !ll.Up() {
				return nil, extack("Nexthop device is not up.")
			}
		}
	}
	return x, nil
}

// routeDelete deletes the routes q matches in table t (nil if it does not
// exist); l is q's link.
func (s *Session) routeDelete(q *routeReq, l *dataplane.Link, t *fib6.Table) *cmdErr {
	if t == nil {
		return answers(syscall.ESRCH)
	}
	m := fib6.Match{Dst: q.dst, Src: q.src, Gateway: q.gw}
	if q.metricSet {
		m.Metric = q.metric
		if m.Metric == 0 {
			m.Metric = fib6.DefaultMetric
		}
	}
	if q.protoSet {
		m.Proto = q.proto
	}
	if q.typ != 0 {
		m.Type = q.typ
	}
	if l != nil {
		m.Link = l.Index
	}
	if q.nhidSet {
		m.NhID = q.nhid
	}
	x := s.txnFor(t)
	if len(q.legs) == 0 {
		if _, err := x.Delete(m); err != nil {
			return rejected(err)
		}
	}
	// `del P nexthop via A ... nexthop via B ...` deletes each path
	for _, lg := range q.legs {
		pm := m
		pm.Gateway = lg.gw
		if lg.dev != nil {
			ll, err := s.routeLink(lg.dev)
			if err != nil {
				return err
			}
			pm.Link = ll.Index
		}
		if _, err := x.Delete(pm); err != nil {
			return rejected(err)
		}
	}
	s.routes.changed(q.dst)
	return nil
}

// fill makes rt the route q adds, without its paths (in place: a route is
// big, and a batch adds one a line).
func (q *routeReq) fill(rt *fib6.Route, clock time.Time) {
	*rt = fib6.Route{Dst: q.dst}
	rt.Src = q.src
	rt.Type = q.typ
	if rt.Type == 0 {
		rt.Type = fib6.Unicast
	}
	rt.Proto = fib6.ProtoBoot
	if q.protoSet {
		rt.Proto = q.proto
	}
	rt.Metric = q.metric
	if rt.Metric == 0 {
		rt.Metric = fib6.DefaultMetric // Linux reads 0 as the default too
	}
	rt.MTU = q.mtu
	rt.PrefSrc = q.prefsrc
	if q.expires >= 0 {
		if clock.IsZero() { // a replayed record's expires counts from its time
			clock = time.Now()
		}
		rt.Expires = clock.Add(time.Duration(q.expires) * time.Second).UnixNano()
	}
	if q.onlink {
		rt.Nexthop.Flags |= nexthop.OnLink
	}
}

// routePaths gives rt its paths as q names them: a nexthop object, a
// multipath group or one nexthop, each checked as Linux checks it.
func (s *Session) routePaths(q *routeReq, l *dataplane.Link, rt *fib6.Route, tid uint32, t *fib6.Table) *cmdErr {
	switch {
	case q.nhidSet:
		if q.gw.IsValid() || l != nil || len(q.legs) > 0 || q.encap != nil {
			return extack("Nexthop specification and nexthop id are mutually exclusive.")
		}
		if rt.Object = s.nexthopObject(q.nhid); rt.Object == nil {
			return extack("Nexthop id does not exist.")
		}
	case len(q.legs) > 0 && (rt.Type == fib6.Unicast || rt.Type == fib6.Local):
		g, err := s.legGroup(q, tid, t)
		if err != nil {
			return err
		}
		rt.Group = g
	case rt.Type == fib6.Unicast || rt.Type == fib6.Local:
		rt.Nexthop.Gateway = q.gw
		if l != nil {
			rt.Nexthop.Link = l.Index
		}
		if err := s.checkGateway(rt, tid, t); err != nil {
			return err
		}
		if q.encap != nil && rt.Type == fib6.Unicast {
			st, err := s.buildEncap(q.encap)
			if err != nil {
				return err
			}
			rt.Nexthop.Encap = st
		}
	}
	return nil
}

// applyRoute does op with rt in the transaction.
func applyRoute(x *fib6.Txn, op routeOp, rt *fib6.Route) *cmdErr {
	var err error
	switch op {
	case opAdd:
		err = x.Add(*rt)
	case opReplace:
		err = x.Replace(*rt)
	case opAppend:
		err = x.Append(*rt)
	case opPrepend:
		err = x.Prepend(*rt)
	case opChange:
		if _, derr := x.Delete(fib6.Match{Dst: rt.Dst, Src: rt.Src, Metric: rt.Metric}); derr != nil {
			return extack("Can not replace route - no match found.")
		}
		err = x.Add(*rt)
	}
	if err != nil {
		return rejected(err)
	}
	return nil
}

// nexthopObject is nexthop object id, nil if there is none. A batch names
// the same object on every line: the route parser keeps the last one
// while it lives (the table's transaction checks that again).
func (s *Session) nexthopObject(id uint32) *nexthop.Object {
	if o := s.routes.obj; o != nil && o.ID() == id && o.Alive() {
		return o
	}
	s.routes.obj = s.r.Nexthops.Get(id)
	return s.routes.obj
}

// changed forgets the gateways and paths checked when the session's open
// transaction changes prefix p: a route added or deleted may reach them
// or no longer.
func (rp *routeParser) changed(p netip.Prefix) {
	rp.gw.changed(p)
	rp.legs.changed(p)
}
