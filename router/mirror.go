package router

import (
	"fmt"
	"log"
	"net/netip"

	"urouter/dataplane"
)

// SetMirror gives link l a kernel mirror named kname (`link set NAME
// mirror KNAME`): a kernel TUN with l's MTU, state and addresses, kept in
// step with them from then on.
func (r *Router) SetMirror(l *dataplane.Link, kname string) error {
	if l.Flags()&dataplane.FlagLoopback != 0 {
		return fmt.Errorf("the loopback has no mirror")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := l.Mirror(); m != nil && m.Name == kname {
		return nil
	}
	defer r.publishMirrors()
	if _, err := r.DP.SetMirror(l, kname); err != nil {
		return err
	}
	// synced here for its error; tell's sync after it finds nothing to do
	if err := dataplane.SyncMirror(l); err != nil {
		r.DP.ClearMirror(l)
		return err
	}
	r.tell(LinkChanged, l, netip.Prefix{})
	return nil
}

// ClearMirror removes l's mirror (`mirror none`).
func (r *Router) ClearMirror(l *dataplane.Link) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.publishMirrors()
	err := r.DP.ClearMirror(l)
	r.tell(LinkChanged, l, netip.Prefix{})
	return err
}

// LinkOfKernel is the link whose mirror is kernel interface kidx, 0 if
// none: how routes from the kernel's side (zebra's, a kernel table's)
// name the router's links.
func (r *Router) LinkOfKernel(kidx int32) int32 {
	if m := r.mirrors.Load(); m != nil {
		return (*m)[kidx]
	}
	return 0
}

func (r *Router) publishMirrors() {
	m := map[int32]int32{}
	for _, l := range r.Links.All() {
		if mi := l.Mirror(); mi != nil {
			m[mi.Index] = l.Index
		}
	}
	r.mirrors.Store(&m)
}

// syncMirror keeps l's mirror in step after a change (under r.mu).
func (r *Router) syncMirror(l *dataplane.Link) {
	if l == nil || l.Mirror() == nil {
		return
	}
	if err := dataplane.SyncMirror(l); err != nil {
		log.Printf("mirror %s of %s: %v", l.Mirror().Name, l.Name, err)
	}
}
