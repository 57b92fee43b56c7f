package router

import (
	"log"
	"net/netip"
	"syscall"

	"urouter/dataplane"
	"urouter/dataplane/port"
)

// VLAN links follow their parent as Linux's 8021q does
// (vlan_device_event, without loose_binding): a parent set down closes
// them and one set up opens them all; they have their parent's carrier
// (netif_stacked_transfer_operstate: without it they are LOWERLAYERDOWN);
// a parent's MTU lowered below theirs lowers theirs; a parent deleted
// takes them with it. A VLAN link is not set up while its parent is down
// (vlan_dev_open: ENETDOWN), nor given an MTU above its parent's
// (vlan_dev_change_mtu: ERANGE).

// ErrVLANMTU is vlan_newlink's refusal of an MTU above the parent's.
var ErrVLANMTU = syscall.EINVAL

// AddVLAN creates VLAN link name (v: its parent, tag and flags), down;
// its MAC and, if mtu is 0, its MTU are the parent's. As vlan_newlink:
// a parent without frames (a TUN, a dummy, the loopback) or a VID taken
// is refused before an MTU above the parent's.
func (r *Router) AddVLAN(name string, v dataplane.VLANInfo, mtu int, eo dataplane.EtherOptions) (*dataplane.Link, error) {
	if mtu == 0 {
		mtu = v.Parent.MTU()
	}
	eo.Neigh, eo.Held = r.defaultNeigh(eo.Neigh), r.held
	l, err := r.addLink(name, eo.Index, mtu, func() (port.Device, error) {
		if r.Links.ByIndex(v.Parent.Index) != v.Parent {
			return nil, syscall.ENODEV // deleted since it was named (r.mu is held)
		}
		d, err := r.DP.OpenVLAN(v, eo)
		if err == nil && mtu > v.Parent.MTU() {
			_ = d.Close() // it never fails: a VLAN device's port is its root's
			return nil, ErrVLANMTU
		}
		return d, err
	})
	if err != nil {
		return nil, err
	}
	return l, nil // with its root's carrier, as Links.add read it (ether.Carrier)
}

// vlanUp checks that VLAN link l may be set up: its parent is up.
func vlanUp(l *dataplane.Link) error {
	if v, ok := l.VLAN(); ok && v.Parent != nil && !v.Parent.Up() {
		return syscall.ENETDOWN
	}
	return nil
}

// followParent sets parent's VLAN links up or down with it; r.mu is held.
func (r *Router) followParent(parent *dataplane.Link, up bool) {
	for _, c := range r.Links.VLANs(parent) {
		if err := r.setUp(c, up); err != nil {
			log.Printf("router: link %s: following %s (up %v): %v", c.Name, parent.Name, up, err)
		}
	}
}

// setCarrier records link l's carrier and its VLAN links', telling each
// that changed; r.mu is held.
func (r *Router) setCarrier(l *dataplane.Link, on bool) {
	if r.Links.SetCarrier(l, on) {
		r.tell(LinkChanged, l, netip.Prefix{})
	}
	for _, c := range r.Links.VLANs(l) {
		r.setCarrier(c, on)
	}
}

// lowerVLANMTU lowers the MTU of parent's VLAN links above mtu to it;
// r.mu is held.
func (r *Router) lowerVLANMTU(parent *dataplane.Link, mtu int) {
	for _, c := range r.Links.VLANs(parent) {
		if c.MTU() <= mtu {
			continue
		}
		if err := r.Links.SetMTU(c, mtu); err != nil {
			log.Printf("router: link %s: following %s's MTU: %v", c.Name, parent.Name, err)
			continue
		}
		r.tell(LinkChanged, c, netip.Prefix{})
		r.lowerVLANMTU(c, mtu)
	}
}

// checkVLANMTU refuses VLAN link l an MTU above its parent's.
func checkVLANMTU(l *dataplane.Link, mtu int) error {
	if v, ok := l.VLAN(); ok && v.Parent != nil && mtu > v.Parent.MTU() {
		return syscall.ERANGE
	}
	return nil
}
