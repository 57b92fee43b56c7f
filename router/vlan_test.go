package router

import (
	"errors"
	"net/netip"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"

	"urouter/dataplane"
	"urouter/dataplane/port"
)

// TestVLANFollowsParent: VLAN links on a host link take its MAC and MTU;
// follow it down and up (all of them up, as vlan_device_event opens
// them), and its carrier (the peer of its veth down and up); cannot be set
// up while it is down (ENETDOWN) nor given an MTU above its own (ERANGE);
// a lowered parent MTU lowers theirs; its deletion takes them (QinQ's
// inner one too) and their routes.
func TestVLANFollowsParent(t *testing.T) {
	r := routerInOwnNetns(t)
	if r == nil {
		return
	}
	veth(t, "t0", 1500)
	p, err := r.AddHost("trunk", "t0", dataplane.EtherOptions{})
	must(t, err)
	vlan := func(name string, parent *dataplane.Link, tpid, vid uint16, mtu int) (*dataplane.Link, error) {
		return r.AddVLAN(name, dataplane.VLANInfo{Parent: parent, TPID: tpid, VID: vid}, mtu, dataplane.EtherOptions{})
	}
	v100, err := vlan("trunk.100", p, port.EtherTypeVLAN, 100, 0)
	must(t, err)
	v300, err := vlan("trunk.300", p, port.EtherTypeQinQ, 300, 1496)
	must(t, err)
	inner, err := vlan("trunk.300.10", v300, port.EtherTypeVLAN, 10, 0)
	must(t, err)
	if _, err := vlan("again", p, port.EtherTypeVLAN, 100, 0); !errors.Is(err, dataplane.ErrVLANExists) {
		t.Errorf("a second VLAN 100: %v, want %v", err, dataplane.ErrVLANExists)
	}
	if _, err := vlan("big", p, port.EtherTypeVLAN, 7, 9000); !errors.Is(err, ErrVLANMTU) {
		t.Errorf("MTU 9000 on a 1500 parent: %v", err)
	}
	if v100.MTU() != 1500 || inner.MTU() != 1496 || v100.Hardware().HardwareAddr().String() != p.Hardware().HardwareAddr().String() {
		t.Errorf("MTUs %d, %d and MAC %v: want the parent's 1500, 1496 and %v", v100.MTU(), inner.MTU(),
			v100.Hardware().HardwareAddr(), p.Hardware().HardwareAddr())
	}
	if err := r.SetUp(v100, true); !errors.Is(err, syscall.ENETDOWN) {
		t.Errorf("VLAN up on a parent down: %v, want ENETDOWN", err)
	}
	must(t, r.SetUp(p, true))
	for _, l := range []*dataplane.Link{v100, v300, inner} {
		if !l.Up() {
			t.Errorf("%s stayed down as its parent came up", l.Name)
		}
	}
	must(t, r.AddAddr(v100, netip.MustParsePrefix("2001:db8:100::1/64")))
	peer, err := netlink.LinkByName("t0p")
	must(t, err)
	must(t, netlink.LinkSetDown(peer))
	eventually(t, "the VLAN links' carrier lost", func() bool { return !v100.Carrier() && !inner.Carrier() })
	must(t, netlink.LinkSetUp(peer))
	eventually(t, "the VLAN links' carrier back", func() bool { return v100.Carrier() && inner.Carrier() })
	if err := r.SetMTU(v100, 1501); !errors.Is(err, syscall.ERANGE) {
		t.Errorf("VLAN MTU above its parent's: %v, want ERANGE", err)
	}
	must(t, r.SetMTU(p, 1400))
	if v100.MTU() != 1400 || inner.MTU() != 1400 {
		t.Errorf("MTUs %d and %d after the parent's went to 1400", v100.MTU(), inner.MTU())
	}
	must(t, r.SetUp(p, false))
	if v100.Up() || inner.Up() {
		t.Error("a VLAN link stayed up with its parent down")
	}
	must(t, r.SetUp(p, true))
	must(t, r.AddAddr(v100, netip.MustParsePrefix("2001:db8:100::1/64")))
	must(t, r.DeleteLink(p))
	for _, n := range []string{"trunk", "trunk.100", "trunk.300", "trunk.300.10"} {
		if r.Links.ByName(n) != nil {
			t.Errorf("%s is still there after its parent's deletion", n)
		}
	}
	if rt := r.Tables.Main().Lookup(netip.MustParseAddr("2001:db8:100::5"), netip.IPv6Unspecified()); rt != nil {
		t.Errorf("a route through a deleted VLAN link: %v", rt)
	}
}
