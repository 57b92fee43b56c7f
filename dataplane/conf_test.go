package dataplane

import (
	"net/netip"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/ndisc"
)

// TestDADTransmits: DAD sends dad_transmits solicitations for a new
// address, a retrans time apart, and the address stays tentative until a
// retrans time after the last; with none to send (accept_dad 0) it is
// usable at once and nothing is sent.
func TestDADTransmits(t *testing.T) {
	l, e, f := etherLink(t)
	p := l.Neigh().Params()
	p.Retrans = 40 * time.Millisecond
	l.Neigh().SetParams(p)
	solicits := func(target netip.Addr, sent []sentFrame) int {
		n := 0
		for _, s := range sent {
			ip := header.IPv6(s.pkt)
			m := header.ICMPv6(ip.Payload())
			if ip.NextHeader() == uint8(header.ICMPv6ProtocolNumber) && m.Type() == header.ICMPv6NeighborSolicit &&
				header.NDPNeighborSolicit(m.MessageBody()).TargetAddress().As16() == target.As16() {
				n++
			}
		}
		return n
	}

	l.SetDADTransmits(3)
	a := netip.MustParsePrefix("2001:db8:92::1/64")
	start := time.Now()
	if err := e.dp.Links.AddAddr(l, a); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "DAD of three solicitations", func() bool { return l.DAD(a.Addr()) == ndisc.DADDone })
	if took := time.Since(start); took < 3*p.Retrans {
		t.Errorf("DAD took %v, less than three retrans times (%v)", took, 3*p.Retrans)
	}
	if n := solicits(a.Addr(), f.take()); n != 3 {
		t.Errorf("%d solicitations for %v, want dad_transmits 3", n, a.Addr())
	}

	l.SetDADTransmits(0)
	b := netip.MustParsePrefix("2001:db8:93::1/64")
	if err := e.dp.Links.AddAddr(l, b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an address without DAD", func() bool { return l.DAD(b.Addr()) == ndisc.DADDone })
	// Done, it is past every DAD timer: a solicitation would have gone
	// before, and what the ND goroutine wrote before is all in.
	if n := solicits(b.Addr(), ndSettled(t, f, a.Addr())); n != 0 {
		t.Errorf("%d solicitations for %v with dad_transmits 0", n, b.Addr())
	}
}

// TestRouterFlag: a link's Neighbour Advertisements carry the router flag
// while its forwarding knob is on, and not once it is off (Linux's NA
// router flag is the link's forwarding).
func TestRouterFlag(t *testing.T) {
	l, _, f := etherLink(t)
	own := netip.MustParseAddr("2001:db8:91::1")
	for _, router := range []bool{true, false, true} {
		l.SetRouterFlag(router)
		f.rx <- ndFrame(header.ICMPv6NeighborSolicit, hostAddr, solicitedNode(own), nsBody(own, &hostMAC), 255)
		na := waitSent(t, f, 1)[0]
		m := header.ICMPv6(header.IPv6(na.pkt).Payload())
		if adv := header.NDPNeighborAdvert(m.MessageBody()); m.Type() != header.ICMPv6NeighborAdvert || adv.RouterFlag() != router {
			t.Errorf("forwarding %v: type %d, router flag %v", router, m.Type(), adv.RouterFlag())
		}
	}
}
