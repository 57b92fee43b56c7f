package port

import (
	"fmt"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// OpenMirror opens the TUN that stands for a link in the kernel (a
// mirror, dataplane's Mirror): name, with the link's MTU, one queue; it
// returns the kernel's index of it. The kernel makes no address of its
// own on it (its link-local is the link's), solicits no router, and keeps
// IPv6 on. A kernel interface of that name already there is an error
// that wraps os.ErrExist: the TUN would attach to it.
func OpenMirror(name string, mtu int) (*TUN, int32, error) {
	if _, err := netlink.LinkByName(name); err == nil {
		return nil, 0, fmt.Errorf("%s: %w", name, os.ErrExist)
	}
	dev, err := OpenTUN(name, TUNOptions{MTU: mtu, Queues: 1})
	if err != nil {
		return nil, 0, err
	}
	t := dev.(*TUN)
	kl, err := netlink.LinkByName(name)
	if err != nil {
		return nil, 0, closing(t, err)
	}
	for knob, v := range map[string]string{"addr_gen_mode": "1", "accept_ra": "0", "disable_ipv6": "0"} {
		if err := os.WriteFile(sysctlPath(name, knob), []byte(v), 0); err != nil {
			return nil, 0, closing(t, err)
		}
	}
	return t, int32(kl.Attrs().Index), nil
}

// Give writes one packet (virtio_net_hdr and the packet) into the kernel
// by the TUN's first queue, with one write(2) and no lock.
func (t *TUN) Give(b []byte) error {
	_, err := unix.Write(t.queues[0].fd, b)
	return err
}
