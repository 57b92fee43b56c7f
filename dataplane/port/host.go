package port

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Host is a host link's hold on an interface known by name: the AF_PACKET
// socket of the interface of that name while there is one (attached), and
// none while there is not (waiting). containerlab starts a container first
// and moves its interfaces in after; a neighbour container's restart
// deletes a veth and makes a new one of the same name: the link waits
// through both, keeping what it asked of the interface (the multicast
// groups, every multicast, a MAC not the interface's) to ask the next one.
//
// Who attaches and detaches it is the router, told by the kernel's link
// notifications; the packet path only loads the socket (one atomic load a
// batch). A reader of a link that waits parks until it is attached.
type Host struct {
	dev string
	cur atomic.Pointer[AFPacket] // nil while waiting

	mu       sync.Mutex
	wake     chan struct{}      // closed while it is attached, and once it is closed
	groups   []net.HardwareAddr // joined (Join), in order
	allMulti bool
	tags     bool          // the socket reads VLAN tags (ReadTags)
	others   []*HostOthers // the sockets of other ethertypes open on it
	closeFlag
}

// ErrNoDevice is what Attach's error is when no interface has the name.
var ErrNoDevice = errors.New("no such device")

// noDevice is OpenAFPacket's error for a name no interface has, worded as
// ip words it.
type noDevice string

func (d noDevice) Error() string   { return fmt.Sprintf("Cannot find device %q", string(d)) }
func (noDevice) Is(err error) bool { return err == ErrNoDevice }

// NewHost returns a Host for interface dev, waiting.
func NewHost(dev string) *Host { return &Host{dev: dev, wake: make(chan struct{})} }

// Attach opens the socket on the interface called dev now, asks it again
// what the link asked of the one before, and publishes it. mac is the
// router's MAC on the link (nil: the interface's own). Another than the
// interface's is given the interface when give says so (the kernel's `ip
// link set DEV address`), so the link keeps its MAC from one interface to
// the next; else, or if the interface refuses it, the socket is
// promiscuous (a NIC filters other MACs). It returns the interface, its
// MAC as it is now; ErrNoDevice if there is none of that name.
func (h *Host) Attach(mac net.HardwareAddr, give bool) (*net.Interface, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed.Load() {
		return nil, os.ErrClosed
	}
	if h.cur.Load() != nil {
		return nil, errors.New("attached already")
	}
	a, ifi, err := OpenAFPacket(h.dev)
	if err != nil {
		return nil, err
	}
	if err := h.renew(a, ifi, mac, give); err != nil {
		return nil, errors.Join(err, a.Close())
	}
	h.cur.Store(a)
	close(h.wake)
	return ifi, nil
}

// renew asks new socket a what the link asked of the interface before.
func (h *Host) renew(a *AFPacket, ifi *net.Interface, mac net.HardwareAddr, give bool) error {
	if mac != nil && !bytes.Equal(mac, ifi.HardwareAddr) && give {
		if err := netlink.LinkSetHardwareAddr(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: ifi.Index}}, mac); err != nil {
			log.Printf("port: %s refused the link's MAC %v (%v): its socket is promiscuous", h.dev, mac, err)
		} else {
			ifi.HardwareAddr = slices.Clone(mac)
		}
	}
	if mac != nil && !bytes.Equal(mac, ifi.HardwareAddr) {
		if err := a.Promisc(); err != nil {
			return fmt.Errorf("PACKET_MR_PROMISC %s: %w", h.dev, err)
		}
	}
	for _, g := range h.groups {
		if err := a.Join(g, true); err != nil {
			return fmt.Errorf("PACKET_ADD_MEMBERSHIP %s %v: %w", h.dev, g, err)
		}
	}
	if h.allMulti {
		if err := a.AllMulti(true); err != nil {
			return fmt.Errorf("PACKET_MR_ALLMULTI %s: %w", h.dev, err)
		}
	}
	if h.tags {
		if err := a.ReadTags(); err != nil {
			return fmt.Errorf("VLAN tags %s: %w", h.dev, err)
		}
	}
	var errs []error
	for i, o := range h.others {
		s, err := a.OpenOthers(o.mac)
		if err != nil {
			for _, p := range h.others[:i] {
				errs = append(errs, p.cur.Swap(nil).Close())
			}
			return errors.Join(append(errs, err)...)
		}
		o.cur.Store(s)
	}
	return nil
}

// Detach unpublishes the socket and returns it, for the caller to close
// once nothing uses it (the packet path's writers; its reader ends at the
// close and waits for the next one); nil if it was waiting. The sockets of
// other ethertypes close now: their readers wait too.
func (h *Host) Detach() *AFPacket {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.cur.Swap(nil)
	if a == nil {
		return nil
	}
	h.wake = make(chan struct{})
	for _, o := range h.others {
		if s := o.cur.Swap(nil); s != nil {
			_ = s.Close() // its reader sees the close and waits; nothing else uses it
		}
	}
	return a
}

// waitAttached returns the socket, waiting while there is none; nil once
// the Host is closed, or stop is.
func (h *Host) waitAttached(stop <-chan struct{}) *AFPacket {
	for {
		if a := h.cur.Load(); a != nil || h.closed.Load() {
			return a
		}
		h.mu.Lock()
		wake := h.wake
		h.mu.Unlock()
		if a := h.cur.Load(); a != nil {
			return a
		}
		select {
		case <-wake:
		case <-stop:
			return nil
		}
	}
}

// Attached reports whether the link has its interface.
func (h *Host) Attached() bool { return h.cur.Load() != nil }

// Dev is the name of the interface the link is on or waits for.
func (h *Host) Dev() string { return h.dev }

// Spec names the interface.
func (h *Host) Spec() []string { return []string{"dev", h.dev} }

// Ifindex is the index of the interface attached, 0 while waiting.
func (h *Host) Ifindex() int {
	if a := h.cur.Load(); a != nil {
		return a.Ifindex()
	}
	return 0
}

// Carrier reports whether the interface attached has its carrier; one
// waited for has none.
func (h *Host) Carrier() bool {
	a := h.cur.Load()
	return a != nil && a.Carrier()
}

// InterfaceMAC is the attached interface's MAC, nil while waiting.
func (h *Host) InterfaceMAC() net.HardwareAddr {
	if a := h.cur.Load(); a != nil {
		return a.InterfaceMAC()
	}
	return nil
}

func (*Host) Queues() int        { return 1 }
func (*Host) Offloads() Offloads { return (*AFPacket)(nil).Offloads() }

// ReadFrames reads from the interface attached; while there is none it
// waits for one. os.ErrClosed once the Host is closed.
func (h *Host) ReadFrames(q int, bufs [][]byte, hdrs []EthHdr, tags []VLANTag, sizes []int) (int, error) {
	for {
		a := h.waitAttached(nil)
		if a == nil {
			return 0, os.ErrClosed
		}
		n, err := a.ReadFrames(q, bufs, hdrs, tags, sizes)
		if errors.Is(err, os.ErrClosed) && !h.closed.Load() {
			continue // detached: the next interface's
		}
		return n, err
	}
}

// WriteFrames writes to the interface attached; while waiting the frames
// are lost (ENETDOWN), as to a NIC without its cable.
func (h *Host) WriteFrames(hdrs []EthHdr, pkts [][]byte) (int, error) {
	return h.WriteTagged(nil, hdrs, pkts)
}

// WriteTagged is WriteFrames with VLAN tags.
func (h *Host) WriteTagged(tags []byte, hdrs []EthHdr, pkts [][]byte) (int, error) {
	a := h.cur.Load()
	if a == nil {
		return 0, unix.ENETDOWN
	}
	return a.WriteTagged(tags, hdrs, pkts)
}

// Join adds or drops multicast MAC mac on the interface, and remembers it
// for the next one.
func (h *Host) Join(mac net.HardwareAddr, on bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a := h.cur.Load(); a != nil {
		if err := a.Join(mac, on); err != nil {
			return err
		}
	}
	i := slices.IndexFunc(h.groups, func(g net.HardwareAddr) bool { return bytes.Equal(g, mac) })
	switch {
	case on && i < 0:
		h.groups = append(h.groups, slices.Clone(mac))
	case !on && i >= 0:
		h.groups = slices.Delete(h.groups, i, i+1)
	}
	return nil
}

// AllMulti takes (or stops taking) every multicast frame, now and on the
// next interface.
func (h *Host) AllMulti(on bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a := h.cur.Load(); a != nil {
		if err := a.AllMulti(on); err != nil {
			return err
		}
	}
	h.allMulti = on
	return nil
}

// ReadTags makes the socket read each frame's VLAN tag, now and on the
// next interface: the link has VLAN links.
func (h *Host) ReadTags() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a := h.cur.Load(); a != nil {
		if err := a.ReadTags(); err != nil {
			return err
		}
	}
	h.tags = true
	return nil
}

// Drops are the frames the attached socket's queue had no room for.
func (h *Host) Drops() uint64 {
	if a := h.cur.Load(); a != nil {
		return a.Drops()
	}
	return 0
}

// SetMTU and SetUp act on the interface attached; the router gives the
// next one the link's when it attaches.
func (h *Host) SetMTU(mtu int) error {
	if a := h.cur.Load(); a != nil {
		return a.SetMTU(mtu)
	}
	return nil
}

func (h *Host) SetUp(up bool) error {
	if a := h.cur.Load(); a != nil {
		return a.SetUp(up)
	}
	return nil
}

// Close closes the socket, if any, and ends the readers; the caller knows
// nothing writes to it any more.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed.Swap(true) {
		return nil
	}
	a := h.cur.Swap(nil)
	if a == nil {
		close(h.wake) // an attached Host's is closed already
		return nil
	}
	return a.Close()
}

// HostOthers is a Host's socket of other ethertypes (Others), opened
// again on each interface it attaches to.
type HostOthers struct {
	h    *Host
	mac  net.HardwareAddr
	cur  atomic.Pointer[Others]
	stop chan struct{}
	closeFlag
}

// OpenOthers opens the socket of other ethertypes for a router whose MAC
// is mac, on this interface and the next.
func (h *Host) OpenOthers(mac net.HardwareAddr) (*HostOthers, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o := &HostOthers{h: h, mac: slices.Clone(mac), stop: make(chan struct{})}
	if a := h.cur.Load(); a != nil {
		s, err := a.OpenOthers(mac)
		if err != nil {
			return nil, err
		}
		o.cur.Store(s)
	}
	h.others = append(h.others, o)
	return o, nil
}

// Read reads one frame into b, waiting while the link waits; os.ErrClosed
// once closed.
func (o *HostOthers) Read(b []byte) (int, error) {
	for {
		if o.closed.Load() {
			return 0, os.ErrClosed
		}
		s := o.cur.Load()
		if s == nil {
			if o.h.waitAttached(o.stop) == nil {
				return 0, os.ErrClosed
			}
			continue // Attach gave it its socket before it published its own
		}
		n, err := s.Read(b)
		if errors.Is(err, os.ErrClosed) {
			continue // detached, or closed: the loop tells
		}
		return n, err
	}
}

// Close closes the socket and ends its reader.
func (o *HostOthers) Close() error {
	h := o.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if o.closed.Swap(true) {
		return nil
	}
	close(o.stop)
	h.others = slices.DeleteFunc(h.others, func(p *HostOthers) bool { return p == o })
	if s := o.cur.Swap(nil); s != nil {
		return s.Close()
	}
	return nil
}
