package dataplane

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/dataplane/port"
	"urouter/ndisc"
)

// ether is an Ethernet link's device: frames through a port.Frames (a TAP
// or an interface's AF_PACKET socket), the router's MAC, the multicast
// groups it listens to, and its Neighbour Discovery (package ndisc, run by
// the link's own goroutine) with the neighbour cache.
//
// The packet path sees only the Port: ReadBatch hands it the IPv6 packets
// addressed to the router's MAC (Neighbour Discovery messages go to the
// ND goroutine instead), WriteBatch frames each packet for the neighbour
// it goes to, resolved through the cache's lock-free fast path.
type ether struct {
	kind  string
	io    port.Frames
	mac   ndisc.MAC
	neigh *ndisc.Table // nd's, kept here for the packet path's direct call
	nd    *ndisc.ND
	rxh   [][batchSize]port.EthHdr  // per queue: the headers of the frames read
	rxt   [][batchSize]port.VLANTag // ... and the VLAN tags taken out of the tagged ones
	link  atomic.Pointer[Link]
	// groups are the multicast MACs the link listens to (ndisc.Groups of
	// its addresses), changed under the link registry's lock
	groups atomic.Pointer[[]ndisc.MAC]
	dp     *Dataplane
	stats  EtherStats
	// ndCtrs are the link's counters of Neighbour Discovery in and out,
	// written with addShared only
	ndCtrs atomic.Pointer[Counters]

	mu sync.Mutex // the sender of the link's ICMPv6 errors (ndLink.Unreachable)
	tx *worker    // routes the ICMPv6 errors the link makes (Address Unreachable)
	// wmu is held by the writes off the packet path (writeTo), which no
	// grace period covers, while a host link's old socket closes
	wmu sync.Mutex
	// give: a host link gives its MAC to each interface it attaches to
	// (none was given it: it is the first interface's, or its own)
	give bool

	// A VLAN link's (vlan.go): its parent, its tag, and the tags its
	// frames carry (its parent's, then its own)
	parent    *ether
	vlan      port.VLANTag
	tags      []byte
	vlanFlags uint32 // VLANReorderHdr or none, as made
	// vlans are the VLAN links on this link (nil: none yet); rxl says,
	// per queue, which of them each packet of the batch read came in by
	// (nil: this link), and mixed whether any did
	vlans atomic.Pointer[vlanTable]
	rxl   [][batchSize]*ether
	mixed []bool
}

// EtherStats count what an Ethernet link's port does below IPv6.
type EtherStats struct {
	NotForUs   atomic.Uint64 // frames to another MAC or group, or not IPv6
	Multicast  atomic.Uint64 // IPv6 to a multicast group, not Neighbour Discovery (MLD, say)
	NDReceived atomic.Uint64 // Neighbour Discovery messages taken by the link
	NDDropped  atomic.Uint64 // ... dropped: invalid, or its queue full
	NDSent     atomic.Uint64
	Held       atomic.Uint64 // packets that waited for a resolution
	Reads      atomic.Uint64 // batches read
	Frames     atomic.Uint64 // frames read
	Writes     atomic.Uint64 // batches written
	Sent       atomic.Uint64 // frames written
	QueueDrops atomic.Uint64 // frames the device's queue dropped before the router read them
}

func (s *EtherStats) String() string {
	per := func(a, b uint64) float64 { return float64(a) / float64(max(b, 1)) }
	return fmt.Sprintf("read %d frames in %d batches (%.1f per read), wrote %d in %d (%.1f per write); "+
		"not for us %d, multicast %d, ND in %d (dropped %d), ND out %d, held for resolution %d, queue drops %d",
		s.Frames.Load(), s.Reads.Load(), per(s.Frames.Load(), s.Reads.Load()),
		s.Sent.Load(), s.Writes.Load(), per(s.Sent.Load(), s.Writes.Load()),
		s.NotForUs.Load(), s.Multicast.Load(), s.NDReceived.Load(), s.NDDropped.Load(), s.NDSent.Load(), s.Held.Load(),
		s.QueueDrops.Load())
}

// scratchPool holds the writers' *etherScratch, shared by every Ethernet
// link: a sync.Pool is in the runtime's registry of pools until the second
// collection after its last use, so a pool inside a link's ether would keep
// the whole link (its socket's receive iovecs, and so its worker's 4 MiB of
// buffers) reachable after the link is deleted.
var scratchPool = sync.Pool{New: func() any { return new(etherScratch) }}

type etherScratch struct {
	hdrs [maxOut]port.EthHdr
	pkts [maxOut][]byte
	idx  [maxOut]int
}

// EtherOptions are what every Ethernet link takes.
type EtherOptions struct {
	MAC   []byte // the router's MAC; nil: the kind's default
	Neigh ndisc.Params
	Index int32 // the link's index; 0: the next free one
	// Held is the router's unres_total_bytes, which the link's cache's
	// held packets count against; nil: a budget of the cache's own
	Held *ndisc.Budget
}

// randomMAC is a locally administered unicast MAC, as Linux gives a TAP.
func randomMAC() ndisc.MAC {
	var m ndisc.MAC
	rand.Read(m[:])
	m[0] = m[0]&^1 | 2
	return m
}

// newEther makes an Ethernet device that listens to all-nodes and
// all-routers; an error is a group it could not join.
func newEther(kind string, io port.Frames, mac ndisc.MAC, eo EtherOptions) (*ether, error) {
	q := io.Queues()
	e := &ether{kind: kind, io: io, mac: mac, rxh: make([][batchSize]port.EthHdr, q),
		rxt: make([][batchSize]port.VLANTag, q), rxl: make([][batchSize]*ether, q), mixed: make([]bool, q)}
	e.nd = ndisc.New((*ndLink)(e), mac, eo.Neigh, eo.Held)
	e.neigh = e.nd.Table()
	if err := e.listen(ndisc.Groups(nil)); err != nil {
		return nil, err
	}
	return e, nil
}

// OpenTAP makes a TAP link's device.
func OpenTAP(name string, o port.TAPOptions, eo EtherOptions) (port.Device, error) {
	t, err := port.OpenTAP(name, o)
	if err != nil {
		return nil, err
	}
	mac := randomMAC()
	if len(eo.MAC) == 6 {
		mac = ndisc.MAC(eo.MAC)
	}
	return newEther("tap", t, mac, eo)
}

// Neigh returns an Ethernet link's neighbour cache, nil for other links.
func (l *Link) Neigh() *ndisc.Table {
	if e, ok := l.hw.(*ether); ok {
		return e.neigh
	}
	return nil
}

// EtherStats returns an Ethernet link's counters below IPv6, nil for
// other links.
func (l *Link) EtherStats() *EtherStats {
	if e, ok := l.hw.(*ether); ok {
		if h, ok := e.io.(*port.Host); ok {
			e.stats.QueueDrops.Add(h.Drops()) // the kernel's count resets as it is read
		}
		return &e.stats
	}
	return nil
}

// attach tells the device its dataplane and link, once registered, and
// starts its ND.
func (e *ether) attach(dp *Dataplane, l *Link) {
	e.dp = dp
	e.link.Store(l)
	e.ndCtrs.Store(l.NewCounters())
	e.nd.Start()
}

// listen makes gs the groups the link listens to, joining the new ones
// on an interface (a NIC that filters lets their frames in) and leaving
// the old: ND goes deaf to a group it could not join, so that is an
// error, and gs is not taken. A group that cannot be left costs only
// frames the link drops, so that is logged.
func (e *ether) listen(gs []ndisc.MAC) error {
	old := e.groups.Load()
	if a, ok := e.io.(*port.Host); ok {
		var joined []ndisc.MAC
		for _, g := range gs {
			if old == nil || !ndisc.ContainsMAC(*old, g) {
				if err := a.Join(g[:], true); err != nil {
					for _, j := range joined { // nothing changes: the ones just joined are left
						_ = a.Join(j[:], false) // best effort; a stray group costs only frames dropped
					}
					return fmt.Errorf("joining %v: %w", g, err)
				}
				joined = append(joined, g)
			}
		}
		if old != nil {
			for _, g := range *old {
				if !ndisc.ContainsMAC(gs, g) {
					if err := a.Join(g[:], false); err != nil {
						log.Printf("dataplane: %s: leaving %v: %v", a.Dev(), g, err)
					}
				}
			}
		}
	}
	e.groups.Store(&gs)
	return nil
}

// accepts reports whether a frame to dst is the link's: its MAC, a group
// it listens to, or broadcast.
func (e *ether) accepts(dst []byte) bool {
	m := ndisc.MAC(dst)
	if m == e.mac {
		return true
	}
	if dst[0]&1 == 0 {
		return false
	}
	if m == (ndisc.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
		return true
	}
	if m[0] == 0x33 && m[1] == 0x33 && e.mirrored() {
		return true // the mirror's kernel side sorts out its own groups
	}
	return ndisc.ContainsMAC(*e.groups.Load(), m)
}

// mirrored reports whether the link has a kernel mirror.
func (e *ether) mirrored() bool { return e.mirror() != nil }

// mirror is the link's kernel mirror, nil if it has none (or is not
// registered yet).
func (e *ether) mirror() *Mirror {
	if l := e.link.Load(); l != nil {
		return l.Mirror()
	}
	return nil
}

func (e *ether) Queues() int { return e.io.Queues() }

// ReadBatch reads frames and keeps the IPv6 packets for the router's MAC;
// Neighbour Discovery goes to the ND goroutine, other multicast and other
// MACs' frames are counted and dropped. It returns once it has a packet.
func (e *ether) ReadBatch(q int, bufs [][]byte, sizes []int) (int, error) {
	hdrs, tags, by := e.rxh[q][:], e.rxt[q][:], &e.rxl[q]
	for {
		n, err := e.io.ReadFrames(q, bufs, hdrs[:len(bufs)], tags[:len(bufs)], sizes)
		e.stats.Reads.Add(1)
		e.stats.Frames.Add(uint64(n))
		keep, mixed := 0, false
		for i := 0; i < n; i++ {
			by[keep] = nil
			if sizes[i] != 0 {
				m, to := e.routes(&hdrs[i], &tags[i], bufs[i][:sizes[i]])
				if to == nil {
					continue
				}
				if sizes[i] = m; to != e {
					by[keep], mixed = to, true
				}
			}
			keep = kept(bufs, sizes, i, keep)
		}
		e.mixed[q] = mixed
		if keep > 0 || err != nil {
			return keep, err
		}
	}
}

// kept moves frame i of a batch being read to slot keep, the next of
// those kept, and returns the slot after it.
func kept(bufs [][]byte, sizes []int, i, keep int) int {
	if keep != i {
		bufs[keep], bufs[i] = bufs[i], bufs[keep]
		sizes[keep] = sizes[i]
	}
	return keep + 1
}

// routes says where a frame (h, then b: virtio_net_hdr and packet; tag,
// the VLAN tag its port took out of it if h says it was tagged) goes: to
// the packet path, in by this link or the VLAN link it returns (demux),
// with its size, its header's offsets made the packet path's; or nowhere
// (nil): Neighbour Discovery goes to the ND goroutine (and RAs up the
// mirror as well, ndUp), other multicast up the mirror, and other
// ethertypes up a TAP mirror, each within its class's limit (copp.go);
// the rest is counted.
// (A truncated frame goes on: the packet path counts it.)
func (e *ether) routes(h *port.EthHdr, tag *port.VLANTag, b []byte) (int, *ether) {
	switch et := binary.BigEndian.Uint16(h[12:]); {
	case et != port.EtherTypeIPv6:
		if port.IsVLAN(et) {
			return e.demux(h, tag, b)
		} else if !e.toTAP(h, b) {
			e.stats.NotForUs.Add(1)
		}
	case !e.accepts(h[:6]):
		e.stats.NotForUs.Add(1)
	case ndisc.IsND(b[vnetHdrLen:]):
		e.capture(DirIn, b)
		if e.police(CoPPND, len(b)-vnetHdrLen, false) {
			e.nd.Receive(ndisc.MAC(h[6:12]), b[vnetHdrLen:])
			e.ndUp(h, b)
		}
	case h[0]&1 != 0:
		e.stats.Multicast.Add(1)
		if m := e.mirror(); m != nil && len(b) > vnetHdrLen &&
			e.police(e.mirrorClass(b[vnetHdrLen:]), len(b)-vnetHdrLen, true) {
			m.giveFrame(h, b) // to the kernel, whose groups they may be
		}
	default:
		port.ShiftVnet(b, -port.EthHdrLen)
		return len(b), e
	}
	return 0, nil
}

// mirrorClass is the class of multicast packet p given up the mirror
// (OSPFv3's hellos are routing, MLD other); a malformed one is other.
func (e *ether) mirrorClass(p []byte) CoPPClass {
	if len(p) < ipv6Len || p[0]>>4 != 6 {
		return CoPPOther
	}
	ip := header.IPv6(p)
	n := ipv6Len + int(ip.PayloadLength())
	if n > len(p) {
		return CoPPOther
	}
	ip = ip[:n]
	l4 := walk(ip)
	return e.dp.peers.coppClass(ip, &l4, true, e.dp.now())
}

// WriteBatch frames each packet for the neighbour it goes to: the MAC the
// cache has for via[i], read without a lock while the neighbour is valid.
// A packet to a neighbour being resolved waits in its entry (a copy) and
// counts as written.
func (e *ether) WriteBatch(_ int, pkts [][]byte, via []netip.Addr) (int, error) {
	s := scratchPool.Get().(*etherScratch)
	defer scratchPool.Put(s)
	n := 0
	var last netip.Addr
	var lastMAC ndisc.MAC
	lastOK := false
	for i, p := range pkts {
		mac, ok := lastMAC, lastOK && via[i] == last
		if !ok && via[i].IsMulticast() {
			mac, ok = ndisc.MulticastMAC(via[i]), true // a mirror's kernel side speaking to a group
		}
		if !ok {
			mac, ok = e.neigh.Output(via[i], p)
			if !ok {
				e.stats.Held.Add(1)
				continue
			}
			last, lastMAC, lastOK = via[i], mac, true
		}
		port.ShiftVnet(p, port.EthHdrLen+len(e.tags))
		e.frame(&s.hdrs[n], mac)
		s.pkts[n], s.idx[n] = p, i
		n++
	}
	if n == 0 {
		return len(pkts), nil
	}
	m, err := e.io.WriteFrames(s.hdrs[:n], s.pkts[:n])
	e.stats.Writes.Add(1)
	e.stats.Sent.Add(uint64(m))
	if err != nil {
		return s.idx[m], err
	}
	return len(pkts), nil
}

// frame makes h the header of an IPv6 frame from the router to mac.
func (e *ether) frame(h *port.EthHdr, mac ndisc.MAC) {
	copy(h[0:6], mac[:])
	copy(h[6:12], e.mac[:])
	binary.BigEndian.PutUint16(h[12:], port.EtherTypeIPv6)
}

// writeTo sends packets the link makes itself (ND, packets that waited)
// to mac, from the router's MAC; an error is the first write that failed.
func (e *ether) writeTo(mac ndisc.MAC, pkts [][]byte) error {
	for _, p := range pkts {
		if len(p) > vnetHdrLen && ndisc.IsND(p[vnetHdrLen:]) {
			e.capture(DirOut, p) // what waited was captured when the packet path wrote it
		}
	}
	s := scratchPool.Get().(*etherScratch)
	defer scratchPool.Put(s)
	wmu := &e.root().wmu
	wmu.Lock() // a host link's socket is not closed under it (detach)
	defer wmu.Unlock()
	for len(pkts) > 0 {
		n := min(len(pkts), maxOut)
		for i := 0; i < n; i++ {
			port.ShiftVnet(pkts[i], port.EthHdrLen+len(e.tags))
			e.frame(&s.hdrs[i], mac)
		}
		if _, err := e.io.WriteFrames(s.hdrs[:n], pkts[:n]); err != nil {
			return err
		}
		pkts = pkts[n:]
	}
	return nil
}

// capture offers a Neighbour Discovery message (virtio_net_hdr and
// packet), which the packet path never sees, to the captures.
func (e *ether) capture(d Direction, b []byte) {
	if l := e.link.Load(); l != nil && e.dp != nil {
		e.dp.captureOff(l, d, b)
	}
}

func (e *ether) Offloads() port.Offloads { return e.io.Offloads() }
func (e *ether) SetMTU(mtu int) error    { return e.io.SetMTU(mtu) }
func (e *ether) SetUp(up bool) error     { return e.io.SetUp(up) }

func (e *ether) Close() error {
	e.leaveParent()
	e.nd.Stop()
	return e.io.Close()
}

func (e *ether) Kind() string { return e.kind }

// Carrier reports whether its port has a carrier; a port that cannot tell
// has one. A VLAN link's is its root's.
func (e *ether) Carrier() bool {
	c, ok := e.root().io.(interface{ Carrier() bool })
	return !ok || c.Carrier()
}

// root is the Ethernet link at the bottom of a VLAN link's stack, whose
// port its frames go through; e itself for any other.
func (e *ether) root() *ether {
	for e.parent != nil {
		e = e.parent
	}
	return e
}

// Spec is its port's words, and for an interface's the MAC given it if it
// is not the interface's own.
func (e *ether) Spec() []string {
	if e.parent != nil {
		return e.vlanSpec()
	}
	var w []string
	if sp, ok := e.io.(port.Specifier); ok {
		w = sp.Spec()
	}
	if h, ok := e.io.(interface{ InterfaceMAC() net.HardwareAddr }); ok {
		if own := h.InterfaceMAC(); own != nil && !bytes.Equal(own, e.mac[:]) {
			w = append(w, "address", net.HardwareAddr(e.mac[:]).String())
		}
	}
	return w
}
func (*ether) Flags() port.Flags                { return port.FlagBroadcast | port.FlagMulticast }
func (*ether) LinkType() string                 { return "ether" }
func (e *ether) HardwareAddr() net.HardwareAddr { return net.HardwareAddr(e.mac[:]) }
func (*ether) Broadcast() net.HardwareAddr {
	return net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
}
func (*ether) TxQueueLen() int { return 1000 }

// linkLocalAddr is the link's link-local address, if it has one.
func (l *Link) linkLocalAddr() (netip.Addr, bool) { return ndisc.LinkLocalOf(l.Addrs()) }

// LinkLocal is the link-local address the link's MAC makes (modified
// EUI-64, RFC 4291), for links that have one.
func (l *Link) LinkLocal() (netip.Prefix, bool) {
	e, ok := l.hw.(*ether)
	if !ok {
		return netip.Prefix{}, false
	}
	m := e.mac
	a := [16]byte{0xfe, 0x80, 8: m[0] ^ 2, 9: m[1], 10: m[2], 11: 0xff, 12: 0xfe, 13: m[3], 14: m[4], 15: m[5]}
	return netip.PrefixFrom(netip.AddrFrom16(a), 64), true
}
