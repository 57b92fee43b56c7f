package nexthop

import (
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"
)

type fakeClock struct{ ms int64 }

func (c *fakeClock) now() int64 { return c.ms }

func newTestRegistry(t *testing.T, singles ...uint32) (*Registry, *fakeClock) {
	c := &fakeClock{ms: 1000}
	r := NewRegistry(c.now)
	for _, id := range singles {
		if _, err := r.Add(Spec{ID: id, Family: FamilyInet6, Nexthop: gw(byte(id))}, false); err != nil {
			t.Fatal(err)
		}
	}
	return r, c
}

func wantMsg(t *testing.T, err error, msg string) {
	t.Helper()
	if err == nil || err.Error() != msg {
		t.Errorf("got %v, want %q", err, msg)
	}
}

// TestRegistryGroups: Linux's rules for groups and replaces, with its
// messages; a replace of a member changes the group's paths at once; a
// delete takes the member out of its groups and removes a group it empties.
func TestRegistryGroups(t *testing.T) {
	r, _ := newTestRegistry(t, 1, 2, 3)
	if _, err := r.Add(Spec{ID: 4, Nexthop: Nexthop{Flags: Blackhole}}, false); err != nil {
		t.Fatal(err)
	}
	grp := func(id uint32, es ...Entry) Spec { return Spec{ID: id, Group: es} }
	e := func(id uint32) Entry { return Entry{ID: id, Weight: 1} }
	g10, err := r.Add(grp(10, e(1), e(2)), false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Add(grp(10, e(1)), false)
	if !errors.Is(err, syscall.EEXIST) {
		t.Errorf("duplicate id: %v", err)
	}
	_, err = r.Add(grp(20, e(1), e(99)), false)
	wantMsg(t, err, "Invalid nexthop id.")
	_, err = r.Add(grp(20, e(1), e(1)), false)
	wantMsg(t, err, "Nexthop id can not be used twice in a group.")
	_, err = r.Add(grp(20, e(10), e(1)), false)
	wantMsg(t, err, "Hash-threshold group can not be a nexthop within a group.")
	_, err = r.Add(grp(20, e(4), e(1)), false)
	wantMsg(t, err, "Blackhole nexthop can not be used in a group with more than 1 path.")
	_, err = r.Add(Spec{ID: 20, Group: []Entry{e(1)}, Type: ResilientType}, false)
	wantMsg(t, err, "Number of buckets not specified for nexthop group insertion.")
	_, err = r.Add(Spec{ID: 10, Nexthop: gw(9)}, true)
	wantMsg(t, err, "Can not replace a nexthop group with a nexthop.")
	_, err = r.Add(grp(1, e(2)), true)
	wantMsg(t, err, "Can not replace a nexthop with a nexthop group.")
	_, err = r.Add(Spec{ID: 1, Nexthop: Nexthop{Flags: Blackhole}}, true)
	wantMsg(t, err, "Blackhole nexthop can not be a member of a group with more than one path.")
	if r.Len() != 5 {
		t.Fatalf("failed adds left objects: %d", r.Len())
	}

	// auto ids follow the last chosen, not the largest
	if o, _ := r.Add(Spec{Nexthop: gw(7)}, false); o.ID() != 5 {
		t.Errorf("first chosen id %d, want 5", o.ID())
	}
	if o, _ := r.Add(Spec{Nexthop: gw(8)}, false); o.ID() != 6 {
		t.Errorf("second chosen id %d, want 6", o.ID())
	}

	before := g10.Load()
	if _, err := r.Add(Spec{ID: 2, Nexthop: gw(22)}, true); err != nil {
		t.Fatal(err)
	}
	if after := g10.Load(); after == before || after.Paths.Member(1).Nexthop != gw(22) {
		t.Error("replacing member 2 did not reach group 10")
	}

	removed, err := r.Delete(1)
	if err != nil || len(removed) != 1 || g10.Load().Paths.Len() != 1 {
		t.Fatalf("delete 1: %v %v, group 10 has %d", removed, err, g10.Load().Paths.Len())
	}
	removed, _ = r.Delete(2)
	if len(removed) != 2 || removed[1] != g10 || g10.Alive() || r.Get(10) != nil {
		t.Errorf("deleting the last member must remove group 10: %v", removed)
	}
	if _, err := r.Delete(2); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("delete twice: %v", err)
	}
}

// TestRegistryLinkDown: the nexthops of a link that went down go, and a
// nexthop cannot be added on a link that is down.
func TestRegistryLinkDown(t *testing.T) {
	up := map[int32]bool{1: true, 2: true}
	r, _ := newTestRegistry(t, 1, 2)
	r.LinkUp = func(l int32) bool { return up[l] }
	if _, err := r.Add(Spec{ID: 10, Group: []Entry{{1, 1}, {2, 1}}}, false); err != nil {
		t.Fatal(err)
	}
	up[2] = false
	if removed := r.RemoveOnLink(2); len(removed) != 1 || removed[0].ID() != 2 {
		t.Errorf("removed %v", removed)
	}
	if _, err := r.Add(Spec{ID: 3, Nexthop: gw(2)}, false); err == nil {
		t.Error("a nexthop was added on a link that is down")
	}
	if r.Get(10).Load().Paths.Len() != 1 {
		t.Error("group 10 kept the member on the down link")
	}
}

// TestResilient: buckets are filled as Linux fills them; removing a member
// moves only its flows; a member coming back takes buckets only from idle
// ones, or when the group has been unbalanced for unbalanced_timer.
func TestResilient(t *testing.T) {
	r, c := newTestRegistry(t, 1, 2, 3)
	o, err := r.Add(Spec{ID: 12, Group: []Entry{{1, 1}, {2, 1}}, Type: ResilientType, Buckets: 8, BucketsSet: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	ids, _, _ := r.Buckets(o)
	if want := []uint32{2, 2, 2, 2, 1, 1, 1, 1}; !equal(ids, want) {
		t.Errorf("buckets %v, Linux fills %v", ids, want)
	}
	if v := o.Load(); v.IdleTimer != DefaultIdleTimer || v.UnbalancedTimer != 0 {
		t.Errorf("timers %d %d", v.IdleTimer, v.UnbalancedTimer)
	}

	g, _ := r.Add(Spec{ID: 13, Group: []Entry{{1, 1}, {2, 2}, {3, 3}}, Type: ResilientType, Buckets: 512, BucketsSet: true,
		IdleTimer: 10, IdleSet: true, UnbalancedTimer: 60, UnbSet: true}, false)
	h := Hasher{Seed: 3}
	rnd := rand.New(rand.NewPCG(7, 8))
	flows := make([]Flow, 20000)
	was := make([]uint32, len(flows))
	count := map[uint32]int{}
	for i := range flows {
		flows[i] = randomFlow(rnd)
		v := g.Load()
		was[i] = v.Paths.Member(v.Paths.Select(h.Hash(&flows[i]))).ID
		count[was[i]]++
	}
	if count[1] < 2800 || count[3] < 9000 {
		t.Errorf("weights 1/2/3 split flows %v", count)
	}
	c.ms += 1000
	if _, err := r.Delete(3); err != nil {
		t.Fatal(err)
	}
	r.Upkeep()
	c.ms++
	r.Upkeep() // the clock the flows below stamp their buckets with
	for i := range flows {
		v := g.Load()
		now := v.Paths.Member(v.Paths.Select(h.Hash(&flows[i]))).ID
		if was[i] != 3 && now != was[i] {
			t.Fatalf("flow %d moved from member %d to %d when member 3 went", i, was[i], now)
		}
		if now == 3 {
			t.Fatal("a flow still takes the removed member")
		}
		was[i] = now
	}

	// 3 is back: nothing is idle (every bucket was used since it last
	// moved), so no bucket moves until idle_timer (10 s) passes
	if _, err := r.Add(Spec{ID: 3, Nexthop: gw(3)}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Add(Spec{ID: 13, Group: []Entry{{1, 1}, {2, 1}, {3, 1}}, Type: ResilientType}, true); err != nil {
		t.Fatal(err)
	}
	c.ms += 5000
	r.Upkeep()
	stamp := func() {
		for i := range flows {
			v := g.Load()
			v.Paths.Select(h.Hash(&flows[i]))
		}
	}
	stamp()
	if ids, _, unb := r.Buckets(g); countOf(ids, 3) != 0 || unb != 5000 {
		t.Errorf("member 3 took %d buckets before any was idle (unbalanced %d ms)", countOf(ids, 3), unb)
	}
	// flows keep using their buckets; after unbalanced_timer (60 s) the
	// group is forced to balance
	for range 12 {
		c.ms += 5000
		r.Upkeep()
		stamp()
	}
	if ids, _, _ := r.Buckets(g); countOf(ids, 3) < 160 {
		t.Errorf("after unbalanced_timer member 3 holds %d of 512 buckets", countOf(ids, 3))
	}
}

func equal(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func countOf(ids []uint32, id uint32) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

// TestResilientClockIsTheRegistrys: a selection stamps its bucket with its
// own registry's time; another registry's (another router's) upkeep does
// not move it.
func TestResilientClockIsTheRegistrys(t *testing.T) {
	spec := Spec{ID: 12, Group: []Entry{{1, 1}, {2, 1}}, Type: ResilientType, Buckets: 8, BucketsSet: true}
	a, ca := newTestRegistry(t, 1, 2)
	b, cb := newTestRegistry(t, 1, 2)
	ga, err := a.Add(spec, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Add(spec, false); err != nil {
		t.Fatal(err)
	}
	ca.ms, cb.ms = 5000, 90000
	a.Upkeep()
	b.Upkeep()
	v := ga.Load()
	v.Paths.Select(0)
	if got := v.Paths.res.used[0].Load(); got != 5000 {
		t.Errorf("a bucket of registry a was stamped %d, want a's time 5000", got)
	}
}
