package dataplane

import (
	"net/netip"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// tagged is frame f with a VLAN tag (tpid, tci) after its MACs.
func tagged(f []byte, tpid, tci uint16) []byte {
	return append(append(f[:12:12], byte(tpid>>8), byte(tpid), byte(tci>>8), byte(tci)), f[12:]...)
}

// TestEtherVLAN: a frame tagged with a VLAN ID no link is on is dropped
// before Neighbour Discovery or the packet path and counted as received
// and unknown_vlan, whatever its group; another MAC's unicast stays not
// for us; a priority tag (VID 0) is no VLAN: the frame is the link's.
func TestEtherVLAN(t *testing.T) {
	l, e, f := etherLink(t)
	own := netip.MustParseAddr("2001:db8:91::1")
	ns := ndFrame(header.ICMPv6NeighborSolicit, hostAddr, solicitedNode(own), nsBody(own, &hostMAC), 255)
	lldp := append([]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e, 2, 0, 0, 0, 2, 2, 0x88, 0xcc}, make([]byte, 40)...)
	stranger := append([]byte{2, 0, 0, 0, 9, 9}, ns[6:]...)
	before, rx0, notForUs := dropsOf(l, DropUnknownVLAN), l.Stats().RxPackets, e.stats.NotForUs.Load()
	f.rx <- tagged(ns, 0x8100, 5)
	f.rx <- tagged(ns, 0x88a8, 4095)
	f.rx <- tagged(lldp, 0x8100, 100)
	f.rx <- tagged(stranger, 0x8100, 100)
	waitFor(t, "the tagged frames", func() bool { return dropsOf(l, DropUnknownVLAN) == before+3 })
	waitFor(t, "another MAC's frame", func() bool { return e.stats.NotForUs.Load() == notForUs+1 })
	if rx := l.Stats().RxPackets - rx0; rx != 3 {
		t.Errorf("received %d of 3 tagged frames for the link", rx)
	}
	if got := f.take(); len(got) != 0 {
		t.Errorf("a tagged solicitation was answered: %d frames", len(got))
	}
	f.rx <- tagged(ns, 0x8100, 6<<13) // priority 6, VID 0
	waitSent(t, f, 1)
	if got := dropsOf(l, DropUnknownVLAN); got != before+3 {
		t.Errorf("unknown_vlan %d after a priority-tagged solicitation, want %d", got, before+3)
	}
}
