package port

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// TUNOptions are what `link add NAME type tun` takes.
type TUNOptions struct {
	MTU    int
	Queues int    // one worker per queue
	Netns  string // move the kernel side into this namespace (ip netns name)
	// NoGSO opens the TUN without a virtio_net_hdr: no offloads, so
	// super-packets routed to it are segmented (and checksums completed).
	NoGSO bool
}

// TUN is a TUN link's device: one file per queue, read through Go's
// netpoller, written with write(2).
//
// The project keeps its own TUN code rather than wireguard/tun because
// wireguard/tun's Linux Read splits each GSO super-packet into its
// segments and its Write coalesces packets into super-packets (its
// offload handling is unexported and tied to both): a router forwarding
// super-packets whole, to whatever the egress takes, must do neither.
// Measured in the forwarding lab (../shared/bench/forwarding, FW_LINK=tun,
// 3 rounds, 2026-12-01): wgfwd, a zero-logic forwarder on wireguard/tun,
// cut each super-packet into 8.4 packets and moved 0.59x the kernel's
// single TCP stream and 0.35x its four; urouter, forwarding them whole,
// 0.75x and 0.47x in the same run. (wireguard/tun's CreateUnmonitoredTUNFromFD starts no goroutines, so
// they are not the reason.) The queues are opened by vishvananda/netlink's
// Tuntap, already a dependency for the rest of the link's netlink.
type TUN struct {
	name   string
	files  []*os.File
	queues []*tunQueue
	vnet   bool // every read and write carries a virtio_net_hdr
	uso    bool // the kernel took the UDP segmentation offload
	opts   TUNOptions
	closeFlag
}

// tunQueue is one queue's file and its reader's state.
type tunQueue struct {
	rc syscall.RawConn
	fd int
	// the reader's batch in progress (one reader per queue)
	vnet   bool
	bufs   [][]byte
	sizes  []int
	n      int
	err    error
	readFn func(fd uintptr) bool
	// single: traffic is sparse, so hand over each packet as soon as it is
	// read rather than pay one more read (EAGAIN) to learn the batch has
	// ended: ~7 µs per hop of ping RTT here. calls counts the callbacks of
	// one Read; a packet already waiting at the first one means traffic is
	// dense.
	single bool
	calls  int
}

const (
	tunTCPOffloads = unix.TUN_F_CSUM | unix.TUN_F_TSO4 | unix.TUN_F_TSO6
	tunUDPOffloads = unix.TUN_F_USO4 | unix.TUN_F_USO6
)

// OpenTUN creates TUN device name with its queues: IFF_TUN|IFF_NO_PI,
// IFF_VNET_HDR with TSO (and USO where the kernel has it) unless o.NoGSO,
// not persistent (it goes when the router closes it), non-blocking for
// Go's netpoller; then its MTU, and its move to o.Netns.
func OpenTUN(name string, o TUNOptions) (Device, error) {
	t := &TUN{name: name, vnet: !o.NoGSO, opts: o}
	flags := netlink.TUNTAP_NO_PI
	if t.vnet {
		flags |= netlink.TUNTAP_VNET_HDR
	}
	if o.Queues > 1 {
		flags |= netlink.TUNTAP_MULTI_QUEUE
	}
	tt := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: name}, Mode: netlink.TUNTAP_MODE_TUN,
		Flags: flags, Queues: max(o.Queues, 1), NonPersist: true}
	if err := netlink.LinkAdd(tt); err != nil {
		return nil, fmt.Errorf("TUN %s: %w", name, err)
	}
	t.files = tt.Fds
	for _, f := range t.files {
		rc, err := f.SyscallConn()
		if err != nil {
			return nil, closing(t, err)
		}
		q := &tunQueue{rc: rc, vnet: t.vnet, single: true}
		if err := rc.Control(func(fd uintptr) { q.fd = int(fd) }); err != nil {
			return nil, closing(t, err)
		}
		q.readFn = q.read
		t.queues = append(t.queues, q)
	}
	if t.vnet {
		if err := unix.IoctlSetInt(t.queues[0].fd, unix.TUNSETOFFLOAD, tunTCPOffloads); err != nil {
			return nil, closing(t, fmt.Errorf("TUNSETOFFLOAD %s: %w", name, err))
		}
		// USO came with Linux 6.2
		t.uso = unix.IoctlSetInt(t.queues[0].fd, unix.TUNSETOFFLOAD, tunTCPOffloads|tunUDPOffloads) == nil
	}
	if err := t.SetMTU(o.MTU); err != nil {
		return nil, closing(t, err)
	}
	if o.Netns != "" {
		if err := moveToNetns(name, o.Netns); err != nil {
			return nil, closing(t, err)
		}
	}
	return t, nil
}

func (t *TUN) Queues() int { return len(t.queues) }

// ReadBatch reads packets until the queue is empty or the batch full (in
// single mode: one), waiting in the netpoller while there are none.
func (t *TUN) ReadBatch(q int, bufs [][]byte, sizes []int) (int, error) {
	tq := t.queues[q]
	tq.bufs, tq.sizes, tq.n, tq.err, tq.calls = bufs, sizes, 0, nil, 0
	err := tq.rc.Read(tq.readFn)
	tq.bufs, tq.sizes = nil, nil
	if tq.n == 1 {
		tq.single = true
	}
	if err == nil {
		err = tq.err
	}
	return tq.n, t.readErr(err)
}

// read is the netpoller callback: it reads until the queue is empty or the
// batch full, and asks to be called again (once the fd is readable) only
// when it read nothing.
func (q *tunQueue) read(fd uintptr) bool {
	off := 0
	if !q.vnet {
		off = VnetHdrLen // keep the header's room; it reads as zeros
	}
	q.calls++
	for q.n < len(q.bufs) {
		if q.single && q.n == 1 {
			if q.calls == 1 {
				q.single = false // a packet was already queued: dense
			} else {
				return true
			}
		}
		b := q.bufs[q.n]
		n, err := unix.Read(int(fd), b[off:])
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return q.n > 0
		}
		if err != nil {
			q.err = err
			return true
		}
		if off > 0 {
			clear(b[:off])
		}
		q.sizes[q.n] = off + n
		q.n++
	}
	return true
}

// WriteBatch writes each packet with one write(2), without its
// virtio_net_hdr when the device has none.
func (t *TUN) WriteBatch(q int, pkts [][]byte, _ []netip.Addr) (int, error) {
	fd := t.queues[q%len(t.queues)].fd
	for i, b := range pkts {
		if !t.vnet {
			b = b[VnetHdrLen:]
		}
		for {
			_, err := unix.Write(fd, b)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return i, err
			}
			break
		}
	}
	return len(pkts), nil
}

func (t *TUN) Offloads() Offloads {
	return Offloads{TCP: t.vnet, UDP: t.vnet && t.uso, PartialCsum: t.vnet}
}

// kernelSide is a TUN or TAP device as the kernel of the router's
// namespace has it, by name; once it moved elsewhere (`netns`, or a lab
// moving it) its state is the other side's business.
type kernelSide string

func (k kernelSide) link() netlink.Link {
	l, err := netlink.LinkByName(string(k))
	if err != nil || l.Type() != "tuntap" {
		return nil
	}
	return l
}

// setMTU sets the kernel side's MTU while it is in the router's namespace.
func (k kernelSide) setMTU(mtu int) error {
	if l := k.link(); l != nil && l.Attrs().MTU != mtu {
		return netlink.LinkSetMTU(l, mtu)
	}
	return nil
}

// setUp brings the kernel side up or down while it is in the router's
// namespace (the forwarding lab waits for that).
func (k kernelSide) setUp(up bool) error {
	l := k.link()
	switch {
	case l == nil:
		return nil
	case up:
		return netlink.LinkSetUp(l)
	}
	return netlink.LinkSetDown(l)
}

// closeFiles closes a device's queues.
func closeFiles(files []*os.File) error {
	var errs []error
	for _, f := range files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

func (t *TUN) SetMTU(mtu int) error { return kernelSide(t.name).setMTU(mtu) }
func (t *TUN) SetUp(up bool) error  { return kernelSide(t.name).setUp(up) }

func (t *TUN) Close() error {
	t.markClosed()
	err := closeFiles(t.files)
	t.files = nil
	return err
}

func (*TUN) Kind() string { return "tun" }

// Spec says the TUN's options but its MTU, which is the link's.
func (t *TUN) Spec() []string { return specOf(t.opts.Queues, t.opts.Netns, t.opts.NoGSO) }

// specOf is the words of a TUN's or TAP's options that are not their defaults.
func specOf(queues int, netns string, noGSO bool) []string {
	var w []string
	if queues > 1 {
		w = append(w, "queues", strconv.Itoa(queues))
	}
	if netns != "" {
		w = append(w, "netns", netns)
	}
	if noGSO {
		w = append(w, "gso", "off")
	}
	return w
}
func (*TUN) Flags() Flags                   { return FlagPointToPoint | FlagMulticast | FlagNoARP }
func (*TUN) LinkType() string               { return "none" }
func (*TUN) HardwareAddr() net.HardwareAddr { return nil }
func (*TUN) Broadcast() net.HardwareAddr    { return nil }
func (*TUN) TxQueueLen() int                { return 500 }

// moveToNetns moves link name into network namespace ns (as `ip link set
// NAME netns NS`); the router keeps its descriptors, which go on working.
func moveToNetns(name, ns string) error {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return fmt.Errorf("netns %s: %w", ns, err)
	}
	defer func() { _ = h.Close() }() // a handle only read: closing it cannot lose anything
	l, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	return netlink.LinkSetNsFd(l, int(h))
}
