// Package router is the composition root: it builds the router's links,
// tables, rule set, routing decision and dataplane, and owns the policy
// Linux derives from them: the local and connected routes an address
// brings (proto kernel, metric 0 in table local, 256 in main), what a link
// going down or away does to routes and addresses, and route expiry
// (expire.go); for Ethernet links, the gateways whose neighbour failed
// (their multipath members go dead, and they are probed every
// router_probe_interval: ether.go); for host links, their interface's carrier (carrier.go) and
// the interface they wait for, attach to as it comes and let go as it
// goes (hostlink.go); for VLAN links, following their parent down, up,
// out of carrier, to a lower MTU and away as Linux's 8021q does
// (vlan.go); for VRFs, the l3mdev rule, members enslaved and released
// with their routes moved between tables, strict_mode (vrf.go), and
// the kernel VRF device a member's mirror joins where the kernel has
// VRFs (vrf_kernel.go); for mirrors, the kernel interface kept in step
// with its link by netlink (mirror.go). A router on paper (paper.go)
// has links with no kernel device and is never started: `apply` reads a
// config and tries its changes on one.
//
// control parses commands and calls the router (or a table, for routes);
// it never goes around it. Link and address changes, which touch several
// tables, take the router's lock; route changes take only their table's.
// The router never waits on a client: housekeeping tries a table's lock
// and comes back later rather than wait for it.
package router

import (
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"urouter/dataplane"
	"urouter/dataplane/port"
	"urouter/decide"
	"urouter/fib6"
	"urouter/ndisc"
	"urouter/nexthop"
	"urouter/rules"
)

// Metrics of the routes the router derives from its addresses, as Linux
// gives them.
const (
	ConnectedMetric = 256
	LocalMetric     = 0
)

// Router is the running router's state and policy.
type Router struct {
	Tables  *fib6.Tables
	Links   *dataplane.Links
	Rules   *rules.Registry
	Decider *decide.Decider
	DP      *dataplane.Dataplane
	Lo      *dataplane.Link
	// Nexthops are the nexthop objects routes may point at (`nhid N`).
	Nexthops *nexthop.Registry

	mu sync.Mutex // link and address changes
	// mirrors maps the kernel interface index of each link's mirror to
	// the link's index
	mirrors atomic.Pointer[map[int32]int32]
	watch   atomic.Pointer[func(Event)]
	gws     gateways
	sys     sysctls // Linux's knobs by name (sysctl.go), under mu
	// addrMetrics are the metrics addresses give their prefix routes
	// (`address add ... metric N`), under mu
	addrMetrics map[addrKey]uint32
	// mtuFromIface are the host links waiting for their first interface,
	// given no MTU: they take the interface's (hostlink.go); under mu
	mtuFromIface map[*dataplane.Link]bool
	// held bounds the bytes the links' caches hold for resolution
	// together (unres_total_bytes)
	held *ndisc.Budget
	// paper: its links are on paper (paper.go)
	paper bool
	// vrfRules: the l3mdev rule was added, with the first VRF (vrf.go)
	vrfRules bool
	// kernelVRFs are the kernel VRF devices made for the VRFs' mirrors,
	// noKernelVRF that the kernel has none (vrf_kernel.go)
	kernelVRFs  []string
	noKernelVRF bool
	// expiry is what routes expire by (a test gives its own)
	expiry expiryClock
	stop   chan struct{}
	done   sync.WaitGroup
}

// New builds a router: the tables local, main and default, Linux's
// default rules, the loopback link with ::1, and the dataplane. Start
// runs its housekeeping.
func New() *Router {
	r := &Router{Tables: fib6.NewTables(), Links: dataplane.NewLinks(), sys: newSysctls(),
		addrMetrics: map[addrKey]uint32{}, mtuFromIface: map[*dataplane.Link]bool{}, held: ndisc.NewBudget(), expiry: wallClock{}}
	// The router's own packets come in by the loopback, as Linux's lo.
	r.Rules = rules.NewRegistry(func(name string) int32 {
		if l := r.Links.ByName(name); l != nil {
			return l.Index
		}
		return 0
	}, dataplane.LoopbackIndex)
	r.Decider = decide.New(r.Tables, r.Rules, r.Links)
	r.Decider.Seed = rand.Uint64() // per router, as Linux's per boot
	r.Decider.Neigh = neighbours{r.Links}
	r.Nexthops = nexthop.NewRegistry(func() int64 { return time.Now().UnixMilli() })
	r.Nexthops.LinkUp = func(link int32) bool {
		l := r.Links.ByIndex(link)
		return l != nil && l.Up()
	}
	r.DP = dataplane.New(r.Links, r.Decider)
	r.gws = gateways{failed: ndisc.NewProbes[nexthop.Gateway](DefaultRouterProbeInterval),
		events: make(chan neighEvent, 1024), all: make(chan neighEvent, 1024)}
	r.DP.WatchNeighbours(r.neighChanged)
	r.Lo = r.DP.AddLoopback()
	r.sysctlNewLink(r.Lo)
	if err := r.AddAddr(r.Lo, netip.PrefixFrom(netip.IPv6Loopback(), 128)); err != nil {
		panic("router: ::1 on lo: " + err.Error())
	}
	return r
}

// EventKind says what changed.
type EventKind uint8

const (
	LinkAdded EventKind = iota + 1
	LinkChanged
	LinkDeleted
	AddrAdded
	AddrDeleted
)

// Event is a change of a link or of one of its addresses, as `ip monitor`
// reports it.
type Event struct {
	Kind EventKind
	Link *dataplane.Link
	Addr netip.Prefix // for AddrAdded and AddrDeleted
}

// Watch makes fn hear every link and address change from now on (nil:
// none). fn runs with the router's lock held and must not block.
func (r *Router) Watch(fn func(Event)) {
	if fn == nil {
		r.watch.Store(nil)
	} else {
		r.watch.Store(&fn)
	}
}

func (r *Router) tell(kind EventKind, l *dataplane.Link, a netip.Prefix) {
	if fn := r.watch.Load(); fn != nil {
		(*fn)(Event{Kind: kind, Link: l, Addr: a})
	}
	if kind != LinkDeleted {
		r.syncMirror(l)
	}
}

// AddTUN creates link name as a TUN device of the router's, down.
func (r *Router) AddTUN(name string, o port.TUNOptions) (*dataplane.Link, error) {
	return r.AddTUNAt(name, 0, o)
}

// AddTUNAt is AddTUN at index (0: the next free one).
func (r *Router) AddTUNAt(name string, index int32, o port.TUNOptions) (*dataplane.Link, error) {
	if o.MTU == 0 {
		o.MTU = 1500
	}
	open := func() (port.Device, error) { return port.OpenTUN(name, o) }
	if r.paper {
		open = func() (port.Device, error) { return port.PaperTUN(o), nil }
	}
	return r.addLink(name, index, o.MTU, open)
}

// AddDummy creates link name as a dummy link, down.
func (r *Router) AddDummy(name string, mtu int) (*dataplane.Link, error) {
	return r.AddDummyAt(name, 0, mtu, nil)
}

// AddDummyAt is AddDummy at index (0: the next free one), with mac (nil:
// a random one).
func (r *Router) AddDummyAt(name string, index int32, mtu int, mac net.HardwareAddr) (*dataplane.Link, error) {
	return r.addLink(name, index, mtu, func() (port.Device, error) { return port.NewDummyMAC(mac), nil })
}

// AddLink registers link name made of dev, down.
func (r *Router) AddLink(name string, dev port.Device, mtu int) (*dataplane.Link, error) {
	return r.addLink(name, 0, mtu, func() (port.Device, error) { return dev, nil })
}

// addLink makes a link's device with open, once the name is known to be
// free (opening a TUN by the name of one that exists would join it), and
// registers the link at index (0: the next free one).
func (r *Router) addLink(name string, index int32, mtu int, open func() (port.Device, error)) (*dataplane.Link, error) {
	return r.addLinkMTU(name, index, func() (port.Device, int, error) {
		d, err := open()
		return d, mtu, err
	})
}

// addLinkMTU is addLink for a device that knows its MTU once open.
func (r *Router) addLinkMTU(name string, index int32, open func() (port.Device, int, error)) (*dataplane.Link, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Links.ByName(name) != nil {
		return nil, dataplane.ErrLinkExists
	}
	if index < 0 || index > 0 && r.Links.ByIndex(index) != nil {
		return nil, dataplane.ErrIndexTaken
	}
	dev, mtu, err := open()
	if err != nil {
		return nil, err
	}
	l, err := r.DP.AddLink(name, index, dev, mtu)
	if err != nil {
		return nil, errors.Join(err, dev.Close())
	}
	r.sysctlNewLink(l)
	r.Rules.Relink() // rules naming it attach
	r.hostAdded(l)
	r.tell(LinkAdded, l, netip.Prefix{})
	return l, nil
}

// SetUp brings a link up or down. Up installs the routes of its
// addresses; down does what Linux does to IPv6 on a link going down: its
// routes go from every table, and so do its addresses, but for its global
// ones when keep_addr_on_down says to keep them (it is 0 by default).
func (r *Router) SetUp(l *dataplane.Link, up bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.setUp(l, up)
}

func (r *Router) setUp(l *dataplane.Link, up bool) error {
	if up {
		if err := vlanUp(l); err != nil {
			return err
		}
	}
	if err := l.PortSetUp(up); err != nil {
		return err
	}
	if !r.Links.SetUp(l, up) {
		return nil
	}
	r.tell(LinkChanged, l, netip.Prefix{})
	if up {
		defer r.followParent(l, true) // its VLAN links after it, as a saved config makes them
		if !l.IPv6Enabled() {
			return nil
		}
		r.linkChanged(l, fib6.LinkUp)
		var errs []error
		for _, a := range l.Addrs() {
			errs = append(errs, r.install(l, a))
		}
		errs = append(errs, r.addLinkLocal(l))
		return errors.Join(errs...)
	}
	r.followParent(l, false)
	// Route and nexthop adds check that their link is up inside their
	// table's transaction or the registry's lock, so after this no route
	// and no nexthop object through l remains (multipath routes keep their
	// paths through it, dead, as Linux does).
	r.dropRoutesOf(r.Nexthops.RemoveOnLink(l.Index))
	r.linkChanged(l, fib6.LinkDown)
	r.ifdownAddrs(l)
	return nil
}

// ifdownAddrs deletes l's addresses as addrconf_ifdown does: all of
// them but the global ones keep_addr_on_down keeps (link-local ones go
// all the same).
func (r *Router) ifdownAddrs(l *dataplane.Link) {
	keep := r.keepAddrs(l)
	r.dropAddrs(l, func(a netip.Prefix) bool { return keep && !a.Addr().IsLinkLocalUnicast() })
}

// dropAddrs deletes the link's addresses but those keep says to keep.
func (r *Router) dropAddrs(l *dataplane.Link, keep func(netip.Prefix) bool) {
	for _, a := range l.Addrs() {
		if keep(a) {
			continue
		}
		if _, err := r.Links.DelAddr(l, a); err == nil {
			delete(r.addrMetrics, addrKey{l.Index, a.Addr()})
			r.tell(AddrDeleted, l, a)
		}
	}
}

// setIPv6 turns IPv6 on or off on a link (disable_ipv6): off takes its
// routes and all its addresses away, as addrconf_ifdown; on brings back
// what a link coming up brings, its link-local address.
func (r *Router) setIPv6(l *dataplane.Link, on bool) {
	if l.IPv6Enabled() == on {
		return
	}
	l.SetIPv6(on)
	if on {
		if l.Up() {
			r.linkChanged(l, fib6.LinkUp)
			_ = r.addLinkLocal(l) // a link-local already there is the user's
		}
		return
	}
	r.linkChanged(l, fib6.LinkDown)
	r.dropAddrs(l, func(netip.Prefix) bool { return false })
}

// SetMTU changes a link's MTU (and its port's far side's).
func (r *Router) SetMTU(l *dataplane.Link, mtu int) error {
	if err := dataplane.CheckMTUOf(l, mtu); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := checkVLANMTU(l, mtu); err != nil {
		return err
	}
	if err := l.PortSetMTU(mtu); err != nil {
		return err
	}
	if err := r.Links.SetMTU(l, mtu); err != nil {
		return err
	}
	delete(r.mtuFromIface, l)
	r.tell(LinkChanged, l, netip.Prefix{})
	r.lowerVLANMTU(l, mtu)
	return nil
}

// DeleteLink takes a link down (its routes and addresses go) and away,
// its VLAN links first. The loopback cannot go, as in Linux.
func (r *Router) DeleteLink(l *dataplane.Link) error {
	if l.Hardware().Flags()&port.FlagLoopback != 0 {
		return syscall.EOPNOTSUPP
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deleteLink(l)
}

// deleteLink is DeleteLink with r.mu held.
func (r *Router) deleteLink(l *dataplane.Link) error {
	r.releaseMembers(l)
	for _, c := range r.Links.VLANs(l) {
		if err := r.deleteLink(c); err != nil {
			return err
		}
	}
	if err := r.setUp(l, false); err != nil {
		return err
	}
	r.dropAddrs(l, func(netip.Prefix) bool { return false }) // those kept going down
	if l.IsVRF() {
		r.dropKernelVRF(l)
	}
	r.Links.SetMaster(l, nil)
	r.linkChanged(l, fib6.LinkGone)
	r.forgetGateways(l)
	r.sysctlLinkGone(l)
	delete(r.mtuFromIface, l)
	err := r.DP.Remove(l)
	r.publishMirrors()
	r.Rules.Relink() // rules naming it are detached
	r.tell(LinkDeleted, l, netip.Prefix{})
	return err
}

func (r *Router) linkChanged(l *dataplane.Link, ev fib6.LinkEvent) {
	for _, t := range r.Tables.All() {
		x := t.Begin()
		if ev != fib6.LinkUp && r.sys.skipNotify != 0 {
			x.Untold()
		}
		x.LinkChanged(l.Index, ev)
		x.Commit()
	}
}

// DeleteNexthop deletes nexthop object id: from the groups that contain
// it (a group left empty goes too), and every route through what went.
func (r *Router) DeleteNexthop(id uint32) error {
	removed, err := r.Nexthops.Delete(id)
	r.dropRoutesOf(removed)
	return err
}

// FlushNexthops deletes the nexthop objects sel selects, groups first as
// Linux does, and the routes through them; it returns how many sel
// selected.
func (r *Router) FlushNexthops(sel func(*nexthop.Version) bool) int {
	groups, n := r.Nexthops.Flush(func(v *nexthop.Version) bool { return v.IsGroup() && sel(v) })
	singles, m := r.Nexthops.Flush(func(v *nexthop.Version) bool { return !v.IsGroup() && sel(v) })
	r.dropRoutesOf(append(groups, singles...))
	return n + m
}

// dropRoutesOf deletes the routes through nexthop objects the registry
// removed. A route add checks, inside its table's transaction, that its
// object is alive; the objects are marked dead before this walk takes
// each table's lock, so no route through them survives it (DESIGN.md,
// rule 4).
func (r *Router) dropRoutesOf(removed []*nexthop.Object) {
	if len(removed) == 0 {
		return
	}
	gone := make(map[*nexthop.Object]bool, len(removed))
	for _, o := range removed {
		gone[o] = true
	}
	for _, t := range r.Tables.All() {
		x := t.Begin()
		x.DeleteUsing(func(o *nexthop.Object) bool { return gone[o] })
		x.Commit()
	}
}

// nexthopUpkeep is how often resilient groups are rebalanced and the
// clock their buckets are stamped with advances.
const nexthopUpkeep = 100 * time.Millisecond

// Start runs the router's housekeeping (route expiry, resilient groups,
// the host links' carrier) until Close.
func (r *Router) Start() {
	r.stop = make(chan struct{})
	r.done.Add(4)
	go func() {
		defer r.done.Done()
		r.routineGateways(r.stop)
	}()
	go func() {
		defer r.done.Done()
		r.routineCarrier(r.stop)
	}()
	go func() {
		defer r.done.Done()
		r.routineExpire(r.stop)
	}()
	go func() {
		defer r.done.Done()
		tick := time.NewTicker(nexthopUpkeep)
		defer tick.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-tick.C:
				r.Nexthops.Upkeep()
			}
		}
	}()
}

// Close stops the housekeeping.
func (r *Router) Close() {
	if r.stop != nil {
		close(r.stop)
		r.done.Wait()
		r.stop = nil
	}
}

// expireEvery is how often routes are checked for expiry, and expireRetry
// how soon a table that was busy is tried again.
const (
	expireEvery = time.Second
	expireRetry = 10 * time.Millisecond
)
