package dataplane

import (
	"errors"
	"fmt"
	"net"

	"urouter/dataplane/port"
	"urouter/ndisc"
)

// Host links: an Ethernet link on a kernel interface known by name
// (port.Host), which it attaches to when an interface of that name is
// there and waits for when it is not; the router attaches and detaches it
// as the kernel tells of interfaces coming and going.

// OpenHost makes a link's device on interface dev with an AF_PACKET
// socket. The router's MAC is the interface's own unless one is given
// (then the socket is promiscuous, as a NIC filters other MACs). With no
// interface of that name the link waits for one, with a MAC of its own
// (random, as Linux gives a TAP, unless one is given) that each interface
// it attaches to is given; the MTU is then 0: the caller's to choose.
func OpenHost(dev string, eo EtherOptions) (port.Device, int, error) {
	h := port.NewHost(dev)
	ifi, err := h.Attach(eo.MAC, false)
	given := len(eo.MAC) == 6
	mac, mtu := randomMAC(), 0
	switch {
	case err == nil:
		mac, mtu = ndisc.MAC(ifi.HardwareAddr), ifi.MTU
	case !errors.Is(err, port.ErrNoDevice):
		return nil, 0, err
	}
	if given {
		mac = ndisc.MAC(eo.MAC)
	}
	e, err := newEther("host", h, mac, eo)
	if err != nil {
		return nil, 0, errors.Join(fmt.Errorf("PACKET_ADD_MEMBERSHIP: %w", err), h.Close())
	}
	e.give = !given
	return e, mtu, nil
}

// host is a host link's device and its hold on its interface, nils for
// other links.
func (l *Link) host() (*ether, *port.Host) {
	if e, ok := l.hw.(*ether); ok {
		if h, ok := e.io.(*port.Host); ok {
			return e, h
		}
	}
	return nil, nil
}

// HostDev is the name of the interface a host link is on or waits for,
// "" for other links.
func (l *Link) HostDev() string {
	if _, h := l.host(); h != nil {
		return h.Dev()
	}
	return ""
}

// Waiting reports whether l is a host link without its interface.
func (l *Link) Waiting() bool {
	_, h := l.host()
	return h != nil && !h.Attached()
}

// Interface is the index of the kernel interface a host link is on, 0
// for other links and a host link that waits.
func (l *Link) Interface() int {
	if _, h := l.host(); h != nil {
		return h.Ifindex()
	}
	return 0
}

// AttachHost attaches host link l to the interface of its name, if there
// is one now, and returns the interface; nil (and no error) if there is
// none or l has one already. The caller gives the link's MTU and state to
// the interface, and records its carrier.
func (dp *Dataplane) AttachHost(l *Link) (*net.Interface, error) {
	e, h := l.host()
	if h == nil || h.Attached() {
		return nil, nil
	}
	ifi, err := h.Attach(e.mac[:], e.give)
	if errors.Is(err, port.ErrNoDevice) {
		return nil, nil
	}
	return ifi, err
}

// DetachHost lets host link l's interface go (deleted, moved away,
// renamed): its socket closes once no worker writes to it, and the link
// waits for the next interface of its name. It reports whether l had
// one.
func (dp *Dataplane) DetachHost(l *Link) (bool, error) {
	e, h := l.host()
	if h == nil {
		return false, nil
	}
	dp.mu.Lock()
	defer dp.mu.Unlock()
	a := h.Detach()
	if a == nil {
		return false, nil
	}
	dp.synchronize() // no worker is still writing to it
	e.wmu.Lock()
	defer e.wmu.Unlock()
	return true, a.Close()
}
