package router

import (
	"errors"
	"fmt"
	"log"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"urouter/dataplane"
)

// The kernel's side of a VRF, for daemons that run on the router's host
// (zebra with VRFs, bgpd's `router bgp ASN vrf red`): where the kernel has
// VRF devices, a member's mirror is enslaved to a kernel VRF device of
// the VRF's name and table, made when the first member's mirror needs
// it; where it has none (CONFIG_NET_VRF off: the kernel answers
// EOPNOTSUPP), the mirrors stay in the kernel's default domain and
// daemons route per tenant through tables (--mirror-table).

// kernelVRF puts l's mirror in the kernel VRF of l's VRF, or out of any
// when l is in none; under r.mu.
func (r *Router) kernelVRF(l *dataplane.Link) error {
	m, kl, err := mirrorIface(l)
	if m == nil || err != nil {
		return err
	}
	vrf := r.Links.ByIndex(l.Master())
	if vrf == nil {
		if kl.Attrs().MasterIndex != 0 {
			return netlink.LinkSetNoMaster(kl)
		}
		return nil
	}
	if r.noKernelVRF {
		return nil
	}
	kv, err := r.kernelVRFDevice(vrf)
	if err != nil || kv == nil {
		return err
	}
	if kl.Attrs().MasterIndex != kv.Attrs().Index {
		return netlink.LinkSetMasterByIndex(kl, kv.Attrs().Index)
	}
	return nil
}

// kernelVRFDevice is the kernel VRF device standing for vrf, made (and
// set up) if missing; nil if the kernel has no VRFs.
func (r *Router) kernelVRFDevice(vrf *dataplane.Link) (netlink.Link, error) {
	_, table := vrf.L3()
	if kv, err := netlink.LinkByName(vrf.Name); err == nil {
		if v, ok := kv.(*netlink.Vrf); !ok || v.Table != table {
			return nil, fmt.Errorf("kernel interface %s is not a VRF of table %d", vrf.Name, table)
		}
		return kv, nil
	}
	err := netlink.LinkAdd(&netlink.Vrf{LinkAttrs: netlink.LinkAttrs{Name: vrf.Name}, Table: table})
	if errors.Is(err, unix.EOPNOTSUPP) {
		r.noKernelVRF = true
		log.Printf("router: the kernel has no VRF devices: %s's mirrors stay in its default domain", vrf.Name)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kernel VRF %s: %w", vrf.Name, err)
	}
	kv, err := netlink.LinkByName(vrf.Name)
	if err != nil {
		return nil, err
	}
	r.kernelVRFs = append(r.kernelVRFs, vrf.Name)
	return kv, netlink.LinkSetUp(kv)
}

// dropKernelVRF deletes the kernel VRF device the router made for vrf.
func (r *Router) dropKernelVRF(vrf *dataplane.Link) {
	for i, n := range r.kernelVRFs {
		if n != vrf.Name {
			continue
		}
		r.kernelVRFs = append(r.kernelVRFs[:i], r.kernelVRFs[i+1:]...)
		if kv, err := netlink.LinkByName(n); err == nil {
			if err := netlink.LinkDel(kv); err != nil {
				log.Printf("router: deleting kernel VRF %s: %v", n, err)
			}
		}
		return
	}
}
