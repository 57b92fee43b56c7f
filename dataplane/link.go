// Package dataplane owns the router's links and the packet path between
// them. It keeps:
//
//   - the link registry (link.go): links by name and index, their state,
//     MTU and addresses, published as snapshots for the packet path;
//   - the packet workers (worker.go, dataplane.go): one per queue of each
//     link's port, reading a batch, deciding it (package decide) and
//     writing it out; forward.go is the packet path, top to bottom, with
//     parsing (packet.go, hopopts.go), segmentation and coalescing
//     (gso.go, gro.go), ICMPv6 errors and their limits (icmp.go,
//     ratelimit.go), redirects (redirect.go), local delivery (local.go)
//     and its policing by class (copp.go), and counters (counters.go);
//   - the Ethernet link (ether.go): a port/ Frames device (a host link's
//     attached and detached by host.go), framed for
//     each packet's neighbour through ndisc's cache, its Neighbour
//     Discovery handed the ND messages it reads (ndlink.go: what ND asks
//     of the link); its VLAN links (vlan.go: 802.1Q and 802.1ad
//     sub-interfaces, Ethernet links of their own whose frames go out
//     through the parent's port with their tags and come in through its
//     reader, demultiplexed by tag without a lock; a tag no link is on
//     dropped);
//   - VRFs (vrf.go): a VRF link and its members' domain (one atomic word
//     per link), the packets of a member routed as coming in by its VRF,
//     and a route out of a VRF link routed again in its table;
//   - SRv6 (srv6.go): a path's seg6 encapsulation or seg6local behaviour
//     run on a packet coming in (package seg6 does the bytes), in the
//     room the workers' buffers keep in front of each packet, and the
//     packet routed again; the tunnel source;
//   - mirrors (mirror.go): the reader of a link's kernel TUN and the
//     packets given to it (whose TCP teaches CoPP its session peers);
//     keeping the kernel interface in step is the router's;
//   - links on paper (paper.go): a TAP, a host link and a mirror with
//     nothing in the kernel, for a router that is never started.
//
// What a link is made of (TUN, TAP, AF_PACKET, frames, the virtio-net
// header) is package port's; Neighbour Discovery is package ndisc's.
//
// Packet workers never lock and allocate nothing per packet: they read
// links, tables and addresses through atomic pointers, and neighbours
// through ndisc.Table's lock-free fast path. Link changes (add, delete,
// up, down, MTU, addresses) take the registry's own mutex and publish a
// new snapshot. dataplane never imports control or router.
package dataplane

import (
	"errors"
	"log"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"urouter/dataplane/port"
	"urouter/decide"
	"urouter/ndisc"
)

// Link is one of the router's interfaces: an index and a name in the
// registry, what it is (Hardware) and, while it is the router's, what does
// its I/O (Port).
type Link struct {
	Index int32
	Name  string
	hw    port.Hardware
	// offloads are what the link's port takes whole (fixed with the port)
	offloads port.Offloads

	port atomic.Pointer[portRef] // nil once removed
	mtu  atomic.Uint32
	up   atomic.Bool
	// activated: the link has been up (Linux gives a device its qdisc
	// as it first comes up, and keeps it: `qdisc noop` till then)
	activated atomic.Bool
	// noCarrier: the interface under it has lost its carrier (Carrier)
	noCarrier atomic.Bool
	addrs     atomic.Pointer[[]netip.Prefix] // the router's addresses, Linux's order
	counters  atomic.Pointer[[]*Counters]    // one per worker that touches the link
	mirror    atomic.Pointer[Mirror]         // its stand-in in the kernel, if any
	conf      linkConf
	copp      coppBuckets   // the limits of what it punts to the router
	l3        atomic.Uint64 // a member's: its VRF's index and table (vrf.go)
	vrfTable  uint32        // a VRF's: its table, fixed with its device
}

// portRef holds a Port for an atomic pointer.
type portRef struct{ port.Port }

// Hardware is what the link is: its kind, flags, link-layer address.
func (l *Link) Hardware() port.Hardware { return l.hw }

// Flags are the link's interface flags, UP included while it is up, and
// LOWER_UP while it also has its carrier.
func (l *Link) Flags() port.Flags {
	f := l.hw.Flags()
	if l.Up() {
		f |= port.FlagUp
		if l.Carrier() {
			f |= port.FlagLowerUp
		}
	}
	return f
}

// Carrier reports whether the link's port has its carrier: an
// interface's (a veth whose peer is down has none) as it had it when the
// link was made, then as the router was told (Links.SetCarrier); the
// others always do.
func (l *Link) Carrier() bool { return !l.noCarrier.Load() }

// SetCarrier records that link l's interface has its carrier, or not; it
// reports whether that changed.
func (ls *Links) SetCarrier(l *Link, on bool) bool {
	return l.noCarrier.Swap(!on) != !on
}

// MTU is the link's MTU.
func (l *Link) MTU() int { return int(l.mtu.Load()) }

// Up reports whether the link is administratively up.
func (l *Link) Up() bool { return l.up.Load() }

// Activated reports whether the link has ever been up.
func (l *Link) Activated() bool { return l.activated.Load() }

// Addrs returns the router's addresses on the link in the order Linux
// keeps and lists them: higher scope first, newest first within a scope.
// The slice is shared: do not change it.
func (l *Link) Addrs() []netip.Prefix {
	if p := l.addrs.Load(); p != nil {
		return *p
	}
	return nil
}

// portOf is the link's port, nil once the link is removed.
func (l *Link) portOf() port.Port {
	if r := l.port.Load(); r != nil {
		return r.Port
	}
	return nil
}

// PortSetUp and PortSetMTU tell the link's port (a TUN's kernel side)
// that the link goes up or down, or changes its MTU.
func (l *Link) PortSetUp(up bool) error {
	if p := l.portOf(); p != nil {
		return p.SetUp(up)
	}
	return nil
}

func (l *Link) PortSetMTU(mtu int) error {
	if p := l.portOf(); p != nil {
		return p.SetMTU(mtu)
	}
	return nil
}

// LoopbackIndex is the loopback's index: it is the first link made, as
// Linux's lo, and the router's own packets come in by it.
const LoopbackIndex int32 = 1

// IsLoopback says whether l is the loopback.
func (l *Link) IsLoopback() bool { return l.Index == LoopbackIndex }

// MaxIndex is the last index a link gets: the registry is a slice by
// index, which an index asked for near 2^31 would make gigabytes.
const MaxIndex = 1<<16 - 1

// Errors of link changes, worded as Linux words them.
var (
	ErrLinkExists = errors.New("File exists")
	ErrIndexTaken = errors.New("File exists") // the index asked for is another link's
	ErrNoIndex    = errors.New("No space left on device")
	ErrAddrExists = errors.New("ipv6: address already assigned.")
	ErrNoAddr     = errors.New("ipv6: address not found.")
	ErrMTU        = errors.New("mtu less than device minimum.")
	ErrMTUMax     = errors.New("mtu greater than device maximum.")
)

// MinMTU is IPv6's minimum link MTU.
const MinMTU = 1280

// Links is the registry of links, by index and by name. Readers never lock.
type Links struct {
	mu    sync.Mutex
	snap  atomic.Pointer[linkSnap]
	next  int32
	addrs atomic.Pointer[[]decide.LinkAddrs] // every link's addresses, for source selection
}

type linkSnap struct {
	byIndex []*Link // index -> link; holes are nil
	byName  map[string]*Link
}

// NewLinks returns an empty registry; the first link added gets index 1.
func NewLinks() *Links {
	ls := &Links{next: 1}
	ls.snap.Store(&linkSnap{byName: map[string]*Link{}})
	ls.addrs.Store(&[]decide.LinkAddrs{})
	return ls
}

// ByName returns the link called name, or nil.
func (ls *Links) ByName(name string) *Link { return ls.snap.Load().byName[name] }

// ByIndex returns link i, or nil.
func (ls *Links) ByIndex(i int32) *Link { return ls.snap.Load().at(i) }

// at is link i of the snapshot, or nil.
func (s *linkSnap) at(i int32) *Link {
	if i <= 0 || int(i) >= len(s.byIndex) {
		return nil
	}
	return s.byIndex[i]
}

// All returns every link, by index.
func (ls *Links) All() []*Link {
	var out []*Link
	for _, l := range ls.snap.Load().byIndex {
		if l != nil {
			out = append(out, l)
		}
	}
	return out
}

// AllAddrs returns every link's addresses, by index: what source address
// selection reads (decide.Addresses).
func (ls *Links) AllAddrs() []decide.LinkAddrs { return *ls.addrs.Load() }

// add registers a link, down, with the given MTU, made of dev (its port
// and what it is), at index (0: the next one; `link add ... index N`, which
// a saved configuration uses to give each link back its index).
func (ls *Links) add(name string, index int32, dev port.Device, mtu int) (*Link, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	old := ls.snap.Load()
	if old.byName[name] != nil {
		return nil, ErrLinkExists
	}
	if index == 0 {
		index = ls.next
		for old.at(index) != nil { // past the indexes asked for
			index++
		}
	} else if old.at(index) != nil {
		return nil, ErrIndexTaken
	}
	if index > MaxIndex {
		return nil, ErrNoIndex
	}
	l := &Link{Index: index, Name: name, hw: dev, offloads: dev.Offloads()}
	if c, ok := dev.(interface{ Carrier() bool }); ok {
		l.noCarrier.Store(!c.Carrier())
	}
	ls.next = max(ls.next, index+1)
	l.mtu.Store(uint32(mtu))
	l.port.Store(&portRef{dev})
	l.vrfTable, _ = port.VRFTable(dev)
	s := &linkSnap{byIndex: slices.Clone(old.byIndex), byName: make(map[string]*Link, len(old.byName)+1)}
	for k, v := range old.byName {
		s.byName[k] = v
	}
	for len(s.byIndex) <= int(l.Index) {
		s.byIndex = append(s.byIndex, nil)
	}
	s.byIndex[l.Index] = l
	s.byName[name] = l
	ls.snap.Store(s)
	return l, nil
}

// remove takes l out of the registry, with its addresses.
func (ls *Links) remove(l *Link) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	old := ls.snap.Load()
	s := &linkSnap{byIndex: slices.Clone(old.byIndex), byName: make(map[string]*Link, len(old.byName))}
	for k, v := range old.byName {
		if v != l {
			s.byName[k] = v
		}
	}
	if int(l.Index) < len(s.byIndex) {
		s.byIndex[l.Index] = nil
	}
	ls.snap.Store(s)
	l.up.Store(false)
	if err := l.listen(nil); err != nil {
		// it only leaves groups; the socket's close leaves them anyway
		log.Printf("dataplane: %s: %v", l.Name, err)
	}
	l.addrs.Store(nil)
	ls.publishAddrs()
	l.addrsChanged()
}

// SetUp sets the link administratively up or down, and reports whether
// that changed anything.
func (ls *Links) SetUp(l *Link, up bool) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if up {
		l.activated.Store(true)
	}
	return l.up.Swap(up) != up
}

// CheckMTU says whether IPv6 can run over a link of this MTU.
func CheckMTU(mtu int) error { return checkMTU(mtu, 65535) }

// CheckMTUOf is CheckMTU for link l, whose maximum is its own: a VRF's
// is IP6_MAX_MTU, 65575, as vrf_setup sets it.
func CheckMTUOf(l *Link, mtu int) error {
	if l.IsVRF() {
		return checkMTU(mtu, port.VRFMTU)
	}
	return CheckMTU(mtu)
}

func checkMTU(mtu, most int) error {
	if mtu < MinMTU {
		return ErrMTU
	}
	if mtu > most {
		return ErrMTUMax
	}
	return nil
}

// SetMTU changes the link's MTU; IPv6 needs at least MinMTU.
func (ls *Links) SetMTU(l *Link, mtu int) error {
	if err := CheckMTUOf(l, mtu); err != nil {
		return err
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l.mtu.Store(uint32(mtu))
	l.conf.mtu6.Store(0) // as Linux's NETDEV_CHANGEMTU: IPv6 takes the link's
	return nil
}

// AddAddr gives the router address a (with its prefix length) on l. It
// goes before the link's addresses of the same or a lower scope, as Linux's
// ipv6_link_dev_addr puts it: the newest first.
func (ls *Links) AddAddr(l *Link, a netip.Prefix) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	cur := l.Addrs()
	if slices.ContainsFunc(cur, func(p netip.Prefix) bool { return p.Addr() == a.Addr() }) {
		return ErrAddrExists
	}
	i := slices.IndexFunc(cur, func(p netip.Prefix) bool { return decide.Scope(a.Addr()) >= decide.Scope(p.Addr()) })
	if i < 0 {
		i = len(cur)
	}
	next := slices.Insert(slices.Clone(cur), i, a)
	if err := l.listen(next); err != nil {
		return err // ND would not hear the address's solicitations
	}
	l.addrs.Store(&next)
	ls.publishAddrs()
	l.addrsChanged()
	return nil
}

// DelAddr removes address a from l; a's prefix length must match (not 128
// by default as in `ip addr del ADDR`; the caller resolves a bare address).
func (ls *Links) DelAddr(l *Link, a netip.Prefix) (netip.Prefix, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	cur := l.Addrs()
	i := slices.IndexFunc(cur, func(p netip.Prefix) bool { return p.Addr() == a.Addr() && p.Bits() == a.Bits() })
	if i < 0 {
		return netip.Prefix{}, ErrNoAddr
	}
	removed := cur[i]
	next := slices.Delete(slices.Clone(cur), i, i+1)
	if err := l.listen(next); err != nil {
		// it only leaves groups, so this cannot be; the address goes anyway
		log.Printf("dataplane: %s: %v", l.Name, err)
	}
	l.addrs.Store(&next)
	ls.publishAddrs()
	l.addrsChanged()
	return removed, nil
}

// listen makes an Ethernet link listen to the groups of addresses addrs
// (their solicited-node groups), before they are published: DAD's and
// other nodes' solicitations come to the group. ls.mu is held.
func (l *Link) listen(addrs []netip.Prefix) error {
	if e, ok := l.hw.(*ether); ok {
		return e.listen(ndisc.Groups(addrs))
	}
	return nil
}

// addrsChanged tells an Ethernet link's ND that its addresses changed
// (DAD, advertised prefixes).
func (l *Link) addrsChanged() {
	if e, ok := l.hw.(*ether); ok {
		e.nd.Resync()
	}
}

// publishAddrs republishes every link's addresses for source selection;
// ls.mu is held.
func (ls *Links) publishAddrs() {
	var all []decide.LinkAddrs
	for _, l := range ls.snap.Load().byIndex {
		if l != nil && len(l.Addrs()) > 0 {
			all = append(all, decide.LinkAddrs{Link: l.Index, Addrs: l.Addrs()})
		}
	}
	ls.addrs.Store(&all)
}
