// Package port owns what a link is made of below IPv6: the kernel devices
// and sockets the router reads and writes, each behind the Port interface
// (what a link does) and Hardware (what it is, as `ip link` shows it):
// TUN (tun.go), TAP and AF_PACKET frames (tap.go, afpacket.go, frames.go)
// with their VLAN tags (vlan.go), a host link's hold on an interface by
// name that waits while there is none (host.go), and the kernel's IPv6
// switched off on an interface the router takes (ipv6switch.go), a
// mirror's kernel TUN (mirror.go), the loopback and
// dummy links, a VRF device (vrf.go: no I/O of its own, its table), a
// TUN's, a TAP's and a host link's devices on paper, with no kernel side
// (paper.go), and the virtio-net header every buffer begins with (vnet.go).
//
// It is called port because that is what the packet path sees of a link:
// a port it reads batches from and writes batches to, as wireguard-go
// keeps tun/ apart from device/. It knows nothing of routes, neighbours or
// ICMPv6; package dataplane frames Ethernet for its neighbours and runs
// the packet path over ports.
package port

import (
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Port is what a link does: it reads and writes batches of packets. Each
// kind of link implements it (TUN here; TAP and AF_PACKET ports come with
// Ethernet links); the packet path sees nothing else of the kind.
//
// A packet in a buffer is a 10-byte virtio_net_hdr (zeros from a port
// without one) followed by the IPv6 packet; a GSO super-packet is one such
// packet.
type Port interface {
	// Queues is how many queues the port reads; one worker reads each.
	Queues() int
	// ReadBatch waits for packets on queue q and reads at least one and at
	// most len(bufs), into bufs, setting sizes. os.ErrClosed ends the queue.
	ReadBatch(q int, bufs [][]byte, sizes []int) (int, error)
	// WriteBatch writes pkts in order on queue q (modulo Queues) and
	// returns how many it wrote before the first that failed, and why.
	// via[i] is the neighbour packet i goes to (its gateway, or its
	// destination when that is on the link), which a link with neighbours
	// resolves and a point-to-point link ignores.
	WriteBatch(q int, pkts [][]byte, via []netip.Addr) (int, error)
	// Offloads says what the port takes as it is.
	Offloads() Offloads
	// SetMTU and SetUp tell the port's far side (a TUN's kernel end) the
	// link's MTU and state.
	SetMTU(mtu int) error
	SetUp(up bool) error
	// Close ends the port's I/O; its readers see os.ErrClosed.
	Close() error
}

// closing closes a port that failed to open, after err, and says both.
func closing(c io.Closer, err error) error { return errors.Join(err, c.Close()) }

// Offloads are what a port takes whole instead of one plain packet at a
// time: super-packets of each kind, and packets whose transport checksum
// is left to be done.
type Offloads struct {
	TCP         bool // TCP super-packets (VIRTIO_NET_HDR_GSO_TCPV6)
	UDP         bool // UDP super-packets (USO, VIRTIO_NET_HDR_GSO_UDP_L4)
	PartialCsum bool // NEEDS_CSUM packets: the port has a virtio_net_hdr
}

// Takes reports whether the port accepts a packet with this virtio header
// as it is.
func (o Offloads) Takes(h *VnetHdr) bool {
	if h.Flags&NeedsCsum != 0 && !o.PartialCsum {
		return false
	}
	switch h.GSOType {
	case unix.VIRTIO_NET_HDR_GSO_NONE:
		return true
	case unix.VIRTIO_NET_HDR_GSO_TCPV6, unix.VIRTIO_NET_HDR_GSO_TCPV4:
		return o.TCP
	case unix.VIRTIO_NET_HDR_GSO_UDP_L4:
		return o.UDP
	}
	return false
}

// Hardware is what a link is, as `ip link` shows it.
type Hardware interface {
	// Kind is the link's type as `link add NAME type KIND` names it.
	Kind() string
	// Flags are the interface flags the kind has (UP and LOWER_UP come
	// from the link's state).
	Flags() Flags
	// LinkType is the ARPHRD name `ip link` prints: none, ether, loopback.
	LinkType() string
	// HardwareAddr and Broadcast are the link-layer addresses; nil for a
	// link without them (a TUN).
	HardwareAddr() net.HardwareAddr
	Broadcast() net.HardwareAddr
	// TxQueueLen is the qlen `ip link` shows.
	TxQueueLen() int
}

// Specifier is a device that can say how it was made: the words after
// `link add NAME type KIND` that make it again (a saved configuration
// writes them). A device without options need not be one.
type Specifier interface {
	Spec() []string
}

// Device is a kind of link's implementation: what it does and what it is.
type Device interface {
	Port
	Hardware
}

// Flags are interface flags, Linux's IFF_* bits.
type Flags uint32

const (
	FlagUp           Flags = unix.IFF_UP
	FlagBroadcast    Flags = unix.IFF_BROADCAST
	FlagLoopback     Flags = unix.IFF_LOOPBACK
	FlagPointToPoint Flags = unix.IFF_POINTOPOINT
	FlagNoARP        Flags = unix.IFF_NOARP
	FlagMulticast    Flags = unix.IFF_MULTICAST
	FlagLowerUp      Flags = unix.IFF_LOWER_UP
	FlagMaster       Flags = unix.IFF_MASTER
)

// flagNames are the flags in the order iproute2 prints them.
var flagNames = []struct {
	f    Flags
	name string
}{
	{FlagLoopback, "LOOPBACK"}, {FlagBroadcast, "BROADCAST"}, {FlagPointToPoint, "POINTOPOINT"},
	{FlagMulticast, "MULTICAST"}, {FlagNoARP, "NOARP"}, {FlagMaster, "MASTER"}, {FlagUp, "UP"}, {FlagLowerUp, "LOWER_UP"},
}

// Names are the flags as `ip link` prints them, in its order.
func (f Flags) Names() []string {
	var out []string
	for _, n := range flagNames {
		if f&n.f != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// errLoopback: the router does not route packets out of its loopback.
var errLoopback = errors.New("no way out through the loopback")

// Loopback is the link "lo" every Linux host has: the router's own
// addresses live on it, nothing leaves by it.
type Loopback struct{}

func (Loopback) Queues() int                                                  { return 0 }
func (Loopback) ReadBatch(int, [][]byte, []int) (int, error)                  { return 0, errors.ErrUnsupported }
func (Loopback) WriteBatch(_ int, pkts [][]byte, _ []netip.Addr) (int, error) { return 0, errLoopback }
func (Loopback) Offloads() Offloads                                           { return Offloads{} }
func (Loopback) SetMTU(int) error                                             { return nil }
func (Loopback) SetUp(bool) error                                             { return nil }
func (Loopback) Close() error                                                 { return nil }
func (Loopback) Kind() string                                                 { return "loopback" }
func (Loopback) Flags() Flags                                                 { return FlagLoopback }
func (Loopback) LinkType() string                                             { return "loopback" }
func (Loopback) HardwareAddr() net.HardwareAddr                               { return make(net.HardwareAddr, 6) }
func (Loopback) Broadcast() net.HardwareAddr                                  { return make(net.HardwareAddr, 6) }
func (Loopback) TxQueueLen() int                                              { return 1000 }

// dummy is Linux's dummy link: it takes everything and drops it (counted
// as sent, as Linux's dummy counts it).
type dummy struct{ mac net.HardwareAddr }

// NewDummy makes a dummy link's device, with a random locally
// administered MAC.
func NewDummy() Device { return NewDummyMAC(nil) }

// NewDummyMAC is a dummy with this MAC (nil: a random one, as Linux's).
func NewDummyMAC(mac net.HardwareAddr) Device {
	if len(mac) != 6 {
		mac = make(net.HardwareAddr, 6)
		rand.Read(mac)
		mac[0] = mac[0]&^1 | 2 // unicast, locally administered
	}
	return &dummy{mac: mac}
}

func (*dummy) Queues() int                                                  { return 0 }
func (*dummy) ReadBatch(int, [][]byte, []int) (int, error)                  { return 0, errors.ErrUnsupported }
func (*dummy) WriteBatch(_ int, pkts [][]byte, _ []netip.Addr) (int, error) { return len(pkts), nil }
func (*dummy) Offloads() Offloads                                           { return Offloads{TCP: true, UDP: true, PartialCsum: true} }
func (*dummy) SetMTU(int) error                                             { return nil }
func (*dummy) SetUp(bool) error                                             { return nil }
func (*dummy) Close() error                                                 { return nil }
func (*dummy) Kind() string                                                 { return "dummy" }
func (*dummy) Flags() Flags                                                 { return FlagBroadcast | FlagNoARP }
func (*dummy) LinkType() string                                             { return "ether" }
func (d *dummy) HardwareAddr() net.HardwareAddr                             { return d.mac }
func (*dummy) Broadcast() net.HardwareAddr {
	return net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
}
func (*dummy) TxQueueLen() int { return 1000 }
