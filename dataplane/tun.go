package dataplane

import (
	"fmt"
	"os"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/tun"
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

// tunDev is a TUN link's kernel device: one file per queue.
type tunDev struct {
	devs   []tun.Device
	queues []*tunQueue
	vnet   bool // every read and write carries a virtio_net_hdr
	uso    bool // UDP GSO (USO) offload enabled
}

type tunQueue struct {
	rc syscall.RawConn
	fd int
}

// openTUN creates TUN device name with its queues, through
// wireguard/tun: IFF_TUN|IFF_NO_PI|IFF_VNET_HDR, TSO (and USO where the
// kernel has it) on each queue's own descriptor, non-blocking for Go's
// netpoller.
func openTUN(name string, o TUNOptions) (*tunDev, error) {
	q := max(o.Queues, 1)
	d := &tunDev{vnet: !o.NoGSO}
	flags := uint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if d.vnet {
		flags |= unix.IFF_VNET_HDR
	}
	if q > 1 {
		flags |= unix.IFF_MULTI_QUEUE
	}
	for i := 0; i < q; i++ {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			d.close()
			return nil, err
		}
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			unix.Close(fd)
			d.close()
			return nil, err
		}
		ifr.SetUint16(flags)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			d.close()
			return nil, fmt.Errorf("TUNSETIFF %s: %w", name, err)
		}
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			d.close()
			return nil, err
		}
		dev, err := tun.CreateTUNFromFile(os.NewFile(uintptr(fd), "/dev/net/tun"), o.MTU)
		if err != nil {
			d.close()
			return nil, err
		}
		d.devs = append(d.devs, dev)
		go func() { // the device's status listeners block unless drained
			for range dev.Events() {
			}
		}()
		f := dev.File()
		rc, err := f.SyscallConn()
		if err != nil {
			d.close()
			return nil, err
		}
		d.queues = append(d.queues, &tunQueue{rc: rc, fd: fd})
		if d.vnet && i == 0 {
			// wireguard/tun enabled TSO, and USO if it could; ask again to
			// know which.
			d.uso = unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD,
				unix.TUN_F_CSUM|unix.TUN_F_TSO4|unix.TUN_F_TSO6|unix.TUN_F_USO4|unix.TUN_F_USO6) == nil
		}
	}
	if o.Netns != "" {
		if err := moveToNetns(name, o.Netns); err != nil {
			d.close()
			return nil, err
		}
	}
	return d, nil
}

func (d *tunDev) close() {
	for _, dev := range d.devs {
		dev.Close()
	}
	d.devs = nil
}

// takesGSO reports whether the device accepts a super-packet of this
// type whole.
func (d *tunDev) takesGSO(gsoType uint8) bool {
	switch gsoType {
	case unix.VIRTIO_NET_HDR_GSO_NONE:
		return true
	case unix.VIRTIO_NET_HDR_GSO_TCPV6, unix.VIRTIO_NET_HDR_GSO_TCPV4:
		return d.vnet
	case unix.VIRTIO_NET_HDR_GSO_UDP_L4:
		return d.vnet && d.uso
	}
	return false
}

// moveToNetns moves link name into network namespace ns (as `ip link set
// NAME netns NS`); the daemon keeps its descriptors, which go on working.
func moveToNetns(name, ns string) error {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return fmt.Errorf("netns %s: %w", ns, err)
	}
	defer h.Close()
	l, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	return netlink.LinkSetNsFd(l, int(h))
}

// setKernelUp and setKernelMTU change the kernel side of a device that is
// still in the daemon's namespace; once moved away it is the other side's
// business, and the errors are not ours to report.
func setKernelUp(name string, up bool) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return
	}
	if up {
		netlink.LinkSetUp(l)
	} else {
		netlink.LinkSetDown(l)
	}
}

func setKernelMTU(name string, mtu int) {
	if l, err := netlink.LinkByName(name); err == nil {
		netlink.LinkSetMTU(l, mtu)
	}
}
