package dataplane

import (
	"urouter/decide"
)

// VRFs (Linux's l3mdev): a VRF link is an L3 master with a table of its
// own, fixed when it is made (vrfTable); a link enslaved to it (a member)
// has its packets routed in that table. A member keeps its VRF in one
// atomic word, read by the packet path once per batch and by the
// decision for each lookup: the VRF's index and table.

// L3 is the VRF l is in: the VRF link's index and its table; 0, 0 for
// none. A VRF link is its own.
func (l *Link) L3() (master int32, table uint32) {
	if l.vrfTable != 0 {
		return l.Index, l.vrfTable
	}
	v := l.l3.Load()
	return int32(v >> 32), uint32(v)
}

// IsVRF reports whether l is a VRF link.
func (l *Link) IsVRF() bool { return l.vrfTable != 0 }

// Master is the VRF link l is enslaved to, 0 for none (and for a VRF).
func (l *Link) Master() int32 { return int32(l.l3.Load() >> 32) }

// flowIif is the link a packet that came in by l is routed as coming in
// by: its VRF, as Linux's vrf_ip6_rcv makes the VRF device the packet's
// (the rules see `iif VRF`); l itself outside any.
func (l *Link) flowIif() int32 {
	if m, _ := l.L3(); m != 0 {
		return m
	}
	return l.Index
}

// l3Table is the table of l's VRF, 0 outside any.
func (l *Link) l3Table() uint32 {
	_, t := l.L3()
	return t
}

// L3 is the VRF link i is in (decide.Addresses): 0, 0 for none or no
// such link.
func (ls *Links) L3(i int32) (master int32, table uint32) {
	if l := ls.ByIndex(i); l != nil {
		return l.L3()
	}
	return 0, 0
}

// SetMaster enslaves l to VRF link vrf, or releases it (vrf nil). The
// caller (the router, under its lock) moves its routes; the packets read
// after this are routed in the new domain.
func (ls *Links) SetMaster(l, vrf *Link) {
	if vrf == nil {
		l.l3.Store(0)
		return
	}
	l.l3.Store(uint64(uint32(vrf.Index))<<32 | uint64(vrf.vrfTable))
}

// Members are the links enslaved to VRF link vrf, by index.
func (ls *Links) Members(vrf *Link) []*Link {
	var out []*Link
	for _, l := range ls.All() {
		if l != vrf && l.Master() == vrf.Index {
			out = append(out, l)
		}
	}
	return out
}

// VRFByTable is the VRF link of table t, nil if none.
func (ls *Links) VRFByTable(t uint32) *Link { return ls.snap.Load().vrfByTable(t) }

// vrfByTable is the snapshot's VRF link of table t, nil if none; it
// allocates nothing (End.DT6 asks for every packet).
func (s *linkSnap) vrfByTable(t uint32) *Link {
	for _, l := range s.byIndex {
		if t != 0 && l != nil && l.vrfTable == t {
			return l
		}
	}
	return nil
}

// viaVRF routes again a packet whose route leaves by a VRF link (a
// route leaking into another VRF: `route add P dev blue vrf red`), in
// that VRF's table from the loopback, and acts on that decision as on
// the first: what Linux's vrf_process_v6_outbound does (a local route
// delivers it, an unreachable or prohibit route answers it); no route at
// all, or one that leaves by a VRF again, drops it (vrf_tx_error).
func (w *worker) viaVRF(k *pkt, key *decide.Key, r *decide.Result, links *linkSnap, in int32, forwarding bool) {
	vrf := k.egress
	k.egress = nil
	if !vrf.carries() {
		k.drop(DropLinkDown)
		return
	}
	if *r = w.leak(key, vrf); r.Verdict == decide.NoRoute {
		k.drop(DropNoRoute)
		return
	}
	act(k, r, links, in, forwarding)
	if k.act == actLookup {
		k.egress = nil
		k.drop(DropNoRoute)
	}
}

// leak is the decision for key in VRF link vrf's table, as a packet
// routed out of vrf is decided again.
func (w *worker) leak(key *decide.Key, vrf *Link) decide.Result {
	again := *key
	again.Iif, again.Oif, again.L3Table = 0, 0, vrf.l3Table()
	return w.dp.Decider.Decide(&again)
}

// ownLeak is, for the router's own packets (originate, a mirror's), the
// decision again in the table of the VRF link r leaves by, if it leaves
// by one; a second VRF is no way out (NoRoute).
func (w *worker) ownLeak(key *decide.Key, r *decide.Result, links *linkSnap) {
	if r.Verdict != decide.Forward {
		return
	}
	if out := links.at(r.Nexthop().Link); out != nil && out.IsVRF() {
		if *r = w.leak(key, out); r.Verdict == decide.Forward {
			if o := links.at(r.Nexthop().Link); o == nil || o.IsVRF() {
				*r = decide.Result{Verdict: decide.NoRoute}
			}
		}
	}
}
