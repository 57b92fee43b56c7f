package dataplane_test

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/nexthop"
)

// inVRF puts the rig's ta and tb in VRF red (table 10), their addresses
// given again (enslaving takes them, keep_addr_on_down being 0), and tc
// in blue (table 20), with a route in red leaking into blue by its VRF
// link (2001:db8:77::/48 dev blue) and blue's route for it out of tc.
func inVRF(t testing.TB, r *rig) {
	t.Helper()
	rt := r.r
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var vrfs [2]*dataplane.Link
	for i, name := range []string{"red", "blue"} {
		v, err := rt.AddVRF(name, 0, uint32(10*(i+1)), 0, nil)
		must(err)
		must(rt.SetUp(v, true))
		vrfs[i] = v
	}
	for _, m := range []struct {
		l    *dataplane.Link
		vrf  *dataplane.Link
		addr string
	}{{r.ta, vrfs[0], "2001:db8:1::1/64"}, {r.tb, vrfs[0], "2001:db8:2::1/64"}, {r.tc, vrfs[1], "2001:db8:3::1/64"}} {
		must(rt.SetMaster(m.l, m.vrf))
		must(rt.AddAddr(m.l, netip.MustParsePrefix(m.addr)))
	}
	// red leaks 2001:db8:77::/48 (blue routes it out of tc), tc's
	// 2001:db8:3::/64 (blue's own address is in it) and 2001:db8:78::/48
	// (blue's unreachable default) into blue
	toBlue := nexthop.Nexthop{Link: vrfs[1].Index}
	for _, rr := range []struct {
		table uint32
		dst   string
		a     fib6.Attrs
	}{
		{10, "2001:db8:77::/48", fib6.Attrs{Nexthop: toBlue}}, {10, "2001:db8:3::/64", fib6.Attrs{Nexthop: toBlue}},
		{10, "2001:db8:78::/48", fib6.Attrs{Nexthop: toBlue}},
		{20, "2001:db8:77::/48", fib6.Attrs{Nexthop: nexthop.Nexthop{Link: r.tc.Index, Gateway: netip.MustParseAddr("2001:db8:3::9")}}},
		{20, "::/0", fib6.Attrs{Type: fib6.Unreachable}},
	} {
		x := rt.Tables.Get(rr.table).Begin()
		rr.a.Metric = 1024
		must(x.Add(fib6.Route{Dst: netip.MustParsePrefix(rr.dst), Attrs: rr.a}))
		x.Commit()
	}
}

// TestVRFForward: packets in by a member of red are routed in red's
// table: to tb; one to the default VRF's prefix goes nowhere (no route in
// red, none in main since tb left it); one to a route leaking into blue
// leaves by blue's tc; and none of it allocates.
func TestVRFForward(t *testing.T) {
	r := newRig(t)
	inVRF(t, r)
	toB := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, host2, layers.IPProtocolUDP, 64)}, udp(100)...)...)
	leak := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:77::1"), layers.IPProtocolUDP, 64)}, udp(100)...)...)
	r.run(toB, leak)
	if got := r.recv(r.tb); len(got) != 1 {
		t.Errorf("tb got %d packets, want the one to host2", len(got))
	}
	got := r.recv(r.tc)
	if len(got) != 1 {
		t.Fatalf("tc got %d packets, want the one leaking into blue", len(got))
	}
	if hl := got[0][7]; hl != 63 {
		t.Errorf("the leaked packet left with hop limit %d, want 63 (one router, one decrement)", hl)
	}
	// across the leak, blue's own address answers and blue's unreachable
	// default earns an error, both back to ta in red
	for _, c := range []struct {
		dst  string
		typ  uint8
		what string
	}{{"2001:db8:3::1", 129, "an echo reply from blue's address"}, {"2001:db8:78::1", 1, "blue's Destination Unreachable"}} {
		r.run(craft(t, ipv6(host1, net.ParseIP(c.dst), layers.IPProtocolICMPv6, 64),
			&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}, &layers.ICMPv6Echo{}, gopacket.Payload("x")))
		got := r.recv(r.ta)
		const at = dataplane.VnetHdrLen + 40 // ta's writes carry the virtio header
		if len(got) != 1 || len(got[0]) <= at || got[0][at] != c.typ {
			t.Errorf("to %s across the leak: %d packets back to ta, want %s", c.dst, len(got), c.what)
		}
	}
	buf := make([]byte, 1<<16)
	allocs := testing.AllocsPerRun(200, func() {
		r.run(toB, leak)
		for _, l := range []*dataplane.Link{r.tb, r.tc} {
			for {
				if _, err := unix.Read(r.peer[l], buf); err != nil {
					break
				}
			}
		}
	})
	if allocs > 0 {
		t.Fatalf("%.1f allocations per batch in a VRF", allocs)
	}
}

// TestVRFChurnStress: while a worker forwards batches from ta, ta and tb
// are enslaved to red, released, moved to a VRF made and deleted again,
// 200 times (run it under -race: the domain is one atomic word per link,
// read once per batch, and the tables and rules are published
// snapshots). Afterwards, with both in red again, the packets reach tb.
func TestVRFChurnStress(t *testing.T) {
	r := newRig(t)
	inVRF(t, r)
	rt := r.r
	red := rt.Links.ByName("red")
	pkt := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, host2, layers.IPProtocolUDP, 64)}, udp(100)...)...)
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		buf := make([]byte, 1<<16)
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			r.run(pkt, pkt, pkt, pkt)
			for {
				if _, err := unix.Read(r.peer[r.tb], buf); err != nil {
					break
				}
				n++
			}
		}
	}()
	for i := range 200 {
		must := func(err error) {
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		}
		switch i % 3 {
		case 0:
			must(rt.SetMaster(r.tb, nil))
			must(rt.SetMaster(r.tb, red))
		case 1:
			must(rt.SetMaster(r.ta, nil))
			must(rt.SetMaster(r.ta, red))
		default:
			v, err := rt.AddVRF("green", 0, 30, 0, nil)
			must(err)
			must(rt.SetMaster(r.ta, v))
			must(rt.DeleteLink(v))
			must(rt.SetMaster(r.ta, red))
		}
		for _, a := range []struct {
			l *dataplane.Link
			p string
		}{{r.ta, "2001:db8:1::1/64"}, {r.tb, "2001:db8:2::1/64"}} {
			if err := rt.AddAddr(a.l, netip.MustParsePrefix(a.p)); !errors.Is(err, dataplane.ErrAddrExists) {
				must(err) // the enslaved link's went with it
			}
		}
	}
	close(stop)
	n := <-done
	r.recv(r.tb)
	r.run(pkt)
	if got := r.recv(r.tb); len(got) != 1 {
		t.Fatalf("after the churn, tb got %d packets, want 1", len(got))
	}
	t.Logf("%d packets reached tb during 200 rounds of churn", n)
}
