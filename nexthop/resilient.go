package nexthop

import (
	"slices"
	"sync/atomic"
)

// Resilient groups, as Linux's (net/ipv4/nexthop.c, nh_res_*): a flow's
// hash picks one of a fixed number of buckets, and each bucket holds a
// member. When the members or their weights change, only buckets of
// members that hold more than their share move, and only once idle (no
// flow used them for idle_timer) or once the group has been unbalanced for
// unbalanced_timer; buckets of a removed member move at once. So flows of
// the other members stay where they are.

// resBuckets is what a selection reads: the member of each bucket in this
// version of the group, and the time each bucket was last used, shared by
// every version.
type resBuckets struct {
	member []uint16
	used   []atomic.Int64
	clock  *atomic.Int64 // the registry's (see Registry.clock)
}

// resTable is a resilient group's bucket state, kept by the registry
// across versions of the group (under its lock).
type resTable struct {
	clock           *atomic.Int64 // the registry's, which selections stamp
	nhid            []uint32      // member id of each bucket, 0 unassigned
	used            []atomic.Int64
	migrated        []int64 // when each bucket last moved
	idleMs, unbMs   int64
	unbalancedSince int64
	wants, count    map[uint32]int
	uw              []uint32 // underweight members, in Linux's list order
	order           []uint32 // the members, in the group's order
}

func newResTable(n uint32, clock *atomic.Int64) *resTable {
	return &resTable{clock: clock, nhid: make([]uint32, n), used: make([]atomic.Int64, n), migrated: make([]int64, n)}
}

func (t *resTable) balanced() bool { return len(t.uw) == 0 }

// rebalance brings t to v's members and migrates the buckets that should
// move at now, then gives v's paths their buckets. regroup: v's members or
// weights may have changed (a publish); else only time has passed. It
// reports whether a bucket moved.
func (t *resTable) rebalance(v *Version, now int64, regroup bool) bool {
	if regroup {
		t.idleMs, t.unbMs = int64(v.IdleTimer)*1000, int64(v.UnbalancedTimer)*1000
		t.order = t.order[:0]
		t.wants = make(map[uint32]int, len(v.Group))
		t.count = make(map[uint32]int, len(v.Group))
		var total, w int
		for _, e := range v.Group {
			total += int(e.Weight)
		}
		n := len(t.nhid)
		prev := 0
		for _, e := range v.Group {
			w += int(e.Weight)
			upper := (n*w + total/2) / total // DIV_ROUND_CLOSEST
			t.wants[e.ID] = upper - prev
			prev = upper
			t.order = append(t.order, e.ID)
		}
		for _, id := range t.nhid {
			if _, ok := t.wants[id]; ok {
				t.count[id]++
			}
		}
		t.uw = t.uw[:0]
		for _, id := range t.order {
			if t.count[id] < t.wants[id] {
				if len(t.uw) == 0 {
					t.unbalancedSince = now
				}
				t.uw = slices.Insert(t.uw, 0, id) // list_add: the newest first
			}
		}
	}
	moved := false
	for i := range t.nhid {
		if len(t.uw) == 0 {
			break
		}
		if !t.shouldMigrate(i, now) {
			continue
		}
		to := t.uw[0]
		if _, ok := t.wants[t.nhid[i]]; ok {
			t.count[t.nhid[i]]--
		}
		t.nhid[i] = to
		t.used[i].Store(now)
		t.migrated[i] = now
		t.count[to]++
		if t.count[to] >= t.wants[to] {
			t.uw = t.uw[1:]
		}
		moved = true
	}
	if v.Paths != nil {
		v.Paths = v.Paths.withBuckets(t)
	}
	return moved || regroup
}

func (t *resTable) shouldMigrate(i int, now int64) bool {
	id := t.nhid[i]
	want, member := t.wants[id]
	if id == 0 || !member {
		return true // never assigned, or its member is gone
	}
	if t.count[id] <= want {
		return false
	}
	// a bucket no flow used since it last moved is idle at once
	if u := t.used[i].Load(); u == t.migrated[i] || now >= u+t.idleMs {
		return true
	}
	return t.unbMs != 0 && now > t.unbalancedSince+t.unbMs
}

// withBuckets returns a copy of g that selects by t's buckets.
func (g *Group) withBuckets(t *resTable) *Group {
	c := *g
	index := make(map[uint32]uint16, len(g.members))
	for i, m := range g.members {
		index[m.ID] = uint16(i)
	}
	rb := &resBuckets{member: make([]uint16, len(t.nhid)), used: t.used, clock: t.clock}
	for b, id := range t.nhid {
		rb.member[b] = index[id]
	}
	c.res = rb
	return &c
}
