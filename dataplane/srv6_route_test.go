package dataplane_test

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/nexthop"
	"urouter/rules"
	"urouter/seg6"
)

// TestSRv6Own: the kernel's packets out of a mirror to a seg6 route's
// prefix are encapsulated too (Linux's output redirect), keeping the hop
// limit the kernel gave them.
func TestSRv6Own(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	mw := dataplane.NewTestMirrorWorker(r.dp, r.ta, 1)
	mw.ForwardOwn(craft(t, append([]gopacket.SerializableLayer{ipv6(routerAddr, net.ParseIP("2001:db8:9::1"), layers.IPProtocolUDP, 30)}, udp(100)...)...))
	got := r.recv(r.tb)
	if len(got) != 1 {
		t.Fatalf("tb got %d packets, want the kernel's one, encapsulated", len(got))
	}
	p := got[0][dataplane.VnetHdrLen:]
	if h := seg6.SRHAt(p, 40); h == nil || dstOf(p) != netip.MustParseAddr("2001:db8:2::5") || p[7] != 30 || dstOf(p[40+h.Len():]) != netip.MustParseAddr("2001:db8:9::1") {
		t.Errorf("the kernel's packet left as % x", p[:min(len(p), 80)])
	}
}

// TestSRv6OwnAnswers: the router's own answers to a source behind a seg6
// route leave encapsulated (Linux's seg6_output): an echo reply and a
// Time Exceeded, each inside an outer header to the route's first
// segment, whose hop limit is the inner's (tb's 64: not forwarded).
func TestSRv6OwnAnswers(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	far := net.ParseIP("2001:db8:9::1")
	expired := craft(t, append([]gopacket.SerializableLayer{ipv6(far, net.ParseIP("2001:db8:3::9"), layers.IPProtocolUDP, 1)}, udp(100)...)...)
	r.run(echoRequest(t, far, net.ParseIP("2001:db8:1::1")), expired)
	got := r.recv(r.tb)
	if len(got) != 2 {
		t.Fatalf("tb got %d packets, want the echo reply and the Time Exceeded", len(got))
	}
	for i, want := range []layers.ICMPv6TypeCode{layers.CreateICMPv6TypeCode(129, 0), layers.CreateICMPv6TypeCode(3, 0)} {
		p := got[i][dataplane.VnetHdrLen:]
		h := seg6.SRHAt(p, seg6.Find(p, false))
		if h == nil || dstOf(p) != netip.MustParseAddr("2001:db8:2::5") || p[7] != 64 || h.SegmentsLeft() != 1 {
			t.Errorf("answer %d left as % x", i, p[:min(len(p), 80)])
			continue
		}
		inner := append(make([]byte, dataplane.VnetHdrLen), p[40+h.Len():]...)
		ip, ic := icmpOf(t, inner)
		if ic.TypeCode != want || !ip.DstIP.Equal(far) || ip.HopLimit != 64 {
			t.Errorf("answer %d inside: %v to %v, hop limit %d; want %v to %v", i, ic.TypeCode, ip.DstIP, ip.HopLimit, want, far)
		}
	}
}

// TestSRv6Multipath: each path of a multipath route has its own
// encapsulation; a flow keeps to one path, and flows take both.
func TestSRv6Multipath(t *testing.T) {
	r := newRig(t)
	var ms []nexthop.Member
	for _, sid := range []string{"2001:db8:2::8a", "2001:db8:2::8b"} {
		e, err := seg6.NewEncap(seg6.ModeEncap, seg6.BuildSRH([]netip.Addr{netip.MustParseAddr(sid)}))
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, nexthop.Member{Nexthop: nexthop.Nexthop{Link: r.tb.Index, Encap: &seg6.State{Encap: e}}, Weight: 1})
	}
	x := r.r.Tables.Main().Begin()
	err := x.Add(fib6.Route{Dst: netip.MustParsePrefix("2001:db8:8::/64"), Attrs: fib6.Attrs{Metric: 1024, Group: nexthop.NewGroup(ms)}})
	x.Commit()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[netip.Addr]int{}
	for i := range 32 {
		src := net.ParseIP(fmt.Sprintf("2001:db8:1::%x", 0x100+i)) // the default hash is L3's
		var sids []netip.Addr
		for range 2 {
			r.run(udpPorts(t, src, net.ParseIP("2001:db8:8::1"), 1000, 53))
			for _, b := range r.recv(r.tb) {
				sids = append(sids, dstOf(b[dataplane.VnetHdrLen:]))
			}
		}
		if len(sids) != 2 || sids[0] != sids[1] {
			t.Fatalf("flow from %v left by %v, want twice the same SID", src, sids)
		}
		seen[sids[0]]++
	}
	if len(seen) != 2 {
		t.Errorf("32 flows took %v, want both paths' SIDs", seen)
	}
}

// TestSRv6RulesSeeOuter: rules with ipproto see an encapsulated packet
// as Linux's flow dissector does (past the SRH, stopping at the inner
// IPv6): H.Encaps's outer packet is ipproto ipv6, and goes by the table
// a rule on that gives it; H.Insert's keeps the packet's own, udp.
func TestSRv6RulesSeeOuter(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	ins, err := seg6.NewEncap(seg6.ModeInline, seg6.BuildSRH([]netip.Addr{netip.MustParseAddr("2001:db8:2::5"), netip.IPv6Unspecified()}))
	if err != nil {
		t.Fatal(err)
	}
	for table, rt := range map[uint32]fib6.Route{
		300: {Dst: netip.MustParsePrefix("2001:db8:2::5/128"), Attrs: fib6.Attrs{Metric: 1, Nexthop: nexthop.Nexthop{Link: r.tc.Index}}},
		254: {Dst: netip.MustParsePrefix("2001:db8:7c::/64"), Attrs: fib6.Attrs{Metric: 1, Nexthop: nexthop.Nexthop{Link: r.tb.Index, Encap: &seg6.State{Encap: ins}}}},
	} {
		x := r.r.Tables.Ensure(table).Begin()
		err := x.Add(rt)
		x.Commit()
		if err != nil {
			t.Fatal(err)
		}
	}
	// the first segment's own route is main's (tb); table 300's (tc) is
	// for what the rules give it
	rx := r.r.Rules.Begin()
	_, err1 := rx.Add(rules.Rule{Pref: 100, IPProto: seg6.ProtoIPv6, Action: rules.ToTable, Table: 300}, true)
	_, err2 := rx.Add(rules.Rule{Pref: 101, IPProto: 17, Dst: netip.MustParsePrefix("2001:db8:2::5/128"), Action: rules.ToTable, Table: 300}, true)
	rx.Commit()
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	r.run(udpTo(t, net.ParseIP("2001:db8:9::1"), 100))
	if got := r.recv(r.tc); len(got) != 1 || dstOf(got[0]) != netip.MustParseAddr("2001:db8:2::5") {
		t.Errorf("H.Encaps's outer packet: %d on tc, want 1 by table 300 (ipproto ipv6)", len(got))
	}
	r.run(udpTo(t, net.ParseIP("2001:db8:7c::1"), 100))
	if got := r.recv(r.tc); len(got) != 1 || dstOf(got[0]) != netip.MustParseAddr("2001:db8:2::5") {
		t.Errorf("H.Insert's packet: %d on tc, want 1 by table 300 (ipproto udp past the SRH)", len(got))
	}
}
