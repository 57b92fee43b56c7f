// Package dataplane owns the router's links (loopback, dummy, TUN) and the
// packet path between them: reading batches, parsing, routing, ICMPv6
// errors, local delivery, counters.
//
// Packet workers never lock: they read links, tables and addresses through
// atomic pointers. Link changes (add, delete, up, down, addresses) take the
// registry's own mutex and publish a new snapshot.
package dataplane

import (
	"crypto/rand"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
)

// Kind is what a link is made of.
type Kind uint8

const (
	Loopback Kind = iota + 1
	// Dummy accepts everything and drops it, as Linux's dummy does.
	Dummy
	TUN
)

func (k Kind) String() string {
	switch k {
	case Loopback:
		return "loopback"
	case Dummy:
		return "dummy"
	case TUN:
		return "tun"
	}
	return "unknown"
}

// Link is one of the router's interfaces.
type Link struct {
	Index int32
	Name  string
	Kind  Kind
	MAC   net.HardwareAddr // nil for links without one (loopback, TUN)

	mtu      atomic.Uint32
	up       atomic.Bool
	addrs    atomic.Pointer[[]netip.Prefix] // the router's addresses, with prefix length
	counters atomic.Pointer[[]*Counters]    // one per worker that touches the link
	dev      atomic.Pointer[tunDev]         // a TUN link's device; nil once removed
}

// MTU is the link's MTU.
func (l *Link) MTU() int { return int(l.mtu.Load()) }

// Up reports whether the link is administratively up.
func (l *Link) Up() bool { return l.up.Load() }

// Addrs returns the router's addresses on the link, oldest first. The
// slice is shared: do not change it.
func (l *Link) Addrs() []netip.Prefix {
	if p := l.addrs.Load(); p != nil {
		return *p
	}
	return nil
}

// Errors of link changes, worded as Linux words them.
var (
	ErrLinkExists = errors.New("File exists")
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
	watch func(l *Link, event string)
}

type linkSnap struct {
	byIndex []*Link // index -> link; holes are nil
	byName  map[string]*Link
}

// NewLinks returns a registry holding the loopback link "lo" (index 1),
// up, as every Linux host has one. watch, if not nil, hears every change.
func NewLinks(watch func(l *Link, event string)) *Links {
	ls := &Links{next: 1, watch: watch}
	ls.snap.Store(&linkSnap{byName: map[string]*Link{}})
	lo, _ := ls.Add("lo", Loopback, 65536)
	lo.up.Store(true)
	return ls
}

// ByName returns the link called name, or nil.
func (ls *Links) ByName(name string) *Link { return ls.snap.Load().byName[name] }

// ByIndex returns link i, or nil.
func (ls *Links) ByIndex(i int32) *Link {
	s := ls.snap.Load()
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

// Add creates a link, down, with the given MTU.
func (ls *Links) Add(name string, kind Kind, mtu int) (*Link, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	old := ls.snap.Load()
	if old.byName[name] != nil {
		return nil, ErrLinkExists
	}
	l := &Link{Index: ls.next, Name: name, Kind: kind}
	ls.next++
	l.mtu.Store(uint32(mtu))
	if kind == Dummy {
		l.MAC = make(net.HardwareAddr, 6)
		rand.Read(l.MAC)
		l.MAC[0] = l.MAC[0]&^1 | 2 // unicast, locally administered
	}
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
	ls.notify(l, "add")
	return l, nil
}

// Delete removes a link.
func (ls *Links) Delete(l *Link) {
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
	ls.notify(l, "del")
}

// SetUp sets the link administratively up or down.
func (ls *Links) SetUp(l *Link, up bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l.up.Swap(up) != up {
		ls.notify(l, "set")
	}
}

// SetMTU changes the link's MTU; IPv6 needs at least MinMTU.
func (ls *Links) SetMTU(l *Link, mtu int) error {
	if mtu < MinMTU {
		return ErrMTU
	}
	if mtu > 65535 {
		return ErrMTUMax
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l.mtu.Store(uint32(mtu))
	ls.notify(l, "set")
	return nil
}

// AddAddr gives the router address a (with its prefix length) on l.
func (ls *Links) AddAddr(l *Link, a netip.Prefix) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	cur := l.Addrs()
	if slices.ContainsFunc(cur, func(p netip.Prefix) bool { return p.Addr() == a.Addr() }) {
		return ErrAddrExists
	}
	next := append(slices.Clone(cur), a)
	l.addrs.Store(&next)
	return nil
}

// DelAddr removes address a from l; a's prefix length must match, if
// given (not 128 by default as in `ip addr del ADDR`).
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
	l.addrs.Store(&next)
	return removed, nil
}

func (ls *Links) notify(l *Link, event string) {
	if ls.watch != nil {
		ls.watch(l, event)
	}
}
