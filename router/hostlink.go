package router

import (
	"log"
	"net"
	"net/netip"

	"urouter/dataplane"
)

// Host links that wait: a host link whose interface is not there (yet,
// or any more) keeps its configuration (addresses, routes through it, its
// mirror), has no carrier, and attaches to the next interface of its
// name as the kernel tells of it (carrier.go's notifications, not a
// poll): containerlab moves a container's interfaces in after it starts,
// and a neighbour's restart deletes a veth and makes another.

// hostAdded notes how link l came: one that waits says so in the log,
// and takes its interface's MTU when it attaches unless it is given one
// first (r.mu is held).
func (r *Router) hostAdded(l *dataplane.Link) {
	if !l.Waiting() {
		return
	}
	log.Printf("router: link %s waits for its interface %s", l.Name, l.HostDev())
	r.mtuFromIface[l] = true
}

// attachHost attaches waiting link l to the interface of its name, now
// there: the interface takes the link's MTU (one that never had an
// interface, and was given none, takes the interface's) and its state,
// and the link the interface's carrier. r.mu is held.
func (r *Router) attachHost(l *dataplane.Link) {
	ifi, err := r.DP.AttachHost(l)
	if err != nil {
		log.Printf("router: link %s: attaching to %s: %v (it waits for the next)", l.Name, l.HostDev(), err)
		return
	}
	if ifi == nil {
		return
	}
	if r.mtuFromIface[l] || l.PortSetMTU(l.MTU()) != nil {
		if err := r.Links.SetMTU(l, max(ifi.MTU, dataplane.MinMTU)); err != nil {
			log.Printf("router: link %s: the MTU of %s: %v", l.Name, ifi.Name, err)
		}
	}
	delete(r.mtuFromIface, l)
	if l.Up() {
		if err := l.PortSetUp(true); err != nil {
			log.Printf("router: link %s: setting %s up: %v", l.Name, ifi.Name, err)
		}
	}
	r.setCarrier(l, ifi.Flags&net.FlagRunning != 0) // set up just now, its carrier comes as a notification
	log.Printf("router: link %s attached to %s (index %d)", l.Name, ifi.Name, ifi.Index)
	r.tell(LinkChanged, l, netip.Prefix{})
}

// detachHost lets link l's interface go: the link has no carrier and
// waits. r.mu is held.
func (r *Router) detachHost(l *dataplane.Link) {
	dev := l.HostDev()
	had, err := r.DP.DetachHost(l)
	if err != nil {
		log.Printf("router: link %s: closing its socket on %s: %v", l.Name, dev, err)
	}
	if !had {
		return
	}
	log.Printf("router: link %s: its interface %s went; it waits for the next", l.Name, dev)
	r.setCarrier(l, false)
	r.tell(LinkChanged, l, netip.Prefix{})
}

// detachVanished detaches the host links whose interface went, or took
// another name, while no notification was heard (before a subscription
// made again).
func (r *Router) detachVanished() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.Links.All() {
		if idx := l.Interface(); idx != 0 {
			if ifi, err := net.InterfaceByIndex(idx); err != nil || ifi.Name != l.HostDev() {
				r.detachHost(l)
			}
		}
	}
}
