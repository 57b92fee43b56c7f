package feed

import (
	"net/netip"
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
	Rejected       atomic.Uint64 // refused by a table or the registry, or for an encapsulation
	Malformed      atomic.Uint64 // frames or messages refused whole
	Swept          atomic.Uint64 // left over from an earlier session and removed
	Transactions   atomic.Uint64 // commits
	// PendingOverflow: nexthop groups refused because MaxPending groups
	// (or MaxPendingMembers members) already wait for their members.
	PendingOverflow atomic.Uint64
}

// routeKey is a route's identity in Linux's IPv6 tables: table,
// destination, source and metric, in plain memory (a map of them hashes
// and compares fewer bytes than one of netip.Prefix, which holds a
// pointer). A prefix length is stored plus one: 0 is no prefix.
type routeKey struct {
	dst, src       [16]byte
	table, metric  uint32
	dstLen, srcLen uint8
}

func prefixKey(p netip.Prefix) ([16]byte, uint8) {
	if !p.IsValid() {
		return [16]byte{}, 0
	}
	return p.Addr().As16(), uint8(p.Bits() + 1)
}

func keyPrefix(a [16]byte, n uint8) netip.Prefix {
	if n == 0 {
		return netip.Prefix{}
	}
	return netip.PrefixFrom(netip.AddrFrom16(a), int(n)-1)
}

// prefixes are k's destination, source and metric.
func (k routeKey) prefixes() (dst, src netip.Prefix, metric uint32) {
	return keyPrefix(k.dst, k.dstLen), keyPrefix(k.src, k.srcLen), k.metric
}

// match is what deletes the route k names.
func (k routeKey) match() fib6.Match {
	dst, src, metric := k.prefixes()
	return fib6.Match{Dst: dst, Src: src, Metric: metric}
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
	// encapLog: the refused encapsulations, logged a line a minute
	encapLog logLimit

	mu  sync.Mutex // one writer at a time; held while a batch applies
	gen uint32
	// routes is every route the feed installed, by the session that last
	// said it: one entry per route, however often it is said. left is
	// how many the sessions before had installed when this one began, old
	// how many of those it has not said yet (so it has said
	// len(routes)-old).
	routes    map[routeKey]uint32
	left, old int
	nexthops  map[uint32]uint32    // id -> the session that last said it
	txns      map[uint32]*fib6.Txn // open while a batch applies
	// pending are groups that named a member not seen yet, each added once
	// its members are; waiting finds them by the member they wait for.
	pending        map[uint32]pendingGroup
	waiting        map[uint32]map[uint32]struct{}
	pendingMembers int
}

// NewApplier returns an applier into r; linkOf maps the kernel's interface
// indexes to the router's links.
func NewApplier(r *router.Router, linkOf func(int32) int32) *Applier {
	return &Applier{r: r, linkOf: linkOf, gen: 1, routes: map[routeKey]uint32{}, nexthops: map[uint32]uint32{},
		txns: map[uint32]*fib6.Txn{}, pending: map[uint32]pendingGroup{}, waiting: map[uint32]map[uint32]struct{}{},
		encapLog: logLimit{what: "refused encapsulations", every: encapLogEvery}}
}

// Owns reports whether the feed installed the route of table with dst,
// src and metric (a saved configuration leaves it to the feed).
func (a *Applier) Owns(table uint32, dst, src netip.Prefix, metric uint32) bool {
	k := routeKey{table: table, metric: metric}
	k.dst, k.dstLen = prefixKey(dst)
	k.src, k.srcLen = prefixKey(src)
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.routes[k]
	return ok
}

// Adopt makes the route of table with dst, src and metric the feed's, as
// if the session before had installed it: the next session's sweep takes
// it away unless that session says it again. A restarted router so keeps
// what zebra had given it until zebra has said it all again.
func (a *Applier) Adopt(table uint32, dst, src netip.Prefix, metric uint32) {
	k := routeKey{table: table, metric: metric}
	k.dst, k.dstLen = prefixKey(dst)
	k.src, k.srcLen = prefixKey(src)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.routes[k] = a.gen
}

// AdoptNexthop is Adopt for nexthop object id.
func (a *Applier) AdoptNexthop(id uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nexthops[id] = a.gen
}

// OwnsNexthop reports whether the feed installed nexthop object id.
func (a *Applier) OwnsNexthop(id uint32) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.nexthops[id]
	return ok
}

// LastError is the last message the router refused, and why.
func (a *Applier) LastError() string {
	if p := a.lastErr.Load(); p != nil {
		return *p
	}
	return ""
}

// Begin starts a new session: SweepIn removes what the sessions before
// installed and this one has not said again. What a session that never
// settled said is kept for the next one to sweep.
//
// Groups the sessions before left waiting are dropped: a new session says
// its groups again (zebra's replay), and the old ones would fill the
// bound before it. Routes the router took away meanwhile (through a
// nexthop deleted, a link gone down) are forgotten, so that the replay is
// measured against what is still installed.
func (a *Applier) Begin() Session {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gen++
	clear(a.pending)
	clear(a.waiting)
	a.pendingMembers = 0
	for k := range a.routes {
		if t := a.r.Tables.Get(k.table); t == nil || !a.txn(t).Has(k.prefixes()) {
			delete(a.routes, k)
		}
	}
	a.commit()
	a.left, a.old = len(a.routes), len(a.routes)
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
	if isEncap(err) {
		a.encapLog.print("feed: refused " + s)
	}
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
	k := routeKey{table: r.Table, metric: r.Metric}
	k.dst, k.dstLen = prefixKey(r.Dst)
	k.src, k.srcLen = prefixKey(r.Src)
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
	if p.Encap {
		var err error
		if nh.Encap, err = encapState(p.EncapType, p.EncapRaw, a.linkOf); err != nil {
			return nh, err
		}
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
	if err := encapOf(q); err != nil {
		return a.refuseEncap(k, err)
	}
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
				if isEncap(err) {
					return a.refuseEncap(k, err)
				}
				if err != nil {
					return err
				}
				ms[i] = nexthop.Member{Nexthop: nh, Weight: p.Weight}
			}
			rt.Group = nexthop.NewGroup(ms)
		default:
			nh, err := a.path(q.Path)
			if isEncap(err) {
				return a.refuseEncap(k, err)
			}
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
	if a.old > 0 { // else every route in routes is this session's: no need to look
		if g, ok := a.routes[k]; ok && g != a.gen {
			a.old--
		}
	}
	a.routes[k] = a.gen
	a.Stats.Routes.Add(1)
	return nil
}

func (a *Applier) delRoute(q *RouteMsg) error {
	k := keyOf(q)
	t := a.r.Tables.Get(k.table)
	if t == nil {
		return fib6.ErrNoRoute
	}
	m := k.match()
	if len(q.Paths) == 0 && q.NhID == 0 && q.Gateway.IsValid() {
		m.Gateway = q.Gateway // one path of a multipath route, as the kernel says it
	}
	x := a.txn(t)
	_, err := x.Delete(m)
	// A path deleted may have been the route's last; a route not there
	// is not the feed's either.
	if g, ok := a.routes[k]; ok && !x.Has(k.prefixes()) {
		delete(a.routes, k)
		if g != a.gen {
			a.old--
		}
	}
	if err != nil {
		return err
	}
	a.Stats.RouteDeletes.Add(1)
	return nil
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
	n := 0
	for k, g := range a.routes {
		if g == a.gen {
			continue
		}
		delete(a.routes, k)
		if t := a.r.Tables.Get(k.table); t != nil {
			if _, err := a.txn(t).Delete(k.match()); err == nil {
				n++
			}
		}
	}
	a.commit()
	a.left, a.old = 0, 0
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
// distinct routes as the sessions before left installed.
func (a *Applier) Replayed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.routes)-a.old >= a.left
}

// Owned is how many routes and nexthop objects the feed has installed.
func (a *Applier) Owned() (routes, nexthops int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.routes), len(a.nexthops)
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
