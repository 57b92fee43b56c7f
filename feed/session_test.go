package feed

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"urouter/fib6"
	"urouter/internal/racebuild"
)

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestFPMRepeats: a session that says one route over and over (a zebra
// re-sending a flapping route for days) holds memory for one route, and
// says it installed one.
func TestFPMRepeats(t *testing.T) {
	_, ap := testRouter(t)
	f := listen(t, ap, Timers{})
	x := newRoute("2001:db8:2::/64")
	x.gw, x.oif = gw1, kidx
	one := frame(x.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE))
	const perWrite = 10000
	chunk := slices.Repeat(one, perWrite)
	n := racebuild.Sized(5_000_000, 200_000) // one reader and the applier: see racebuild
	c, err := net.Dial("tcp", f.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	write(t, c, chunk)
	waitFor(t, "the first routes", func() bool { return ap.Stats.Messages.Load() == perWrite })
	before := heapInUse()
	start := time.Now()
	for i := perWrite; i < n; i += perWrite {
		write(t, c, chunk)
	}
	waitCount(t, "every message", ap.Stats.Messages.Load, uint64(n))
	grew := int64(heapInUse()) - int64(before)
	routes, _ := ap.Owned()
	t.Logf("%d messages of one route in %v: heap in use grew %.1f MB, installed routes %d",
		n, time.Since(start).Round(time.Millisecond), float64(grew)/(1<<20), routes)
	if grew > 32<<20 {
		t.Errorf("heap in use grew %.1f MB for one route said %d times", float64(grew)/(1<<20), n)
	}
	if routes != 1 {
		t.Errorf("installed routes %d, want 1", routes)
	}
}

// TestSweepCountsRoutes: a session that repeats one route has not
// replayed the last session's table: the last session's routes stay
// until the new one has said as many distinct routes, or the hold ends.
func TestSweepCountsRoutes(t *testing.T) {
	r, ap := testRouter(t)
	settle, hold := 100*time.Millisecond, 1500*time.Millisecond
	clock := newStepClock()
	f := listen(t, ap, Timers{Settle: settle, Hold: hold, clock: clock})
	rt := func(i int) []byte {
		x := newRoute(fmt.Sprintf("2001:db8:%x::/48", i))
		x.gw, x.oif = gw1, kidx
		return frame(x.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE))
	}
	main := func() int { return len(routes(r, fib6.TableMain)) }
	a := dial(t, f)
	var all []byte
	for i := 0; i < 200; i++ {
		all = append(all, rt(i)...)
	}
	write(t, a, all)
	waitFor(t, "session A's 200 routes", func() bool { return main() == 200 })
	_ = a.Close()
	waitFor(t, "session A to end", func() bool { return !f.Status().Connected })

	msgs := ap.Stats.Messages.Load()
	b := dial(t, f)
	defer func() { _ = b.Close() }()
	write(t, b, slices.Repeat(rt(0), 200))
	waitFor(t, "session B's 200 messages", func() bool { return ap.Stats.Messages.Load() == msgs+200 })
	began := f.Status().Since // its accept, where the hold starts
	stepUntil(t, clock, settle/2, "the hold to end and the sweep", func() bool {
		n := main()
		if d := clock.now().Sub(began); d < hold && n != 200 {
			t.Fatalf("%v after session B began (200 repeats of one route): %d routes, want A's 200 until the hold", d, n)
		}
		return n == 1
	})
	if d := clock.now().Sub(began); d < hold {
		t.Errorf("swept %v after session B began, before the hold (%v)", d, hold)
	}
}

// TestNewestSessionStays: of two connections opened one after the other,
// the second is the session, always: it stays open and what it says is
// installed; the first is closed, logged and counted.
func TestNewestSessionStays(t *testing.T) {
	r, ap := testRouter(t)
	f := listen(t, ap, Timers{})
	has := func(p string) bool {
		for _, s := range routes(r, fib6.TableMain) {
			if strings.HasPrefix(s, p+" ") {
				return true
			}
		}
		return false
	}
	for i := 0; i < 500; i++ { // connections that come and go at once
		c := dial(t, f)
		_ = c.Close()
	}
	for i := 0; i < 100; i++ {
		a, b := dial(t, f), dial(t, f)
		p := fmt.Sprintf("2001:db8:%x::/48", 0x100+i)
		x := newRoute(p)
		x.gw, x.oif = gw1, kidx
		write(t, b, frame(x.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE)))
		for deadline := time.Now().Add(2 * time.Second); !has(p); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("trial %d: the newest connection's route was not installed (status %+v)", i, f.Status())
			}
		}
		if st := f.Status(); !st.Connected || st.Peer != b.LocalAddr().String() {
			t.Fatalf("trial %d: status %+v, want connected to the newest, %s", i, st, b.LocalAddr())
		}
		_ = a.Close()
		_ = b.Close()
	}
	if n := f.Replaced.Load(); n < 100 {
		t.Errorf("%d connections counted as replaced, want at least 100", n)
	}
}

// TestPendingBounded: groups naming members that never come wait within
// the bound (MaxPending); past it they are refused and counted. Groups
// within the bound are added when their members come, and a new session's
// sweep forgets the groups an earlier session left waiting.
func TestPendingBounded(t *testing.T) {
	r, ap := testRouter(t)
	group := func(id uint32, members ...uint32) Msg {
		m := Msg{Kind: NexthopAdd, Nexthop: NexthopMsg{ID: id}}
		for _, e := range members {
			m.Nexthop.Group = append(m.Nexthop.Group, GroupEntry{ID: e, Weight: 1})
		}
		return m
	}
	ap.Apply([]Msg{group(100, 10, 11), group(101, 11)})
	before := heapInUse()
	flood := uint32(racebuild.Sized(8, 2) * MaxPending)
	batch := make([]Msg, 0, 10000)
	for id := uint32(1_000_000); id < 1_000_000+flood; id++ {
		batch = append(batch, group(id, id+flood, id+flood+1))
		if len(batch) == cap(batch) {
			ap.Apply(batch)
			batch = batch[:0]
		}
	}
	ap.Apply(batch)
	grew := int64(heapInUse()) - int64(before)
	t.Logf("%d groups waiting for members that never come: %d pending, %d refused, heap in use grew %.1f MB",
		flood, ap.Pending(), ap.Stats.PendingOverflow.Load(), float64(grew)/(1<<20))
	if ap.Pending() != MaxPending || ap.Stats.PendingOverflow.Load() != uint64(flood-MaxPending+2) {
		t.Fatalf("pending %d, overflow %d; want %d and %d", ap.Pending(), ap.Stats.PendingOverflow.Load(), MaxPending, flood-MaxPending+2)
	}
	if !strings.Contains(ap.LastError(), "too many nexthop groups wait for their members") {
		t.Errorf("last error %q", ap.LastError())
	}
	if grew > 48<<20 {
		t.Errorf("heap in use grew %.1f MB", float64(grew)/(1<<20))
	}
	if len(r.Nexthops.List()) != 0 {
		t.Errorf("nexthop objects before any member came: %d", len(r.Nexthops.List()))
	}
	// the members of the first two groups come: both are added
	ap.Apply([]Msg{{Kind: NexthopAdd, Nexthop: NexthopMsg{ID: 10, Gateway: gw1, OIF: kidx, Family: unix.AF_INET6}}})
	if r.Nexthops.Get(100) != nil || r.Nexthops.Get(101) != nil || ap.Pending() != MaxPending {
		t.Fatalf("after member 10: pending %d, group 100 %v", ap.Pending(), r.Nexthops.Get(100) != nil)
	}
	ap.Apply([]Msg{{Kind: NexthopAdd, Nexthop: NexthopMsg{ID: 11, Gateway: gw2, OIF: kidx, Family: unix.AF_INET6}}})
	if r.Nexthops.Get(100) == nil || r.Nexthops.Get(101) == nil || ap.Pending() != MaxPending-2 {
		t.Fatalf("after member 11: pending %d, groups %v %v (%s)", ap.Pending(), r.Nexthops.Get(100) != nil, r.Nexthops.Get(101) != nil, ap.LastError())
	}
	// a new session forgets what the last one left waiting: its own
	// groups wait, and are added, within the bound
	s := ap.Begin()
	if ap.Pending() != 0 {
		t.Fatalf("pending when the next session begins: %d", ap.Pending())
	}
	ap.ApplyIn(s, []Msg{group(102, 12), group(103, 10, 1_000_000+flood)})
	ap.ApplyIn(s, []Msg{{Kind: NexthopAdd, Nexthop: NexthopMsg{ID: 12, Gateway: gw1, OIF: kidx, Family: unix.AF_INET6}}})
	ap.ApplyIn(s, []Msg{{Kind: NexthopAdd, Nexthop: NexthopMsg{ID: 1_000_000 + flood, Gateway: gw2, OIF: kidx, Family: unix.AF_INET6}}})
	if r.Nexthops.Get(102) == nil || r.Nexthops.Get(103) == nil || ap.Pending() != 0 {
		t.Errorf("the next session's groups: 102 %v, 103 %v (a member the last session's group waited for), pending %d (%s)",
			r.Nexthops.Get(102) != nil, r.Nexthops.Get(103) != nil, ap.Pending(), ap.LastError())
	}
	if r.Nexthops.Get(1_000_000) != nil {
		t.Errorf("a group the last session left waiting was added by the next one's member")
	}
	// members that come one by one, in order, complete their groups
	var ms []Msg
	for g := uint32(0); g < 16; g++ {
		var members []uint32
		for m := uint32(0); m < 2000; m++ {
			members = append(members, 10_000+g*2000+m)
		}
		ms = append(ms, group(200+g, members...))
	}
	for id := uint32(10_000); id < 10_000+16*2000; id++ {
		ms = append(ms, Msg{Kind: NexthopAdd, Nexthop: NexthopMsg{ID: id, Gateway: gw1, OIF: kidx, Family: unix.AF_INET6}})
	}
	ap.ApplyIn(s, ms)
	for g := uint32(200); g < 216; g++ {
		if o := r.Nexthops.Get(g); o == nil || len(o.Load().Paths.Members()) != 2000 {
			t.Fatalf("group %d of 2,000 members, each come after it: %v (%s)", g, o != nil, ap.LastError())
		}
	}
	if ap.Pending() != 0 || ap.pendingMembers != 0 || len(ap.waiting) != 0 {
		t.Errorf("after every group completed: pending %d, members %d, waiting %d", ap.Pending(), ap.pendingMembers, len(ap.waiting))
	}
}

// TestInstalledCount: the routes the feed says it installed are the ones
// in the tables: a route deleted by its gateway (as the kernel says it)
// is gone from the count, routes the router took away with their nexthop
// are forgotten by the next session, which is measured against what is
// left; a group deleted while a new version of it waits goes whole.
func TestInstalledCount(t *testing.T) {
	r, ap := testRouter(t)
	add := func(p string, nhid uint32) Msg {
		m := Msg{Kind: RouteAdd, Route: RouteMsg{Dst: netip.MustParsePrefix(p), Table: fib6.TableMain, Metric: 20, Type: unix.RTN_UNICAST, Proto: unix.RTPROT_BGP}}
		if nhid != 0 {
			m.Route.NhID = nhid
		} else {
			m.Route.Path = Path{Gateway: gw1, OIF: kidx}
		}
		return m
	}
	nh := func(id uint32) Msg {
		return Msg{Kind: NexthopAdd, Nexthop: NexthopMsg{ID: id, Gateway: gw1, OIF: kidx, Family: unix.AF_INET6}}
	}
	msgs := []Msg{nh(5)}
	for i := 0; i < 10; i++ {
		msgs = append(msgs, add(fmt.Sprintf("2001:db8:%x::/48", 0x100+i), 0), add(fmt.Sprintf("2001:db8:%x::/48", 0x200+i), 5))
	}
	ap.Apply(msgs)
	del := Msg{Kind: RouteDel, Route: RouteMsg{Dst: netip.MustParsePrefix("2001:db8:100::/48"), Table: fib6.TableMain, Metric: 20}}
	del.Route.Gateway = gw1
	ap.Apply([]Msg{del})
	if n, _ := ap.Owned(); n != 19 || len(routes(r, fib6.TableMain)) != 19 {
		t.Fatalf("after a delete by gateway: installed %d, %d in main", n, len(routes(r, fib6.TableMain)))
	}
	if err := r.DeleteNexthop(5); err != nil {
		t.Fatal(err)
	} // a user's `nexthop del id 5`: its 10 routes go with it
	s := ap.Begin()
	if n, _ := ap.Owned(); n != 9 {
		t.Errorf("installed when the next session begins: %d, want the 9 left", n)
	}
	var replay []Msg
	for i := 1; i < 10; i++ {
		replay = append(replay, add(fmt.Sprintf("2001:db8:%x::/48", 0x100+i), 0))
	}
	ap.ApplyIn(s, replay)
	if !ap.Replayed() {
		t.Errorf("a replay of the 9 routes left is not complete")
	}
	// group 7 installed, a new version waits for a member: deleting 7
	// takes both
	ap.ApplyIn(s, []Msg{nh(6), {Kind: NexthopAdd, Nexthop: NexthopMsg{ID: 7, Group: []GroupEntry{{6, 1}}}}, add("2001:db8:300::/48", 7),
		{Kind: NexthopAdd, Nexthop: NexthopMsg{ID: 7, Group: []GroupEntry{{6, 1}, {8, 1}}}}})
	if r.Nexthops.Get(7) == nil || ap.Pending() != 1 {
		t.Fatalf("group 7: %v, pending %d", r.Nexthops.Get(7) != nil, ap.Pending())
	}
	ap.ApplyIn(s, []Msg{{Kind: NexthopDel, Nexthop: NexthopMsg{ID: 7}}})
	if r.Nexthops.Get(7) != nil || ap.Pending() != 0 || len(routes(r, fib6.TableMain)) != 9 {
		t.Errorf("after deleting group 7: installed %v, pending %d, %d routes", r.Nexthops.Get(7) != nil, ap.Pending(), len(routes(r, fib6.TableMain)))
	}
}
