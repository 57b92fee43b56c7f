package router

import (
	"errors"
	"net"
	"net/netip"
	"syscall"

	"urouter/dataplane"
	"urouter/dataplane/port"
	"urouter/fib6"
	"urouter/rules"
)

// VRFs as Linux's drivers/net/vrf.c makes them: a VRF link is an L3
// master with a table; its first creation adds the l3mdev rule
// (vrf_add_fib_rules: `1000: from all lookup [l3mdev-table]`), which
// stays when the VRFs go, as Linux's; a link enslaved to it or released
// is cycled (cycle_netdev), so its addresses go unless keep_addr_on_down
// keeps them (addrconf_ifdown on NETDEV_CHANGEUPPER), and the routes they
// bring come back in its new domain's table (l3mdev_fib_table).

// VRFRule is the l3mdev rule the first VRF adds (vrf_fib_rule: its
// preference FIB_RULE_PREF, its protocol kernel).
var VRFRule = rules.Rule{Pref: 1000, L3mdev: true, Action: rules.ToTable, Protocol: rules.ProtoKernel}

// VRF refusals, in Linux's words.
var (
	ErrVRFTable      = &fib6.Error{Errno: syscall.EINVAL, Msg: "Invalid VRF table id."}
	ErrVRFTableUsed  = &fib6.Error{Errno: syscall.EBUSY, Msg: "Table is used by another VRF."}
	ErrEnslaveMaster = &fib6.Error{Errno: syscall.EINVAL, Msg: "Can not enslave an L3 master device to a VRF."}
	ErrEnslaveLo     = &fib6.Error{Errno: syscall.EOPNOTSUPP, Msg: "Can not enslave loopback device to a VRF."}
	ErrNotMaster     = syscall.EOPNOTSUPP // the master named is no VRF: it has no ndo_add_slave
)

// AddVRF creates VRF link name of table, down, at index (0: the next
// free one), with mac (nil: a random one) and mtu (0: 65575, Linux's).
func (r *Router) AddVRF(name string, index int32, table uint32, mtu int, mac net.HardwareAddr) (*dataplane.Link, error) {
	if table == 0 {
		return nil, ErrVRFTable
	}
	if mtu == 0 {
		mtu = port.VRFMTU
	}
	if mtu > port.VRFMTU {
		return nil, dataplane.ErrMTUMax
	}
	l, err := r.addLink(name, index, mtu, func() (port.Device, error) {
		if r.sys.vrfStrict != 0 && r.Links.VRFByTable(table) != nil {
			return nil, ErrVRFTableUsed
		}
		return port.NewVRF(table, mac), nil
	})
	if err != nil {
		return nil, err
	}
	r.Tables.Ensure(table)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.vrfRules {
		x := r.Rules.Begin()
		_, err := x.Add(VRFRule, true)
		x.Commit()
		if err != nil && err != rules.ErrExists {
			// as vrf_newlink unregisters a VRF whose rules failed
			return nil, errors.Join(err, r.deleteLink(l))
		}
		r.vrfRules = true
	}
	return l, nil
}

// SetMaster enslaves l to VRF link vrf, or releases it (vrf nil), as
// Linux's do_set_master: from the VRF it is in first; a link up is
// cycled, so that its routes come back in the new domain's table.
func (r *Router) SetMaster(l, vrf *dataplane.Link) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.setMaster(l, vrf)
}

func (r *Router) setMaster(l, vrf *dataplane.Link) error {
	switch {
	case r.Links.ByIndex(l.Index) != l, vrf != nil && r.Links.ByIndex(vrf.Index) != vrf:
		return syscall.ENODEV // deleted since they were named (r.mu is held)
	case vrf == nil && l.Master() == 0, vrf != nil && l.Master() == vrf.Index:
		return nil // nothing to change, as do_set_master
	}
	if l.Master() != 0 && vrf != nil {
		// do_set_master lets the old master go before it asks the new one
		if err := r.moveDomain(l, nil); err != nil {
			return err
		}
	}
	switch {
	case vrf != nil && !vrf.IsVRF():
		return ErrNotMaster
	case vrf != nil && l.IsVRF():
		return ErrEnslaveMaster
	case vrf != nil && l.IsLoopback():
		return ErrEnslaveLo
	}
	return r.moveDomain(l, vrf)
}

// moveDomain puts l in vrf's domain (nil: the default one), cycling it
// as cycle_netdev does.
func (r *Router) moveDomain(l, vrf *dataplane.Link) error {
	up := l.Up()
	if up {
		if err := r.setUp(l, false); err != nil { // its addresses go as it goes down
			return err
		}
	} else {
		r.ifdownAddrs(l) // NETDEV_CHANGEUPPER's addrconf_ifdown
	}
	r.Links.SetMaster(l, vrf)
	r.tell(LinkChanged, l, netip.Prefix{})
	if up {
		return r.setUp(l, true)
	}
	return nil
}

// releaseMembers lets every member of VRF link vrf go, as vrf_dellink.
func (r *Router) releaseMembers(vrf *dataplane.Link) {
	if !vrf.IsVRF() {
		return
	}
	for _, m := range r.Links.Members(vrf) {
		_ = r.setMaster(m, nil) // releasing never fails
	}
}

// setVRFStrict sets net.vrf.strict_mode: 1 is refused while two VRFs
// share a table, as vrf_shared_table_handler refuses it (EBUSY).
func (r *Router) setVRFStrict(v string) error {
	n, ok := parseProcInt(v)
	if !ok || n < 0 || n > 1 {
		return ErrBadValue
	}
	if n == 1 {
		seen := map[uint32]bool{}
		for _, l := range r.Links.All() {
			if _, t := l.L3(); l.IsVRF() {
				if seen[t] {
					return syscall.EBUSY
				}
				seen[t] = true
			}
		}
	}
	r.sys.vrfStrict = n
	return nil
}

// VRFStrict reports net.vrf.strict_mode: End.DT6 into a VRF asks for it,
// as Linux's l3mdev_ifindex_lookup_by_table_id does.
func (r *Router) VRFStrict() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sys.vrfStrict != 0
}
