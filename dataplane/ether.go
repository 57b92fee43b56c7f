package dataplane

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"

	"urouter/ndisc"
)

// ether is an Ethernet link's device: frames through a frameIO (a TAP or
// an interface's AF_PACKET socket), the router's MAC, the multicast groups
// it listens to, its neighbour cache and its Neighbour Discovery (ndisc.go,
// run by the link's own goroutine).
//
// The packet path sees only the Port: ReadBatch hands it the IPv6 packets
// addressed to the router's MAC (Neighbour Discovery messages go to the
// ND goroutine instead), WriteBatch frames each packet for the neighbour
// it goes to, resolved through the cache's lock-free fast path.
type ether struct {
	kind  string
	io    frameIO
	mac   ndisc.MAC
	neigh *ndisc.Table
	nd    *ndProto
	rxh   [][batchSize]ethHdr // per queue: the headers of the frames read
	link  atomic.Pointer[Link]
	// groups are the multicast MACs the link listens to (all-nodes,
	// all-routers, its addresses' solicited-node groups)
	groups atomic.Pointer[[]ndisc.MAC]
	ra     atomic.Pointer[RAConfig]
	dad    atomic.Pointer[map[netip.Addr]DADState] // published by the ND goroutine
	dp     *Dataplane
	stats  EtherStats
	// ndCtrs are the link's counters of Neighbour Discovery in and out,
	// written with addShared only
	ndCtrs atomic.Pointer[Counters]
	closed atomic.Bool // its readers end (see closedErr)
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
	hdrs [maxOut]ethHdr
	pkts [maxOut][]byte
	idx  [maxOut]int
}

// EtherOptions are what every Ethernet link takes.
type EtherOptions struct {
	MAC   []byte // the router's MAC; nil: the kind's default
	Neigh ndisc.Params
}

// randomMAC is a locally administered unicast MAC, as Linux gives a TAP.
func randomMAC() ndisc.MAC {
	var m ndisc.MAC
	rand.Read(m[:])
	m[0] = m[0]&^1 | 2
	return m
}

func newEther(kind string, io frameIO, mac ndisc.MAC, p ndisc.Params) *ether {
	e := &ether{kind: kind, io: io, mac: mac, rxh: make([][batchSize]ethHdr, io.Queues())}
	e.nd = newNDisc(e)
	e.neigh = ndisc.NewTable(e.nd, p)
	e.setGroups(nil)
	ra := DefaultRA()
	e.ra.Store(&ra)
	return e
}

// OpenTAP makes a TAP link's device.
func OpenTAP(name string, o TAPOptions, eo EtherOptions) (Device, error) {
	t, err := openTAP(name, o)
	if err != nil {
		return nil, err
	}
	mac := randomMAC()
	if len(eo.MAC) == 6 {
		mac = ndisc.MAC(eo.MAC)
	}
	return newEther("tap", t, mac, eo.Neigh), nil
}

// OpenHost attaches a link to interface dev with an AF_PACKET socket. The
// router's MAC is the interface's own unless one is given (then the socket
// is promiscuous, as a NIC filters other MACs).
func OpenHost(dev string, eo EtherOptions) (Device, int, error) {
	a, ifi, err := openAFPacket(dev, nil)
	if err != nil {
		return nil, 0, err
	}
	mac := ndisc.MAC(ifi.HardwareAddr)
	if len(eo.MAC) == 6 && ndisc.MAC(eo.MAC) != mac {
		mac = ndisc.MAC(eo.MAC)
		if err := a.promisc(); err != nil {
			a.close()
			return nil, 0, err
		}
	}
	return newEther("host", a, mac, eo.Neigh), ifi.MTU, nil
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
		if a, ok := e.io.(*afPacket); ok {
			e.stats.QueueDrops.Add(a.drops()) // the kernel's count resets as it is read
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
	e.nd.start()
}

// setGroups makes the groups the link listens to: all-nodes, all-routers
// and the solicited-node group of each address.
func (e *ether) setGroups(addrs []netip.Prefix) {
	gs := []ndisc.MAC{{0x33, 0x33, 0, 0, 0, 1}, {0x33, 0x33, 0, 0, 0, 2}}
	for _, a := range addrs {
		m := multicastMAC(solicitedNode(a.Addr()))
		if !containsMAC(gs, m) {
			gs = append(gs, m)
		}
	}
	if a, ok := e.io.(*afPacket); ok {
		old := e.groups.Load()
		for _, g := range gs {
			if old == nil || !containsMAC(*old, g) {
				a.join(g[:], true)
			}
		}
		if old != nil {
			for _, g := range *old {
				if !containsMAC(gs, g) {
					a.join(g[:], false)
				}
			}
		}
	}
	e.groups.Store(&gs)
}

func containsMAC(ms []ndisc.MAC, m ndisc.MAC) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// solicitedNode is address a's solicited-node group: ff02::1:ff00:0/104
// and a's last 24 bits (RFC 4291 2.7.1).
func solicitedNode(a netip.Addr) netip.Addr {
	b := a.As16()
	return netip.AddrFrom16([16]byte{0xff, 0x02, 10: 0, 11: 1, 12: 0xff, 13: b[13], 14: b[14], 15: b[15]})
}

// multicastMAC is the Ethernet group of an IPv6 multicast address
// (RFC 2464: 33:33 and its last 32 bits).
func multicastMAC(a netip.Addr) ndisc.MAC {
	b := a.As16()
	return ndisc.MAC{0x33, 0x33, b[12], b[13], b[14], b[15]}
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
	return containsMAC(*e.groups.Load(), m)
}

// mirrored reports whether the link has a kernel mirror.
func (e *ether) mirrored() bool {
	l := e.link.Load()
	return l != nil && l.Mirror() != nil
}

func (e *ether) Queues() int { return e.io.Queues() }

// ReadBatch reads frames and keeps the IPv6 packets for the router's MAC;
// Neighbour Discovery goes to the ND goroutine, other multicast and other
// MACs' frames are counted and dropped. It returns once it has a packet.
func (e *ether) ReadBatch(q int, bufs [][]byte, sizes []int) (int, error) {
	hdrs := e.rxh[q][:]
	for {
		n, err := e.io.readFrames(q, bufs, hdrs[:len(bufs)], sizes)
		e.stats.Reads.Add(1)
		e.stats.Frames.Add(uint64(n))
		keep := 0
		for i := 0; i < n; i++ {
			if sizes[i] != 0 && !e.routes(&hdrs[i], bufs[i][:sizes[i]]) {
				continue
			}
			if keep != i {
				bufs[keep], bufs[i] = bufs[i], bufs[keep]
				sizes[keep] = sizes[i]
			}
			keep++
		}
		if err != nil && e.closed.Load() {
			err = os.ErrClosed
		}
		if keep > 0 || err != nil {
			return keep, err
		}
	}
}

// shiftVnet moves a virtio_net_hdr's offsets (csum_start, hdr_len) by d:
// on an Ethernet link they count from the frame's start, in the packet
// path from the IPv6 header's.
func shiftVnet(b []byte, d int) {
	if b[0]&vnetNeedsCsum != 0 {
		binary.LittleEndian.PutUint16(b[6:], uint16(int(binary.LittleEndian.Uint16(b[6:]))+d))
	}
	if h := binary.LittleEndian.Uint16(b[2:]); h != 0 {
		binary.LittleEndian.PutUint16(b[2:], uint16(max(int(h)+d, 0)))
	}
}

// routes reports whether a frame (h, then b: virtio_net_hdr and packet)
// goes to the packet path, its header's offsets made the packet path's;
// Neighbour Discovery goes to the ND goroutine, the rest is counted.
// (A truncated frame goes on: the packet path counts it.)
func (e *ether) routes(h *ethHdr, b []byte) bool {
	switch {
	case binary.BigEndian.Uint16(h[12:]) != etherTypeIPv6 || !e.accepts(h[:6]):
		e.stats.NotForUs.Add(1)
	case isND(b[vnetHdrLen:]):
		e.nd.receive(ndisc.MAC(h[6:12]), b[vnetHdrLen:])
	case h[0]&1 != 0:
		e.stats.Multicast.Add(1)
		if l := e.link.Load(); l != nil && l.Mirror() != nil && len(b) > vnetHdrLen {
			shiftVnet(b, -ethHdrLen)
			l.Mirror().give(b, len(b)-vnetHdrLen) // to the kernel, whose groups they may be
		}
	default:
		shiftVnet(b, -ethHdrLen)
		return true
	}
	return false
}

// isND reports whether p is a Neighbour Discovery message (ICMPv6 types
// 133 to 137 right after the IPv6 header, as they are sent).
func isND(p []byte) bool {
	return len(p) >= ipv6Len+4 && p[0]>>4 == 6 && p[6] == protoICMPv6 && p[ipv6Len] >= 133 && p[ipv6Len] <= 137
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
			mac, ok = multicastMAC(via[i]), true // a mirror's kernel side speaking to a group
		}
		if !ok {
			mac, ok = e.neigh.Output(via[i], p)
			if !ok {
				e.stats.Held.Add(1)
				continue
			}
			last, lastMAC, lastOK = via[i], mac, true
		}
		shiftVnet(p, ethHdrLen)
		e.frame(&s.hdrs[n], mac)
		s.pkts[n], s.idx[n] = p, i
		n++
	}
	if n == 0 {
		return len(pkts), nil
	}
	m, err := e.io.writeFrames(s.hdrs[:n], s.pkts[:n])
	e.stats.Writes.Add(1)
	e.stats.Sent.Add(uint64(m))
	if err != nil {
		return s.idx[m], err
	}
	return len(pkts), nil
}

// frame makes h the header of an IPv6 frame from the router to mac.
func (e *ether) frame(h *ethHdr, mac ndisc.MAC) {
	copy(h[0:6], mac[:])
	copy(h[6:12], e.mac[:])
	binary.BigEndian.PutUint16(h[12:], etherTypeIPv6)
}

// writeTo sends packets the link makes itself (ND, packets that waited)
// to mac, from the router's MAC.
func (e *ether) writeTo(mac ndisc.MAC, pkts [][]byte) {
	s := scratchPool.Get().(*etherScratch)
	defer scratchPool.Put(s)
	for len(pkts) > 0 {
		n := min(len(pkts), maxOut)
		for i := 0; i < n; i++ {
			shiftVnet(pkts[i], ethHdrLen)
			e.frame(&s.hdrs[i], mac)
		}
		e.io.writeFrames(s.hdrs[:n], pkts[:n])
		pkts = pkts[n:]
	}
}

func (e *ether) Offloads() Offloads   { return e.io.offloads() }
func (e *ether) SetMTU(mtu int) error { return e.io.setMTU(mtu) }
func (e *ether) SetUp(up bool) error  { return e.io.setUp(up) }

func (e *ether) Close() error {
	e.closed.Store(true)
	e.nd.stop()
	return e.io.close()
}

func (e *ether) Kind() string                   { return e.kind }
func (*ether) Flags() Flags                     { return FlagBroadcast | FlagMulticast }
func (*ether) LinkType() string                 { return "ether" }
func (e *ether) HardwareAddr() net.HardwareAddr { return net.HardwareAddr(e.mac[:]) }
func (*ether) Broadcast() net.HardwareAddr {
	return net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
}
func (*ether) TxQueueLen() int { return 1000 }

const neighValid = ndisc.Valid

// linkLocalAddr is the link's link-local address, if it has one.
func (l *Link) linkLocalAddr() (netip.Addr, bool) {
	for _, p := range l.Addrs() {
		if p.Addr().IsLinkLocalUnicast() {
			return p.Addr(), true
		}
	}
	return netip.Addr{}, false
}

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
