package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"sync/atomic"

	"urouter/dataplane/port"
	"urouter/ndisc"
)

// VLAN links (802.1Q and 802.1ad sub-interfaces): a VLAN link is an
// Ethernet link of its own (its MAC, neighbour cache, Neighbour
// Discovery, mirror) whose frames go out through its parent's port with
// its tags (vlanFrames), and come in through its parent's reader: the
// reader that takes a tagged frame hands it to the link its tag names
// (demux), without a lock, and the worker routes each link's packets of
// the batch as a batch of its own (forwardRuns). A tag no link claims is
// dropped and counted, as Linux drops it (another host's frame).

// VLANInfo is what a VLAN link is: its parent, its tag and its flags.
type VLANInfo struct {
	Parent *Link
	TPID   uint16 // port.EtherTypeVLAN (802.1Q) or port.EtherTypeQinQ (802.1ad)
	VID    uint16
	Flags  uint32 // Linux's VLAN_FLAG_* the link shows (VLANReorderHdr)
}

// VLANReorderHdr is Linux's VLAN_FLAG_REORDER_HDR, which a VLAN link has
// unless made with `reorder_hdr off`: it changes only what the kernel's
// own sockets see, so it is shown and kept, nothing more.
const VLANReorderHdr = 1

// Errors of a VLAN link's making, worded as Linux's 8021q words them.
var (
	ErrVLANParent = errors.New("8021q: VLANs not supported on device")
	ErrVLANExists = errors.New("8021q: VLAN device already exists")
)

// vlanFrames is a VLAN link's port.Frames: it writes through the port of
// the Ethernet link at the bottom of its stack (root) with its tags, and
// reads nothing (no worker reads it: Queues is 0).
type vlanFrames struct {
	root port.Frames
	tags []byte // the stack's tags, outer first: TPID and TCI, 4 bytes each
}

func (*vlanFrames) Queues() int { return 0 }
func (*vlanFrames) ReadFrames(int, [][]byte, []port.EthHdr, []port.VLANTag, []int) (int, error) {
	return 0, errors.ErrUnsupported
}
func (v *vlanFrames) WriteFrames(hdrs []port.EthHdr, pkts [][]byte) (int, error) {
	return v.root.WriteTagged(v.tags, hdrs, pkts)
}
func (*vlanFrames) WriteTagged([]byte, []port.EthHdr, [][]byte) (int, error) {
	return 0, errors.ErrUnsupported // a VLAN link's frames carry its own tags
}
func (v *vlanFrames) Offloads() port.Offloads { return v.root.Offloads() }
func (*vlanFrames) SetMTU(int) error          { return nil }
func (*vlanFrames) SetUp(bool) error          { return nil }
func (*vlanFrames) Close() error              { return nil }

// vlanSpec are the words after `type vlan` that make VLAN link e again.
func (e *ether) vlanSpec() []string {
	var w []string
	if e.vlan.TPID == port.EtherTypeQinQ {
		w = append(w, "protocol", "802.1ad")
	}
	w = append(w, "id", strconv.Itoa(int(e.vlan.VID())))
	if e.vlanFlags&VLANReorderHdr == 0 {
		w = append(w, "reorder_hdr", "off")
	}
	return w
}

// vlanTable is an Ethernet link's VLAN links by TPID and VID, each slot
// read by its reader without a lock and written under the dataplane's mu.
type vlanTable struct {
	q, ad [4096]atomic.Pointer[ether]
}

func (t *vlanTable) slot(tpid, vid uint16) *atomic.Pointer[ether] {
	if tpid == port.EtherTypeQinQ {
		return &t.ad[vid&0xfff]
	}
	return &t.q[vid&0xfff]
}

// vlanOf is the VLAN link tag names, nil if none.
func (e *ether) vlanOf(tag *port.VLANTag) *ether {
	t := e.vlans.Load()
	if t == nil {
		return nil
	}
	return t.slot(tag.TPID, tag.VID()).Load()
}

// OpenVLAN makes the device of VLAN link v (its parent, tag and flags),
// with the parent's MAC unless eo gives one, and starts handing it its
// frames: the parent's reader reads their tags from now on (an
// interface's socket is told to) and finds it by its tag, dropping them
// until the caller registers the link (AddLink).
func (dp *Dataplane) OpenVLAN(v VLANInfo, eo EtherOptions) (port.Device, error) {
	pe, ok := v.Parent.hw.(*ether)
	if !ok {
		return nil, ErrVLANParent
	}
	tags := binary.BigEndian.AppendUint16(append([]byte(nil), pe.tags...), v.TPID)
	tags = binary.BigEndian.AppendUint16(tags, v.VID)
	mac := pe.mac
	if len(eo.MAC) == 6 {
		mac = ndisc.MAC(eo.MAC)
	}
	e, err := newEther("vlan", &vlanFrames{root: pe.root().io, tags: tags}, mac, eo)
	if err != nil {
		return nil, err
	}
	e.parent, e.vlan, e.tags, e.vlanFlags = pe, port.VLANTag{TPID: v.TPID, TCI: v.VID}, tags, v.Flags
	if err := dp.joinVLAN(e); err != nil {
		return nil, errors.Join(err, e.Close())
	}
	return e, nil
}

// joinVLAN puts VLAN device e in its parent's table, its root's socket
// told to read tags first.
func (dp *Dataplane) joinVLAN(e *ether) error {
	if h, ok := e.root().io.(*port.Host); ok {
		if err := h.ReadTags(); err != nil {
			return fmt.Errorf("reading VLAN tags on %s: %w", h.Dev(), err)
		}
	}
	dp.mu.Lock()
	defer dp.mu.Unlock()
	t := e.parent.vlans.Load()
	if t == nil {
		t = new(vlanTable)
		e.parent.vlans.Store(t)
	}
	if !t.slot(e.vlan.TPID, e.vlan.VID()).CompareAndSwap(nil, e) {
		return ErrVLANExists
	}
	return nil
}

// leaveVLAN stops handing VLAN link l its frames (under mu; the caller
// waits for the workers before l's state goes).
func (dp *Dataplane) leaveVLAN(l *Link) {
	if e, ok := l.hw.(*ether); ok {
		e.leaveParent()
	}
}

// leaveParent takes a VLAN link's device out of its parent's table; its
// Close does too, for one never registered.
func (e *ether) leaveParent() {
	if e.parent == nil {
		return
	}
	if t := e.parent.vlans.Load(); t != nil {
		t.slot(e.vlan.TPID, e.vlan.VID()).CompareAndSwap(e, nil)
	}
}

// VLAN is what link l is if it is a VLAN link.
func (l *Link) VLAN() (VLANInfo, bool) {
	e, ok := l.hw.(*ether)
	if !ok || e.parent == nil {
		return VLANInfo{}, false
	}
	return VLANInfo{Parent: e.parent.link.Load(), TPID: e.vlan.TPID, VID: e.vlan.VID(), Flags: e.vlanFlags}, true
}

// VLANs are the VLAN links on l.
func (ls *Links) VLANs(l *Link) []*Link {
	var out []*Link
	for _, c := range ls.All() {
		if e, ok := c.hw.(*ether); ok && e.parent != nil && port.Hardware(e.parent) == l.hw {
			out = append(out, c)
		}
	}
	return out
}

// demux hands a tagged frame (h, tag, b as routes has them) to the VLAN
// link its tag names, and reports the size kept and the link's device as
// routes does. A VLAN link's own frames come with their outer tag taken
// by the port; an inner one (QinQ) is still in the frame, and comes out
// here.
func (e *ether) demux(h *port.EthHdr, tag *port.VLANTag, b []byte) (int, *ether) {
	if e.parent != nil {
		n := port.Untag(h, tag, b)
		if n == 0 {
			e.count(DropTruncated, len(b)-vnetHdrLen)
			return 0, nil
		}
		b = b[:n]
		if !port.IsVLAN(binary.BigEndian.Uint16(h[12:])) {
			return e.routes(h, tag, b) // inside a priority tag: its own
		}
	}
	v := e.vlanOf(tag)
	if v == nil {
		e.tagged(h, tag, len(b)-vnetHdrLen)
		return 0, nil
	}
	binary.BigEndian.PutUint16(h[12:], tag.Type)
	if l := v.link.Load(); l == nil || !l.Up() {
		v.count(DropLinkDown, len(b)-vnetHdrLen) // as vlan_do_receive drops it
		return 0, nil
	}
	return v.routes(h, tag, b)
}

// tagged takes a frame (h, n bytes after it) that came tagged with a VLAN
// ID (tag) no VLAN link is on: it is dropped and counted unknown_vlan:
// Linux marks such a frame another host's (__netif_receive_skb_core,
// PACKET_OTHERHOST) and IPv6 drops it, so a trunk's VLANs do not leak
// into the untagged LAN (nor, of other ethertypes, up a TAP mirror). A
// priority-tagged frame (VID 0) is the untagged LAN's, as in Linux.
// Another MAC's unicast is not for us, tagged or not.
func (e *ether) tagged(h *port.EthHdr, _ *port.VLANTag, n int) {
	if h[0]&1 == 0 && ndisc.MAC(h[:6]) != e.mac {
		e.stats.NotForUs.Add(1)
		return
	}
	e.count(DropUnknownVLAN, n)
}

// count counts a frame of n bytes the link received and dropped for why,
// off the packet path's counters (the link's shared ones).
func (e *ether) count(why DropReason, n int) {
	if ctrs := e.ndCtrs.Load(); ctrs != nil {
		ctrs.RxPackets.addShared(1)
		ctrs.RxBytes.addShared(uint64(n))
		ctrs.Drops[why].addShared(1)
	}
}

// vlanRuns is a worker's copy of a batch that came in by several links.
type vlanRuns struct {
	bufs, base [batchSize][]byte
	sizes      [batchSize]int
}

// forwardRuns routes a batch that came in by several links (a trunk's
// VLAN links, rxl says which): each link's packets, in the order read, as
// a batch of its own, in w.bufs' first places; the buffers routed
// already stay behind the rest, so that w.bufs keeps each of its own.
func (w *worker) forwardRuns(n int) {
	by := &w.eth.rxl[w.q]
	if one := by[0]; one != nil && allBy(by[:n], one) {
		// the whole batch one VLAN link's (a trunk with one busy VLAN):
		// routed as it is, with no copy
		w.in = one.link.Load()
		w.forward(n)
		w.in = w.home
		return
	}
	t := w.runs
	copy(t.bufs[:n], w.bufs[:n])
	copy(t.base[:n], w.base[:n])
	copy(t.sizes[:n], w.sizes[:n])
	all := uint64(1)<<n - 1
	var done uint64
	for done != all {
		first := bits.TrailingZeros64(^done)
		v := by[first]
		var run uint64
		for i := first; i < n; i++ {
			if done&(1<<i) == 0 && by[i] == v {
				run |= 1 << i
			}
		}
		j := 0
		for _, m := range [3]uint64{run, all &^ (run | done), done} {
			for i := 0; i < n; i++ {
				if m&(1<<i) != 0 {
					w.bufs[j], w.base[j], w.sizes[j] = t.bufs[i], t.base[i], t.sizes[i]
					j++
				}
			}
		}
		w.in = w.home
		if v != nil {
			w.in = v.link.Load() // set: demux hands no frame to a link unregistered
		}
		w.forward(bits.OnesCount64(run))
		done |= run
	}
	w.in = w.home
}

// allBy reports whether every frame of a batch came in by link e.
func allBy(by []*ether, e *ether) bool {
	for _, b := range by {
		if b != e {
			return false
		}
	}
	return true
}
