package nexthop

import (
	"cmp"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
)

// Address families of nexthop objects, as Linux numbers them. A nexthop
// made without -6 and without an IPv6 gateway (`nexthop add id 4
// blackhole`, `... dev p0`) is IPv4 in Linux, and IPv6 routes refuse it.
const (
	FamilyUnspec = 0
	FamilyInet   = 2
	FamilyInet6  = 10
)

// GroupType is how a group selects: hash-threshold (mpath) or resilient.
type GroupType uint8

const (
	Mpath GroupType = iota
	ResilientType
)

// Default resilient group timers, in seconds, as Linux's.
const (
	DefaultIdleTimer       = 120
	DefaultUnbalancedTimer = 0
	MaxBuckets             = 65535
)

// Entry is a group's member as `group A[,W]/B[,W]` names it.
type Entry struct {
	ID     uint32
	Weight uint32 // 1..256
}

// Spec is what `nexthop add` or `replace` asks for: a single nexthop
// (Nexthop, Blackhole in its flags for a blackhole) or a group.
type Spec struct {
	ID     uint32 // 0: the registry chooses one
	Proto  uint8
	Family uint8
	Nexthop
	Group []Entry
	Type  GroupType
	// Resilient groups: the bucket count and timers (seconds); a zero
	// field without its Set flag is "not given".
	Buckets                     uint32
	IdleTimer, UnbalancedTimer  uint32
	BucketsSet, IdleSet, UnbSet bool
}

// IsGroup reports whether s is a group.
func (s *Spec) IsGroup() bool { return len(s.Group) > 0 }

// Version is an object's content at one time. Immutable: a replace
// publishes a new one.
type Version struct {
	Spec
	// Paths is a group's members, ready to select from; nil for a single
	// nexthop.
	Paths *Group
}

// Object is a nexthop object: routes hold it, and see its current
// version through one atomic load.
type Object struct {
	id    uint32
	cur   atomic.Pointer[Version]
	alive atomic.Bool
	// under the registry's lock
	parents map[*Object]struct{} // groups that contain it
	res     *resTable
}

// ID is the object's id.
func (o *Object) ID() uint32 { return o.id }

// Load returns the object's current version.
func (o *Object) Load() *Version { return o.cur.Load() }

// Alive reports whether the object is still in its registry. Once it is
// not, a route may no longer be added with it.
func (o *Object) Alive() bool { return o.alive.Load() }

// Error is a request refused (by the registry, or a routing table), with
// Linux's errno and, when more specific than the errno's, its message.
type Error struct {
	Errno syscall.Errno
	Msg   string
}

func (e *Error) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	return e.Errno.Error()
}

// Is makes errors.Is(err, syscall.ENOENT) work.
func (e *Error) Is(target error) bool {
	var errno syscall.Errno
	return errors.As(target, &errno) && errno == e.Errno
}

func invalid(msg string) error { return &Error{Errno: syscall.EINVAL, Msg: msg} }

var (
	// ErrExists: the id is taken ("File exists").
	ErrExists = &Error{Errno: syscall.EEXIST}
	// ErrNotFound: no object has the id ("No such file or directory").
	ErrNotFound = &Error{Errno: syscall.ENOENT}
)

// Registry holds a router's nexthop objects. Writers take its lock;
// readers of an object's version take none.
type Registry struct {
	mu     sync.Mutex
	objs   map[uint32]*Object
	lastID uint32
	// LinkUp says whether a link is up; Add checks it under the lock, so
	// that a link going down (which removes its nexthops after marking
	// itself down) cannot race a nexthop onto it.
	LinkUp func(link int32) bool
	// Now is the time in milliseconds (for resilient buckets).
	Now func() int64
	// resilient groups, for upkeep
	resilient map[*Object]struct{}
	// clock is the coarse time, in milliseconds, that selections stamp
	// on the resilient buckets they use; Upkeep advances it. Each
	// registry's own: two routers' groups keep two times.
	clock atomic.Int64
}

// Gateway is a gateway on a link.
type Gateway struct {
	Link int32
	Addr netip.Addr
}

// NewRegistry returns an empty registry.
func NewRegistry(now func() int64) *Registry {
	r := &Registry{objs: map[uint32]*Object{}, resilient: map[*Object]struct{}{}, Now: now}
	r.clock.Store(r.now())
	return r
}

// Get returns object id, or nil.
func (r *Registry) Get(id uint32) *Object {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.objs[id]
}

// Len is the number of objects.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.objs)
}

// List returns every object's current version, by id.
func (r *Registry) List() []*Version {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listLocked()
}

// Add adds an object (replace: or replaces the one with its id, which
// every route and group using it sees at once).
func (r *Registry) Add(s Spec, replace bool) (*Object, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if replace && s.ID == 0 {
		return nil, invalid("Replace requires nexthop id.")
	}
	old := r.objs[s.ID]
	if old != nil && !replace {
		return nil, ErrExists
	}
	if !s.IsGroup() && s.Flags&Blackhole == 0 && r.LinkUp != nil && !r.LinkUp(s.Link) {
		return nil, &Error{Errno: syscall.ENETDOWN, Msg: "Nexthop device is not up."}
	}
	if s.IsGroup() {
		if err := r.checkGroup(&s, old); err != nil {
			return nil, err
		}
	}
	if old != nil {
		if err := r.checkReplace(&s, old); err != nil {
			return nil, err
		}
	}
	if s.ID == 0 {
		s.ID = r.unusedID()
	}
	if old == nil {
		o := &Object{id: s.ID, parents: map[*Object]struct{}{}}
		o.alive.Store(true)
		r.objs[s.ID] = o
		r.link(o, &s)
		r.publish(o, s)
		return o, nil
	}
	r.unlink(old)
	r.link(old, &s)
	r.publish(old, s)
	// groups that contain it select from its new content
	for p := range old.parents {
		r.publish(p, p.Load().Spec)
	}
	return old, nil
}

// unusedID is Linux's nh_find_unused_id: after the last id it chose,
// wrapping around.
func (r *Registry) unusedID() uint32 {
	for {
		r.lastID++
		if r.lastID == 0 {
			r.lastID = 1
		}
		if r.objs[r.lastID] == nil {
			return r.lastID
		}
	}
}

func (r *Registry) checkGroup(s *Spec, old *Object) error {
	if s.Type == ResilientType {
		if old == nil && !s.BucketsSet {
			return invalid("Number of buckets not specified for nexthop group insertion.")
		}
		if s.BucketsSet && s.Buckets == 0 {
			return invalid("Number of buckets needs to be non-0.")
		}
	}
	seen := map[uint32]bool{}
	for _, e := range s.Group {
		m := r.objs[e.ID]
		if m == nil {
			return invalid("Invalid nexthop id.")
		}
		if seen[e.ID] {
			return invalid("Nexthop id can not be used twice in a group.")
		}
		seen[e.ID] = true
		v := m.Load()
		if v.IsGroup() {
			if v.Type == ResilientType {
				return invalid("Resilient group can not be a nexthop within a group.")
			}
			return invalid("Hash-threshold group can not be a nexthop within a group.")
		}
		if v.Flags&Blackhole != 0 && len(s.Group) > 1 {
			return invalid("Blackhole nexthop can not be used in a group with more than 1 path.")
		}
	}
	return nil
}

func (r *Registry) checkReplace(s *Spec, old *Object) error {
	ov := old.Load()
	switch {
	case ov.IsGroup() && !s.IsGroup():
		return invalid("Can not replace a nexthop group with a nexthop.")
	case !ov.IsGroup() && s.IsGroup():
		return invalid("Can not replace a nexthop with a nexthop group.")
	case ov.IsGroup() && ov.Type != s.Type:
		return invalid("Can not replace a nexthop group with one of a different type.")
	case ov.IsGroup() && s.Type == ResilientType:
		if s.BucketsSet && s.Buckets != ov.Buckets {
			return invalid("Can not change number of buckets of a resilient nexthop group.")
		}
		s.Buckets, s.BucketsSet = ov.Buckets, true
		if !s.IdleSet {
			s.IdleTimer = ov.IdleTimer
		}
		if !s.UnbSet {
			s.UnbalancedTimer = ov.UnbalancedTimer
		}
	case !ov.IsGroup() && s.Flags&Blackhole != 0:
		for p := range old.parents {
			if len(p.Load().Group) > 1 {
				return invalid("Blackhole nexthop can not be a member of a group with more than one path.")
			}
		}
	}
	return nil
}

// link records o as a parent of its members.
func (r *Registry) link(o *Object, s *Spec) {
	for _, e := range s.Group {
		r.objs[e.ID].parents[o] = struct{}{}
	}
	if s.Type == ResilientType && s.IsGroup() {
		if o.res == nil {
			o.res = newResTable(s.Buckets, &r.clock)
		}
		r.resilient[o] = struct{}{}
	}
}

func (r *Registry) unlink(o *Object) {
	for _, e := range o.Load().Group {
		if m := r.objs[e.ID]; m != nil {
			delete(m.parents, o)
		}
	}
}

// publish makes s o's current version, with its group's paths built from
// its members' current content.
func (r *Registry) publish(o *Object, s Spec) {
	if s.IsGroup() && s.Type == ResilientType {
		if !s.IdleSet && s.IdleTimer == 0 && o.Load() == nil {
			s.IdleTimer = DefaultIdleTimer
		}
		s.IdleSet, s.UnbSet = true, true
	}
	v := &Version{Spec: s}
	if s.IsGroup() {
		v.Group = slices.Clone(s.Group)
		ms := make([]Member, len(s.Group))
		for i, e := range s.Group {
			ms[i] = Member{Nexthop: r.objs[e.ID].Load().Nexthop, Weight: e.Weight, ID: e.ID}
		}
		v.Paths = NewGroup(ms)
		if o.res != nil {
			o.res.rebalance(v, r.now(), true)
		}
	}
	o.cur.Store(v)
}

// Uses reports whether a nexthop object goes through gateway g.
func (r *Registry) Uses(g Gateway) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.objs {
		if nh := o.Load().Nexthop; nh.Link == g.Link && nh.Gateway == g.Addr {
			return true
		}
	}
	return false
}

func (r *Registry) now() int64 {
	if r.Now == nil {
		return 0
	}
	return r.Now()
}

// Delete removes object id: from every group that contains it, and the
// groups left empty with it. It returns every object removed; the routes
// that use them are the caller's to delete.
func (r *Registry) Delete(id uint32) ([]*Object, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.objs[id]
	if o == nil {
		return nil, ErrNotFound
	}
	return r.remove(o, nil), nil
}

// Flush removes every object sel selects, and returns all it removed
// (groups left empty too) and how many sel selected.
func (r *Registry) Flush(sel func(*Version) bool) (removed []*Object, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.listLocked() {
		if o := r.objs[v.ID]; o != nil && sel(v) {
			removed = r.remove(o, removed)
			n++
		}
	}
	return removed, n
}

// RemoveOnLink removes the nexthops on link, as Linux does when a link
// goes down or away.
func (r *Registry) RemoveOnLink(link int32) []*Object {
	removed, _ := r.Flush(func(v *Version) bool { return !v.IsGroup() && v.Link == link && v.Flags&Blackhole == 0 })
	return removed
}

func (r *Registry) listLocked() []*Version {
	out := make([]*Version, 0, len(r.objs))
	for _, o := range r.objs {
		out = append(out, o.Load())
	}
	slices.SortFunc(out, func(a, b *Version) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (r *Registry) remove(o *Object, removed []*Object) []*Object {
	if r.objs[o.id] != o {
		return removed
	}
	delete(r.objs, o.id)
	delete(r.resilient, o)
	o.alive.Store(false)
	removed = append(removed, o)
	r.unlink(o)
	for p := range o.parents {
		s := p.Load().Spec
		s.Group = slices.DeleteFunc(slices.Clone(s.Group), func(e Entry) bool { return e.ID == o.id })
		if len(s.Group) == 0 {
			removed = r.remove(p, removed)
			continue
		}
		r.publish(p, s)
	}
	return removed
}

// Upkeep migrates the buckets of unbalanced resilient groups that may
// move (idle long enough, or unbalanced for too long), as Linux's
// periodic upkeep does, and advances the clock selections stamp.
func (r *Registry) Upkeep() {
	now := r.now()
	r.clock.Store(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	for o := range r.resilient {
		if o.res.balanced() {
			continue
		}
		v := *o.Load()
		if o.res.rebalance(&v, now, false) {
			o.cur.Store(&v)
		}
	}
}

// Buckets returns a resilient group's buckets: each one's member id and
// idle time in milliseconds, and the time the group has been unbalanced.
func (r *Registry) Buckets(o *Object) (ids []uint32, idle []int64, unbalanced int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := o.res
	if t == nil {
		return nil, nil, 0
	}
	now := r.now()
	ids = slices.Clone(t.nhid)
	idle = make([]int64, len(ids))
	for i := range ids {
		idle[i] = max(0, now-t.used[i].Load())
	}
	if !t.balanced() {
		unbalanced = max(0, now-t.unbalancedSince)
	}
	return ids, idle, unbalanced
}
