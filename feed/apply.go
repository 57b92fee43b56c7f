package feed

import (
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"urouter/fib6"
	"urouter/nexthop"
	"urouter/router"
)

// Stats are a feed's counters, read by `fpm show` and the metrics.
type Stats struct {
	Messages       atomic.Uint64 // decoded
	Routes         atomic.Uint64 // added or replaced
	RouteDeletes   atomic.Uint64
	Nexthops       atomic.Uint64 // added or replaced
	NexthopDeletes atomic.Uint64
	Skipped        atomic.Uint64 // not IPv6, a type urouter has no use for, an unknown interface
	Rejected       atomic.Uint64 // refused by a table or the registry
	Malformed      atomic.Uint64 // frames or messages refused whole
	Swept          atomic.Uint64 // left over from an earlier session and removed
	Transactions   atomic.Uint64 // commits
}

// routeKey is a route's identity in Linux's IPv6 tables.
type routeKey struct {
	table    uint32
	dst, src netip.Prefix
	metric   uint32
}

// Applier applies decoded messages to a router, remembering what it
// installed so that a new session can sweep what the last one left and
// the new one did not repeat.
type Applier struct {
	r *router.Router
	// linkOf maps a kernel interface index to a router link index (0:
	// none).
	linkOf func(kernelIndex int32) int32
	Stats  Stats
	// LastError is the last refusal, for `fpm show`.
	lastErr atomic.Pointer[string]
	// updated is when the last batch was committed (Unix ns)
	updated atomic.Int64

	mu  sync.Mutex // one writer at a time; held while a batch applies
	gen uint32
	// owned is what earlier sessions installed (and the current one,
	// once it settled). Until it settles, the current session's routes
	// are only appended to replay: a set of a full table's keys costs as
	// much as the table's load, so it is built once, by Sweep, after the
	// load.
	owned    map[routeKey]struct{}
	replay   []routeKey
	settled  bool
	nexthops map[uint32]uint32    // id -> the session that last said it
	txns     map[uint32]*fib6.Txn // open while a batch applies
	// pending are groups that named a member not seen yet: zebra's replay
	// may send a group before its members. Each is added once they are.
	pending map[uint32]NexthopMsg
}

// NewApplier returns an applier into r; linkOf maps the kernel's interface
// indexes to the router's links.
func NewApplier(r *router.Router, linkOf func(int32) int32) *Applier {
	return &Applier{r: r, linkOf: linkOf, gen: 1, owned: map[routeKey]struct{}{},
		nexthops: map[uint32]uint32{}, txns: map[uint32]*fib6.Txn{}, pending: map[uint32]NexthopMsg{}}
}

// LastError is the last message the router refused, and why.
func (a *Applier) LastError() string {
	if p := a.lastErr.Load(); p != nil {
		return *p
	}
	return ""
}

// Begin starts a new session: Sweep removes what the sessions before
// installed and this one has not said again. What a session that never
// settled said is kept for the next one to sweep.
func (a *Applier) Begin() Session {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range a.replay {
		a.owned[k] = struct{}{}
	}
	a.replay, a.settled = a.replay[:0], false
	a.gen++
	return Session(a.gen)
}

// Session is a session's right to change what the applier installed; it
// lapses when a newer session begins, so what a replaced connection still
// had buffered cannot pass for the new session's replay.
type Session uint32

// Apply applies msgs in the current session.
func (a *Applier) Apply(msgs []Msg) {
	a.mu.Lock()
	s := Session(a.gen)
	a.mu.Unlock()
	a.ApplyIn(s, msgs)
}

// ApplyIn applies msgs in order for session s, each table's routes in one
// transaction committed at the end (a nexthop deletion, which walks the
// tables, commits what is open first). It applies nothing and returns
// false if a newer session has begun.
func (a *Applier) ApplyIn(s Session, msgs []Msg) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if uint32(s) != a.gen {
		return false
	}
	for i := range msgs {
		m := &msgs[i]
		a.Stats.Messages.Add(1)
		if m.Skip != "" {
			a.Stats.Skipped.Add(1)
			continue
		}
		var err error
		switch m.Kind {
		case RouteAdd:
			err = a.addRoute(m)
		case RouteDel:
			err = a.delRoute(&m.Route)
		case NexthopAdd:
			err = a.addNexthop(&m.Nexthop)
		case NexthopDel:
			a.commit()
			err = a.delNexthop(m.Nexthop.ID)
		}
		if err != nil {
			a.refused(m, err)
		}
	}
	a.commit()
	a.updated.Store(time.Now().UnixNano())
	return true
}

// Updated is when the last batch of messages was applied.
func (a *Applier) Updated() time.Time { return time.Unix(0, a.updated.Load()) }

func (a *Applier) refused(m *Msg, err error) {
	if err == errSkip {
		a.Stats.Skipped.Add(1)
		return
	}
	a.Stats.Rejected.Add(1)
	s := describe(m) + ": " + err.Error()
	a.lastErr.Store(&s)
}

func (a *Applier) commit() {
	for id, x := range a.txns {
		x.Commit()
		delete(a.txns, id)
		a.Stats.Transactions.Add(1)
	}
}

// txn is table t's transaction for the batch, opened on first use.
func (a *Applier) txn(t *fib6.Table) *fib6.Txn {
	if x := a.txns[t.ID()]; x != nil {
		return x
	}
	x := t.Begin()
	a.txns[t.ID()] = x
	return x
}

func keyOf(r *RouteMsg) routeKey {
	k := routeKey{table: r.Table, dst: r.Dst, src: r.Src, metric: r.Metric}
	if k.table == 0 {
		k.table = fib6.TableMain
	}
	if k.metric == 0 {
		k.metric = fib6.DefaultMetric // IPv6 reads 0 as the default, as Linux
	}
	return k
}

// errSkip: a message naming an interface that is none of the router's
// links' mirrors; counted as skipped, not refused.
var errSkip = &nexthop.Error{Errno: syscall.ENODEV, Msg: "no link for the interface"}

func (a *Applier) path(p Path) (nexthop.Nexthop, error) {
	nh := nexthop.Nexthop{Gateway: p.Gateway}
	if p.OIF != 0 {
		if nh.Link = a.linkOf(p.OIF); nh.Link == 0 {
			return nh, errSkip
		}
	}
	if p.OnLink {
		nh.Flags |= nexthop.OnLink
	}
	return nh, nil
}

// routeType is the table's type of an RTN_* the decoder let through.
func routeType(t uint8) fib6.Type {
	switch t {
	case syscall.RTN_BLACKHOLE:
		return fib6.Blackhole
	case syscall.RTN_UNREACHABLE:
		return fib6.Unreachable
	case syscall.RTN_PROHIBIT:
		return fib6.Prohibit
	}
	return fib6.Unicast
}

func (a *Applier) addRoute(m *Msg) error {
	q := &m.Route
	k := keyOf(q)
	rt := fib6.Route{Dst: q.Dst}
	rt.Src, rt.Metric, rt.Type, rt.Proto = q.Src, k.metric, routeType(q.Type), fib6.Proto(q.Proto)
	rt.PrefSrc, rt.MTU = q.PrefSrc, q.MTU
	if rt.Type == fib6.Unicast {
		switch {
		case q.NhID != 0:
			if rt.Object = a.r.Nexthops.Get(q.NhID); rt.Object == nil {
				return &nexthop.Error{Errno: syscall.EINVAL, Msg: "Nexthop id does not exist."}
			}
		case len(q.Paths) > 0:
			ms := make([]nexthop.Member, len(q.Paths))
			for i, p := range q.Paths {
				nh, err := a.path(p)
				if err != nil {
					return err
				}
				ms[i] = nexthop.Member{Nexthop: nh, Weight: p.Weight}
			}
			rt.Group = nexthop.NewGroup(ms)
		default:
			nh, err := a.path(q.Path)
			if err != nil {
				return err
			}
			rt.Nexthop = nh
		}
	}
	// zebra's updates and the kernel's notifications say the whole route:
	// an `ip route append` is notified as the route with all its paths.
	if err := a.txn(a.r.Tables.Ensure(k.table)).Replace(rt); err != nil {
		return err
	}
	if a.settled {
		a.owned[k] = struct{}{}
	} else {
		a.replay = append(a.replay, k)
	}
	a.Stats.Routes.Add(1)
	return nil
}

func (a *Applier) delRoute(q *RouteMsg) error {
	k := keyOf(q)
	t := a.r.Tables.Get(k.table)
	if t == nil {
		return fib6.ErrNoRoute
	}
	m := fib6.Match{Dst: k.dst, Src: k.src, Metric: k.metric}
	if len(q.Paths) == 0 && q.NhID == 0 && q.Gateway.IsValid() {
		m.Gateway = q.Gateway // one path of a multipath route, as the kernel says it
	}
	if _, err := a.txn(t).Delete(m); err != nil {
		return err
	}
	if !m.Gateway.IsValid() && a.settled {
		delete(a.owned, k) // one path gone leaves the route (and Sweep's claim on it)
	}
	a.Stats.RouteDeletes.Add(1)
	return nil
}

func (a *Applier) addNexthop(n *NexthopMsg) error {
	for _, e := range n.Group {
		if a.r.Nexthops.Get(e.ID) == nil {
			a.pending[n.ID] = *n // until its members come
			return nil
		}
	}
	delete(a.pending, n.ID)
	if err := a.putNexthop(n); err != nil {
		return err
	}
	for id, g := range a.pending { // groups that waited for it
		if slices.ContainsFunc(g.Group, func(e GroupEntry) bool { return e.ID == n.ID }) {
			if err := a.addNexthop(&g); err != nil {
				delete(a.pending, id)
				a.refused(&Msg{Kind: NexthopAdd, Nexthop: g}, err)
			}
		}
	}
	return nil
}

func (a *Applier) putNexthop(n *NexthopMsg) error {
	s := nexthop.Spec{ID: n.ID, Proto: n.Proto, Family: n.Family}
	switch {
	case len(n.Group) > 0:
		s.Family = nexthop.FamilyUnspec
		for _, e := range n.Group {
			s.Group = append(s.Group, nexthop.Entry{ID: e.ID, Weight: e.Weight})
		}
		if n.Resilient {
			s.Type = nexthop.ResilientType
		}
	case n.Blackhole:
		s.Flags |= nexthop.Blackhole
	default:
		nh, err := a.path(Path{Gateway: n.Gateway, OIF: n.OIF, OnLink: n.OnLink})
		if err != nil {
			return err
		}
		s.Nexthop = nh
		if s.Gateway.Is6() {
			s.Family = nexthop.FamilyInet6
		}
	}
	if _, err := a.r.Nexthops.Add(s, true); err != nil {
		if a.r.Nexthops.Get(s.ID) == nil {
			return err
		}
		// An id reused for what the registry does not replace in place
		// (a group where a nexthop was: zebra's ids after it restarted).
		a.commit()
		a.r.DeleteNexthop(s.ID)
		if _, err := a.r.Nexthops.Add(s, false); err != nil {
			return err
		}
	}
	a.nexthops[n.ID] = a.gen
	a.Stats.Nexthops.Add(1)
	return nil
}

func (a *Applier) delNexthop(id uint32) error {
	if _, ok := a.pending[id]; ok {
		delete(a.pending, id)
		return nil
	}
	if a.r.Nexthops.Get(id) == nil {
		return &nexthop.Error{Errno: syscall.ENOENT, Msg: "Nexthop id does not exist."}
	}
	delete(a.nexthops, id)
	a.Stats.NexthopDeletes.Add(1)
	return a.r.DeleteNexthop(id)
}

// SweepIn removes what earlier sessions installed and session s has not
// said again: routes first, then nexthop groups, then nexthops. From then
// on s is settled. It returns how many it removed, or -1 (sweeping
// nothing) if a newer session has begun.
func (a *Applier) SweepIn(s Session) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if uint32(s) != a.gen {
		return -1
	}
	said := make(map[routeKey]struct{}, len(a.replay))
	for _, k := range a.replay {
		said[k] = struct{}{}
	}
	n := 0
	for k := range a.owned {
		if _, ok := said[k]; ok {
			continue
		}
		if t := a.r.Tables.Get(k.table); t != nil {
			if _, err := a.txn(t).Delete(fib6.Match{Dst: k.dst, Src: k.src, Metric: k.metric}); err == nil {
				n++
			}
		}
	}
	a.commit()
	a.owned, a.replay, a.settled = said, nil, true
	var groups, singles []uint32 // groups go first, as Linux flushes them
	for id, g := range a.nexthops {
		switch o := a.r.Nexthops.Get(id); {
		case g == a.gen:
		case o != nil && o.Load().IsGroup():
			groups = append(groups, id)
		default:
			singles = append(singles, id)
		}
	}
	for _, id := range append(groups, singles...) {
		delete(a.nexthops, id)
		if a.r.Nexthops.Get(id) != nil && a.r.DeleteNexthop(id) == nil {
			n++
		}
	}
	a.Stats.Swept.Add(uint64(n))
	return n
}

// Replayed reports whether the current session has said at least as many
// routes as the sessions before left installed.
func (a *Applier) Replayed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.replay) >= len(a.owned)
}

// Owned is how many routes and nexthop objects the feed has installed
// (before a session settles, routes it repeated count twice).
func (a *Applier) Owned() (routes, nexthops int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.owned) + len(a.replay), len(a.nexthops)
}

func describe(m *Msg) string {
	switch m.Kind {
	case RouteAdd:
		return "route add " + m.Route.Dst.String()
	case RouteDel:
		return "route del " + m.Route.Dst.String()
	case NexthopAdd:
		return "nexthop add id " + strconv.FormatUint(uint64(m.Nexthop.ID), 10)
	case NexthopDel:
		return "nexthop del id " + strconv.FormatUint(uint64(m.Nexthop.ID), 10)
	}
	return "message"
}
