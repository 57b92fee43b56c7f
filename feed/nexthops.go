package feed

import (
	"strconv"
	"syscall"

	"urouter/nexthop"
)

// The nexthop objects a feed says (RTM_NEWNEXTHOP, RTM_DELNEXTHOP), and
// the groups that wait for their members.

// Groups whose members have not come yet are held, bounded: zebra's
// replay walks its nexthop hash and may send every group before its
// members, so waiting is right, but a session naming members that never
// come must not hold memory without end. 65,536 groups is more than the
// nexthop groups of any table zebra has sent us (a full table over a few
// peers makes hundreds); 2,097,152 members (16 MiB of entries) is that
// many groups of 32 ways. Past either, a group is refused and counted.
const (
	MaxPending        = 1 << 16
	MaxPendingMembers = 1 << 21
)

// pendingGroup is a group waiting for its member msg.Group[at] (the
// members before it were there when it last looked).
type pendingGroup struct {
	msg NexthopMsg
	at  int
}

func (g *pendingGroup) on() uint32 { return g.msg.Group[g.at].ID }

func (a *Applier) addNexthop(n *NexthopMsg) error {
	a.unpend(n.ID) // this message is what the id is now
	if n.Encap && !isSeg6(n.EncapType) {
		return a.refuseEncapNexthop(n.ID, errEncap(n.EncapType))
	}
	err := a.tryAdd(n, 0)
	if isEncap(err) {
		return a.refuseEncapNexthop(n.ID, err)
	}
	return err
}

// tryAdd adds n if its members from n.Group[from] on exist (those before
// did when it last looked), else holds it for the first missing one: a
// group's members coming one by one cost a look each, not the group's
// length each. Then it adds the groups that waited for n.
func (a *Applier) tryAdd(n *NexthopMsg, from int) error {
	// from the resume index round to it: the ones before it once more, as
	// the group completes (one may have gone since)
	for k := range n.Group {
		if i := (from + k) % len(n.Group); a.r.Nexthops.Get(n.Group[i].ID) == nil {
			return a.pend(n, i)
		}
	}
	if err := a.putNexthop(n); err != nil {
		return err
	}
	for id := range a.waiting[n.ID] {
		g, _ := a.unpend(id)
		if err := a.tryAdd(&g.msg, g.at+1); err != nil {
			a.refused(&Msg{Kind: NexthopAdd, Nexthop: g.msg}, err)
		}
	}
	return nil
}

// errPendingFull refuses a group past the bound on waiting groups.
var errPendingFull = &nexthop.Error{Errno: syscall.ENOSPC,
	Msg: "too many nexthop groups wait for their members (" + strconv.Itoa(MaxPending) + " groups, " +
		strconv.Itoa(MaxPendingMembers) + " members)"}

// pend holds group n until its member n.Group[at] (and the rest) have
// come.
func (a *Applier) pend(n *NexthopMsg, at int) error {
	if len(a.pending) >= MaxPending || a.pendingMembers+len(n.Group) > MaxPendingMembers {
		a.Stats.PendingOverflow.Add(1)
		return errPendingFull
	}
	on := n.Group[at].ID
	a.pending[n.ID] = pendingGroup{msg: *n, at: at}
	a.pendingMembers += len(n.Group)
	if a.waiting[on] == nil {
		a.waiting[on] = map[uint32]struct{}{}
	}
	a.waiting[on][n.ID] = struct{}{}
	return nil
}

// unpend forgets group id if it was waiting.
func (a *Applier) unpend(id uint32) (pendingGroup, bool) {
	g, ok := a.pending[id]
	if !ok {
		return g, false
	}
	delete(a.pending, id)
	a.pendingMembers -= len(g.msg.Group)
	if w := a.waiting[g.on()]; w != nil {
		delete(w, id)
		if len(w) == 0 {
			delete(a.waiting, g.on())
		}
	}
	return g, true
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
		nh, err := a.path(Path{Gateway: n.Gateway, OIF: n.OIF, OnLink: n.OnLink, Encap: n.Encap, EncapType: n.EncapType, EncapRaw: n.EncapRaw})
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
		if err := a.r.DeleteNexthop(s.ID); err != nil {
			return err
		}
		if _, err := a.r.Nexthops.Add(s, false); err != nil {
			return err
		}
	}
	a.nexthops[n.ID] = a.gen
	a.Stats.Nexthops.Add(1)
	return nil
}

func (a *Applier) delNexthop(id uint32) error {
	_, waited := a.unpend(id)
	if a.r.Nexthops.Get(id) == nil {
		if waited {
			return nil // it only waited (else the installed one goes too)
		}
		return &nexthop.Error{Errno: syscall.ENOENT, Msg: "Nexthop id does not exist."}
	}
	delete(a.nexthops, id)
	a.Stats.NexthopDeletes.Add(1)
	return a.r.DeleteNexthop(id)
}

// Pending is how many nexthop groups wait for their members.
func (a *Applier) Pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending)
}
