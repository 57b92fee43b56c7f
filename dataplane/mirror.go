package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/dataplane/port"
	"urouter/decide"
)

// Mirror is a link's stand-in in the kernel of the router's namespace (as
// VPP's linux-cp pairs an interface with a TAP): a kernel interface with
// the link's MTU, state and IPv6 addresses, so that routing daemons running
// on the kernel's stack see the link as an interface and run their
// sessions over it. What reaches the router's addresses and the router
// does not answer itself goes up into the kernel through it; what the
// kernel sends out of it is routed by the router as its own packets.
//
// It is a TUN (IPv6 packets), or for an Ethernet link a TAP with the
// link's MAC (mirror_tap.go), which carries the frames the router does not
// take itself too: IS-IS, LLDP and any other ethertype, both ways.
type Mirror struct {
	Name  string // the kernel's interface
	Index int32  // its kernel interface index
	Kind  string // MirrorTUN or MirrorTAP

	link *Link
	port mirrorPort
	w    *worker

	// Up: packets given to the kernel; Down: packets the kernel sent,
	// routed by the router; Dropped: either way, lost (the kernel's
	// queue full, no route, a multicast destination).
	UpPackets, UpBytes     atomic.Uint64
	DownPackets, DownBytes atomic.Uint64
	Dropped                atomic.Uint64
	// RAsHeld are the kernel's Router Advertisements kept off a link whose
	// advertisements are the router's own (`ra set dev LINK on`).
	RAsHeld atomic.Uint64

	// The Ethernet reader and the ND goroutine give the kernel packets
	// outside the workers' epochs: users counts those writing to the port
	// and closing turns new ones away, so that ClearMirror closes the port
	// only once none is left (its descriptor's number could be another's
	// after). done is closed when the mirror's worker has ended.
	users   atomic.Int32
	closing atomic.Bool
	done    chan struct{}
}

// The kinds of mirror.
const (
	MirrorTUN = "tun"
	MirrorTAP = "tap"
)

// ErrMirrorKind: a TAP mirror is an Ethernet link's only.
var ErrMirrorKind = errors.New("a TAP mirror needs an Ethernet link")

// mirrorPort is a mirror's kernel interface: the port its worker reads
// what the kernel sends, and the two ways up.
type mirrorPort interface {
	port.Port
	// give writes an IPv6 packet (virtio_net_hdr and packet) into the
	// kernel.
	give(b []byte) error
	// giveFrame writes a frame the link read (header h, then b:
	// virtio_net_hdr and what followed the header); a TUN takes only the
	// IPv6 packet of an IPv6 frame.
	giveFrame(h *port.EthHdr, b []byte) error
}

// SetCarrier makes the kernel's side dormant while its link has no
// carrier (port.SetDormant), and up again when it has: the daemons there
// see a cable pulled as Linux shows it them.
func (m *Mirror) SetCarrier(on bool) error {
	if m.Paper() {
		return nil
	}
	return port.SetDormant(m.Index, !on)
}

// Mirror is the link's kernel mirror, nil if it has none.
func (l *Link) Mirror() *Mirror { return l.mirror.Load() }

// SetMirror gives link l a kernel mirror of kind (MirrorTUN, MirrorTAP)
// named kname, replacing the one it had: after the new one is made, so
// that a mirror that cannot be made leaves the old (one of the same name
// goes first, as the name is the new one's). The kernel interface is
// made down with no address: the router gives it the link's state
// (router's syncKernel).
func (dp *Dataplane) SetMirror(l *Link, kname, kind string) (*Mirror, error) {
	e, isEther := l.hw.(*ether)
	if kind == MirrorTAP && !isEther {
		return nil, ErrMirrorKind
	}
	if old := l.Mirror(); old != nil && old.Name == kname {
		if err := dp.ClearMirror(l); err != nil {
			return nil, err
		}
	}
	var (
		mp   mirrorPort
		kidx int32
		err  error
	)
	if kind == MirrorTAP {
		mp, kidx, err = openTAPMirror(kname, l.MTU(), e)
	} else {
		var t *port.TUN
		t, kidx, err = port.OpenMirror(kname, l.MTU())
		mp = tunMirror{t}
	}
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%s: %w", kname, ErrLinkExists)
	}
	if err != nil {
		return nil, err
	}
	if err := dp.ClearMirror(l); err != nil {
		return nil, errors.Join(err, mp.Close())
	}
	m := &Mirror{Name: kname, Index: kidx, Kind: kind, link: l, port: mp, done: make(chan struct{})}
	if t, ok := mp.(*tapMirror); ok {
		t.m = m
	}
	dp.mu.Lock()
	m.w = dp.addWorkers(l, mp, 1, m)[0]
	l.mirror.Store(m)
	dp.mu.Unlock()
	go func() {
		defer close(m.done)
		m.w.RoutineRead()
	}()
	if err := allMulti(l, true); err != nil {
		// without it the kernel's own groups (OSPFv3's, IS-IS's) would not come in
		return nil, errors.Join(fmt.Errorf("%s: PACKET_MR_ALLMULTI: %w", l.Name, err), dp.ClearMirror(l))
	}
	return m, nil
}

// ClearMirror removes link l's mirror, if it has one; the kernel interface
// goes with it.
func (dp *Dataplane) ClearMirror(l *Link) error {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	m := l.mirror.Swap(nil)
	if m == nil || m.Paper() {
		return nil
	}
	merr := allMulti(l, false)
	if merr != nil {
		merr = fmt.Errorf("%s: dropping PACKET_MR_ALLMULTI: %w", l.Name, merr)
	}
	m.closing.Store(true)
	dp.synchronize() // no worker is still giving it packets
	for m.users.Load() != 0 {
		runtime.Gosched() // a write of one packet
	}
	err := m.port.Close()
	<-m.done // nor sending what the kernel sent (a TAP mirror's frames) by the link's port
	dp.dropWorkers(func(w *worker) bool { return w == m.w })
	return errors.Join(merr, err)
}

// allMulti makes an Ethernet link on an interface take every multicast
// frame while it has a mirror (a TAP gets them all anyway).
func allMulti(l *Link, on bool) error {
	if _, h := l.host(); h != nil {
		return h.AllMulti(on)
	}
	return nil
}

// tunMirror is a TUN mirror's port.
type tunMirror struct{ *port.TUN }

func (t tunMirror) give(b []byte) error { return t.Give(b) }

func (t tunMirror) giveFrame(h *port.EthHdr, b []byte) error {
	if binary.BigEndian.Uint16(h[12:]) != port.EtherTypeIPv6 {
		return errNotIPv6
	}
	port.ShiftVnet(b, -port.EthHdrLen)
	return t.Give(b)
}

var errNotIPv6 = errors.New("not IPv6")

// toKernel is the mirror that takes a packet for the router the router
// does not answer itself: the mirror of the link it came in by, else of
// the link whose address it is for; nil if neither has one.
func (w *worker) toKernel(k *pkt) *Mirror {
	if answersItself(k) {
		return nil
	}
	if m := w.in.Mirror(); m != nil {
		return m
	}
	if k.egress != nil {
		return k.egress.Mirror()
	}
	return nil
}

// give writes b (virtio_net_hdr and a packet of n bytes) into the kernel.
func (m *Mirror) give(b []byte, n int) {
	if !m.enter() {
		m.Dropped.Add(1)
		return
	}
	m.count(m.port.give(b), n)
	m.users.Add(-1)
}

// giveFrame gives the kernel a frame the link read (h, then b), whole up
// a TAP mirror, its IPv6 packet up a TUN.
func (m *Mirror) giveFrame(h *port.EthHdr, b []byte) {
	if !m.enter() {
		m.Dropped.Add(1)
		return
	}
	m.count(m.port.giveFrame(h, b), len(b)-vnetHdrLen)
	m.users.Add(-1)
}

// enter counts a user of the port in, unless the mirror is closing.
func (m *Mirror) enter() bool {
	m.users.Add(1)
	if m.closing.Load() {
		m.users.Add(-1)
		return false
	}
	return true
}

func (m *Mirror) count(err error, n int) {
	if err != nil {
		m.Dropped.Add(1) // the kernel's queue is full, or the mirror goes
		return
	}
	m.UpPackets.Add(1)
	m.UpBytes.Add(uint64(n))
}

// answersItself: what the router answers whatever the kernel would (an
// echo request, Neighbour and Router Discovery); the rest of what is for
// it goes to a mirror when there is one.
func answersItself(k *pkt) bool {
	if k.l4.proto != protoICMPv6 {
		return false
	}
	t := header.ICMPv6Type(k.l4.icmpTy)
	return t == header.ICMPv6EchoRequest || t >= header.ICMPv6RouterSolicit && t <= header.ICMPv6RedirectMsg
}

// forwardOwn routes a batch the kernel sent out of a mirror, as the
// router's own packets: the rules see them come in by the loopback, a
// link-local destination leaves by the mirror's link, the hop limit is
// the kernel's to set. Link-scope multicast (OSPFv3's hellos, MLD
// reports) leaves by the link, to its group; wider scopes stay on the
// kernel's side. Its unicast TCP teaches the session peers (copp.go).
func (w *worker) forwardOwn(n int) {
	m, in := w.own, w.in
	w.loadTaps(false) // captured as they leave; not traced
	links := w.dp.Links.snap.Load()
	w.now = w.dp.now()
	w.batchSeq++
	now := coarse(w.now)
	for i := 0; i < n; i++ {
		k := &w.pk[i]
		*k = pkt{b: w.bufs[i][:w.sizes[i]]}
		m.DownPackets.Add(1)
		m.DownBytes.Add(uint64(w.sizes[i] - vnetHdrLen))
		if !in.carries() || !w.parse(k) {
			m.Dropped.Add(1)
			continue
		}
		if k.l4.proto == protoICMPv6 && k.l4.icmpTy == uint8(header.ICMPv6RouterAdvert) && !w.kernelRA(k) {
			m.Dropped.Add(1)
			continue
		}
		dst := k.p.DestinationAddressSlice()
		if dst[0] == 0xff {
			if k.wireSize() > in.IPv6MTU() {
				m.Dropped.Add(1)
				continue
			}
			k.act, k.egress, k.via = actForward, in, netip.AddrFrom16([16]byte(dst))
			w.send(k)
			continue
		}
		w.learnPeer(k, now)
		key := &w.keys[0]
		k.keyInto(key, 0)
		key.L3Table = in.l3Table() // the kernel's side of a member speaks in its VRF
		if linkLocal(dst) {
			key.Oif = in.Index
		}
		r := w.dp.Decider.Decide(key)
		w.ownLeak(key, &r, links)
		// a seg6 route encapsulates the kernel's packets too (Linux's
		// output redirect); a seg6local behaviour is for packets coming in
		if st := r.Nexthop().Encap; r.Verdict == decide.Forward && st != nil && st.Encap != nil && !w.seg6encap(i, k, key, &r, st.Encap, links) {
			m.Dropped.Add(1)
			continue
		}
		switch r.Verdict {
		case decide.Forward:
			out := links.at(r.Nexthop().Link)
			if out == nil || !out.carries() || k.wireSize() > out.IPv6MTU() {
				m.Dropped.Add(1)
				continue
			}
			k.act, k.egress, k.via = actForward, out, neighbourOf(&r, k.p)
			w.send(k)
		case decide.Local:
			k.egress = links.at(r.Nexthop().Link)
			w.local(k)
		default:
			m.Dropped.Add(1)
		}
	}
	w.flush()
	w.dropTaps()
}

// ownMartian: what the kernel may not send out of a mirror (multicast
// wider than the link, an unspecified or loopback destination, a
// multicast source).
func ownMartian(p header.IPv6) bool {
	dst := p.DestinationAddressSlice()
	return dst[0] == 0xff && dst[1]&0x0f != 2 || isUnspecOrLoop(dst) || p.SourceAddressSlice()[0] == 0xff
}
