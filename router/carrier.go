package router

import (
	"log"
	"net"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// routineCarrier follows the interfaces the router's host links are on
// or wait for (hostlink.go) and their carrier (a veth whose peer went
// down has none), from the namespace's link notifications, until stop.
// A change is a change of the link, told as any other: monitors hear of
// it, and the link's mirror takes its carrier (syncKernel), so that the
// daemons on the kernel's side see a cable pulled as Linux shows it them.
// A subscription that fails (a notification socket that overflowed, say)
// is made again.
func (r *Router) routineCarrier(stop <-chan struct{}) {
	for !r.followCarrier(stop) {
		select {
		case <-stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// followCarrier is one subscription's run; it reports whether it ended
// for stop.
func (r *Router) followCarrier(stop <-chan struct{}) bool {
	ch := make(chan netlink.LinkUpdate, 64)
	done := make(chan struct{})
	var ending atomic.Bool
	defer func() {
		ending.Store(true) // closing done makes the subscription's read fail
		close(done)
	}()
	// the links as they are first (ListExisting): a carrier that came
	// before the subscription, as a veth's does soon after it is set up
	err := netlink.LinkSubscribeWithOptions(ch, done, netlink.LinkSubscribeOptions{
		ListExisting: true,
		ErrorCallback: func(err error) {
			if !ending.Load() {
				log.Printf("router: link notifications: %v", err)
			}
		},
	})
	if err != nil {
		log.Printf("router: link notifications: %v (a host link's carrier is not followed)", err)
		return false
	}
	r.detachVanished() // an interface that went while nothing listened; what goes now is told
	for {
		select {
		case <-stop:
			return true
		case u, ok := <-ch:
			if !ok {
				return false
			}
			r.interfaceChanged(u)
		}
	}
}

// interfaceChanged applies what the kernel told of interface u: a host
// link on it detaches when it goes (deleted, moved to another namespace)
// or takes another name, and records its carrier; a host link waiting for
// its name attaches to it.
func (r *Router) interfaceChanged(u netlink.LinkUpdate) {
	a := u.Attrs()
	gone := u.Header.Type == unix.RTM_DELLINK
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.Links.All() {
		switch {
		case l.Interface() != a.Index:
		case gone || a.Name != l.HostDev():
			r.detachHost(l)
		default:
			r.setCarrier(l, a.Flags&net.FlagRunning != 0)
		}
	}
	if gone {
		return
	}
	for _, l := range r.Links.All() {
		if l.Waiting() && l.HostDev() == a.Name {
			r.attachHost(l)
		}
	}
}
