package dataplane_test

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"urouter/dataplane"
)

// TestSysctlEffects: what the packet path does with Linux's knobs, set by
// their names as `urouter sysctl -w` sets them.
func TestSysctlEffects(t *testing.T) {
	r := newRig(t)
	set := func(name, v string) { r.sysctl(t, name, v) }
	toHost2 := func(size int) []byte { return udpTo(t, host2, size) }
	echo := craft(t, ipv6(host1, routerAddr, layers.IPProtocolICMPv6, 64),
		&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}, &layers.ICMPv6Echo{Identifier: 1, SeqNumber: 1})

	t.Run("forwarding", func(t *testing.T) {
		set("net.ipv6.conf.all.forwarding", "0")
		r.run(toHost2(100))
		if got := r.recv(r.tb); len(got) != 0 {
			t.Errorf("forwarded %d packets with forwarding 0", len(got))
		}
		if n := r.ta.Stats().Drops[dataplane.DropNotForwarding].Count; n != 1 {
			t.Errorf("%d counted as not_forwarding, want 1", n)
		}
		if got := r.recv(r.ta); len(got) != 0 {
			t.Errorf("%d ICMPv6 errors for a packet not forwarded (Linux sends none)", len(got))
		}
		r.run(echo) // the router itself still answers
		if got := r.recv(r.ta); len(got) != 1 {
			t.Errorf("%d echo replies with forwarding 0", len(got))
		}
		set("net.ipv6.conf.all.forwarding", "1")
		r.run(toHost2(100))
		if got := r.recv(r.tb); len(got) != 1 {
			t.Errorf("forwarded %d packets with forwarding 1", len(got))
		}
	})

	t.Run("hop_limit", func(t *testing.T) {
		set("net.ipv6.conf.ta.hop_limit", "9")
		r.run(echo, udpTo(t, net.ParseIP("2001:db8:99::1"), 10))
		got := r.recv(r.ta)
		if len(got) != 2 {
			t.Fatalf("%d answers, want an echo reply and an error", len(got))
		}
		for _, b := range got {
			if ip, ic := icmpOf(t, b); ip.HopLimit != 9 {
				t.Errorf("%v out of ta with hop limit %d, want its hop_limit 9", ic.TypeCode, ip.HopLimit)
			}
		}
		set("net.ipv6.conf.ta.hop_limit", "64")
	})

	t.Run("mtu", func(t *testing.T) {
		set("net.ipv6.conf.tb.mtu", "1300") // tb's link MTU is 1400
		r.run(toHost2(1300))
		got := r.recv(r.ta)
		if len(got) != 1 {
			t.Fatalf("%d answers to a packet over tb's IPv6 MTU", len(got))
		}
		if _, ic := icmpOf(t, got[0]); ic.TypeCode.Type() != layers.ICMPv6TypePacketTooBig || binary.BigEndian.Uint32(ic.Payload[:4]) != 1300 {
			t.Errorf("%v with MTU %d, want Packet Too Big 1300", ic.TypeCode, binary.BigEndian.Uint32(ic.Payload[:4]))
		}
		if err := r.r.SetSysctl("net.ipv6.conf.tb.mtu", "1401"); err == nil {
			t.Errorf("an IPv6 MTU over the link's was taken")
		}
		if err := r.r.SetMTU(r.tb, 1400); err != nil { // a link MTU change resets it, as Linux
			t.Fatal(err)
		}
		if v, _ := r.r.Sysctl("net.ipv6.conf.tb.mtu"); v != "1400" {
			t.Errorf("tb's IPv6 MTU %s after its MTU was set to 1400", v)
		}
	})

	t.Run("disable_ipv6", func(t *testing.T) {
		set("net.ipv6.conf.tb.disable_ipv6", "1")
		r.run(toHost2(100))
		if got := r.recv(r.tb); len(got) != 0 {
			t.Errorf("%d packets out of a link with IPv6 disabled", len(got))
		}
		if len(r.tb.Addrs()) != 0 {
			t.Errorf("tb keeps %v with IPv6 disabled", r.tb.Addrs())
		}
		set("net.ipv6.conf.tb.disable_ipv6", "0")
	})
}

// TestSysctlHashFields: with fib_multipath_hash_policy 3, flows spread
// over a multipath route on the fields of fib_multipath_hash_fields
// alone: on the destination only, every flow to one address takes one
// path, where with ports (policy 1) they spread.
func TestSysctlHashFields(t *testing.T) {
	r := newRig(t)
	paths := func() int {
		var pkts [][]byte
		for i := 0; i < 64; i++ {
			pkts = append(pkts, craft(t, ipv6(host1, net.ParseIP("2001:db8:6b::1"), layers.IPProtocolUDP, 64),
				&layers.UDP{SrcPort: layers.UDPPort(1000 + i), DstPort: 53}, gopacket.Payload("x")))
		}
		r.run(pkts...)
		used := 0
		for _, l := range []*dataplane.Link{r.tb, r.tc} {
			if len(r.recv(l)) > 0 {
				used++
			}
		}
		return used
	}
	for _, kv := range [][2]string{{"net.ipv6.fib_multipath_hash_policy", "1"}} {
		if err := r.r.SetSysctl(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if n := paths(); n != 2 {
		t.Errorf("policy 1: 64 flows by port took %d paths, want 2", n)
	}
	for _, kv := range [][2]string{{"net.ipv6.fib_multipath_hash_policy", "3"}, {"net.ipv6.fib_multipath_hash_fields", "0x0002"}} {
		if err := r.r.SetSysctl(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if n := paths(); n != 1 {
		t.Errorf("policy 3 on the destination alone: 64 flows to one address took %d paths, want 1", n)
	}
	if err := r.r.SetSysctl("net.ipv6.fib_multipath_hash_fields", "0x0032"); err != nil { // and the ports
		t.Fatal(err)
	}
	if n := paths(); n != 2 {
		t.Errorf("policy 3 on destination and ports: 64 flows took %d paths, want 2", n)
	}
}

// TestSysctlRace: knobs written while packets go through (run with
// -race): the packet path reads them with atomic loads only.
func TestSysctlRace(t *testing.T) {
	r := newRig(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		vals := [][2]string{
			{"net.ipv6.conf.all.forwarding", "0"}, {"net.ipv6.conf.all.forwarding", "1"},
			{"net.ipv6.conf.tb.hop_limit", "7"}, {"net.ipv6.conf.tb.mtu", "1300"}, {"net.ipv6.conf.tb.mtu", "1400"},
			{"net.ipv6.fib_multipath_hash_policy", "3"}, {"net.ipv6.fib_multipath_hash_policy", "1"},
			{"net.ipv6.icmp.ratemask", "0-127"}, {"net.ipv6.icmp.ratemask", "0-1,3-127"},
			{"net.ipv6.conf.tc.disable_ipv6", "1"}, {"net.ipv6.conf.tc.disable_ipv6", "0"},
		}
		for i := 0; i < 300; i++ {
			kv := vals[i%len(vals)]
			if err := r.r.SetSysctl(kv[0], kv[1]); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	pkts := [][]byte{
		udpTo(t, host2, 1350), udpTo(t, net.ParseIP("2001:db8:6b::1"), 100), udpTo(t, net.ParseIP("2001:db8:99::1"), 100),
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		r.run(pkts...)
		for _, l := range []*dataplane.Link{r.ta, r.tb, r.tc} {
			r.recv(l)
		}
	}
}

// TestSysctlRateMask: net.ipv6.icmp.ratemask says which ICMPv6 types the
// limits hold back: by default not Packet Too Big.
func TestSysctlRateMask(t *testing.T) {
	r := newRig(t)
	set := func(name, v string) { r.sysctl(t, name, v) }
	toHost2 := func(size int) []byte { return udpTo(t, host2, size) }
	r.dp.SetICMPDestRate(1<<40, 2) // two errors to a destination, then none for long
	big := make([][]byte, 5)
	for i := range big {
		big[i] = toHost2(1400)
	}
	r.run(big...)
	if got := r.recv(r.ta); len(got) != 5 {
		t.Errorf("%d of 5 Packet Too Big: Linux's ratemask does not limit them", len(got))
	}
	set("net.ipv6.icmp.ratemask", "0-127")
	r.run(big...)
	if got := r.recv(r.ta); len(got) != 2 {
		t.Errorf("%d of 5 Packet Too Big with ratemask 0-127, want the burst of 2", len(got))
	}
	set("net.ipv6.icmp.ratemask", "0-1,3-127")
	r.dp.SetICMPDestRate(0, 0)
}

// sysctl writes a knob as `sysctl -w` does.
func (r *rig) sysctl(t *testing.T, name, v string) {
	t.Helper()
	if err := r.r.SetSysctl(name, v); err != nil {
		t.Fatalf("%s=%s: %v", name, v, err)
	}
}

// udpTo is a datagram from host1 with size bytes of payload.
func udpTo(t testing.TB, dst net.IP, size int) []byte {
	return craft(t, append([]gopacket.SerializableLayer{ipv6(host1, dst, layers.IPProtocolUDP, 64)}, udp(size)...)...)
}
