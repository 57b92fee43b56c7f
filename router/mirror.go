package router

import (
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"urouter/dataplane"
	"urouter/dataplane/port"
)

// SetMirror gives link l a kernel mirror named kname (`link set NAME
// mirror KNAME [type KIND]`): a kernel TUN (dataplane.MirrorTUN), or a TAP
// with the link's MAC (dataplane.MirrorTAP), with l's MTU, state and
// addresses, kept in step with them from then on.
func (r *Router) SetMirror(l *dataplane.Link, kname, kind string) error {
	if l.Hardware().Flags()&port.FlagLoopback != 0 {
		return fmt.Errorf("the loopback has no mirror")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := l.Mirror(); m != nil && m.Name == kname && m.Kind == kind {
		return nil
	}
	defer r.publishMirrors()
	if r.paper {
		return r.DP.SetPaperMirror(l, kname, kind)
	}
	if _, err := r.DP.SetMirror(l, kname, kind); err != nil {
		return err
	}
	// synced here for its error; tell's sync after it finds nothing to do
	if err := errors.Join(r.kernelVRF(l), syncKernel(l)); err != nil {
		return errors.Join(err, r.DP.ClearMirror(l))
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
	if err := r.kernelVRF(l); err != nil {
		log.Printf("mirror %s of %s: %v", l.Mirror().Name, l.Name, err)
	}
	if err := syncKernel(l); err != nil {
		log.Printf("mirror %s of %s: %v", l.Mirror().Name, l.Name, err)
	}
}

// syncKernel gives l's mirror, if any, the link's MTU, state, carrier and
// IPv6 addresses (without duplicate address detection: they are the link's,
// already checked there), by netlink. It is the router's: it runs under
// the router's lock, by whoever changed the link (the dataplane only
// carries the mirror's packets).
func syncKernel(l *dataplane.Link) error {
	m, kl, err := mirrorIface(l)
	if m == nil || err != nil {
		return err
	}
	var errs []error
	if kl.Attrs().MTU != l.MTU() {
		errs = append(errs, netlink.LinkSetMTU(kl, l.MTU()))
	}
	have, err := netlink.AddrList(kl, netlink.FAMILY_V6)
	if err != nil {
		return err
	}
	want := l.Addrs()
	var kernel []netip.Prefix
	for _, a := range have {
		ip, _ := netip.AddrFromSlice(a.IP)
		ones, _ := a.Mask.Size()
		kernel = append(kernel, netip.PrefixFrom(ip.Unmap(), ones))
		if !slices.Contains(want, kernel[len(kernel)-1]) {
			errs = append(errs, netlink.AddrDel(kl, &a))
		}
	}
	for _, p := range want {
		if slices.Contains(kernel, p) {
			continue
		}
		a, err := netlink.ParseAddr(p.String())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		a.Flags = unix.IFA_F_NODAD
		if err := netlink.AddrAdd(kl, a); err != nil && !errors.Is(err, unix.EEXIST) {
			errs = append(errs, fmt.Errorf("%s on %s: %w", p, m.Name, err))
		}
	}
	dormant := kl.Attrs().OperState == netlink.OperDormant
	if up := kl.Attrs().Flags&net.FlagUp != 0; up != l.Up() {
		if l.Up() {
			errs = append(errs, netlink.LinkSetUp(kl))
		} else {
			errs = append(errs, netlink.LinkSetDown(kl))
		}
		dormant = false // coming up or going down, it is not
	}
	if carrier := l.Carrier(); l.Up() && dormant == carrier {
		errs = append(errs, m.SetCarrier(carrier))
	}
	return errors.Join(errs...)
}

// mirrorIface is l's mirror and its kernel interface as netlink has it
// now; nil, nil, nil for a link without a mirror.
func mirrorIface(l *dataplane.Link) (*dataplane.Mirror, netlink.Link, error) {
	m := l.Mirror()
	if m == nil || m.Paper() {
		return nil, nil, nil
	}
	kl, err := netlink.LinkByIndex(int(m.Index))
	if err != nil {
		return nil, nil, err
	}
	return m, kl, nil
}
