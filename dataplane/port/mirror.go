package port

import (
	"fmt"
	"net"
	"os"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
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
	kidx, err := mirrorSysctls(name)
	if err != nil {
		return nil, 0, closing(t, err)
	}
	return t, kidx, nil
}

// OpenMirrorTAP opens the TAP that stands for an Ethernet link in the
// kernel (`mirror KNAME type tap`), as OpenMirror does a TUN, with the
// link's MAC, so that the kernel's Ethernet protocols (IS-IS, LLDP) speak
// as the link. It is NOARP: the kernel neither solicits nor answers
// neighbours on it and sends every unicast frame to its own MAC, the
// router's, which resolves the neighbour itself; so the kernel's side
// keeps no neighbours and urouter's ND stays the link's only one.
func OpenMirrorTAP(name string, mtu int, mac net.HardwareAddr) (*TAP, int32, error) {
	if _, err := netlink.LinkByName(name); err == nil {
		return nil, 0, fmt.Errorf("%s: %w", name, os.ErrExist)
	}
	t, err := OpenTAP(name, TAPOptions{MTU: mtu, Queues: 1})
	if err != nil {
		return nil, 0, err
	}
	kl, err := netlink.LinkByName(name)
	if err == nil {
		err = netlink.LinkSetHardwareAddr(kl, mac)
	}
	if err == nil {
		err = netlink.LinkSetARPOff(kl)
	}
	if err != nil {
		return nil, 0, closing(t, fmt.Errorf("TAP %s: %w", name, err))
	}
	kidx, err := mirrorSysctls(name)
	if err != nil {
		return nil, 0, closing(t, err)
	}
	return t, kidx, nil
}

// mirrorSysctls sets a new mirror's IPv6 knobs and returns its index.
func mirrorSysctls(name string) (int32, error) {
	kl, err := netlink.LinkByName(name)
	if err != nil {
		return 0, err
	}
	for knob, v := range map[string]string{"addr_gen_mode": "1", "accept_ra": "0", "disable_ipv6": "0"} {
		if err := os.WriteFile(sysctlPath(name, knob), []byte(v), 0); err != nil {
			return 0, err
		}
	}
	return int32(kl.Attrs().Index), nil
}

// Give writes one packet (virtio_net_hdr and the packet) into the kernel
// by the TUN's first queue, with one write(2) and no lock.
func (t *TUN) Give(b []byte) error {
	_, err := unix.Write(t.queues[0].fd, b)
	return err
}

// RFC 2863's operstates a mirror takes (IF_OPER_DORMANT, IF_OPER_UP).
const (
	ifOperDormant = 5
	ifOperUp      = 6
)

// SetDormant makes a mirror's kernel interface ifindex dormant (not
// RUNNING, its link without carrier) or up again (IFLA_OPERSTATE), and the
// kernel tells of it at once: zebra takes the nexthops through an
// interface that is not RUNNING out, bgpd's fast-external-failover resets
// its eBGP sessions over it. (The TUN's own carrier, TUNSETCARRIER, is
// told through the kernel's linkwatch, which holds an event that is not
// urgent up to a second after the last it ran, and stops the interface's
// queue meanwhile.)
func SetDormant(ifindex int32, dormant bool) error {
	state := byte(ifOperUp)
	if dormant {
		state = ifOperDormant
	}
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = ifindex
	req.AddData(msg)
	req.AddData(nl.NewRtAttr(unix.IFLA_OPERSTATE, []byte{state}))
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}
