package integration

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// TestVLANTagged: a frame tagged with a VLAN the router has no link for
// is another host's, as Linux has it (__netif_receive_skb_core marks it
// PACKET_OTHERHOST and ipv6_rcv drops it): echo requests tagged with VIDs
// 1, 100, 4000 and 4095 (802.1Q, and 802.1ad) from a raw socket are not
// answered, nor forwarded to another LAN, and each is counted
// (`unknown_vlan`); a priority-tagged one (VID 0) is handled as untagged.
// On a veth (AF_PACKET: the kernel takes the tag out of the frame), one
// whose link has a MAC of its own (its socket promiscuous), and a TAP
// (the tag comes inline).
func TestVLANTagged(t *testing.T) {
	parallel(t)
	l := newEtherLab(t, nil)
	// lan4: e1's second interface, the link's MAC not the interface's
	mustRun(t, "ip", "-n", l.r, "link", "add", "r4", "type", "veth", "peer", "name", "eth1", "netns", l.e1)
	mustRun(t, "ip", "-n", l.e1, "addr", "add", "2001:db8:a4::2/64", "dev", "eth1", "nodad")
	mustRun(t, "ip", "-n", l.e1, "link", "set", "eth1", "up")
	for _, cmd := range []string{"link add lan4 type host dev r4 address 02:00:00:00:a4:01", "link set lan4 up",
		"address add 2001:db8:a4::1/64 dev lan4"} {
		if _, e, st := l.d.run(strings.Fields(cmd)...); st != 0 {
			t.Fatalf("%s: %s", cmd, e)
		}
	}
	l.lanMAC["lan4"] = "02:00:00:00:a4:01"
	for _, c := range []struct {
		link, ns, dev, host, far string
	}{
		{"lan1", l.e1, "eth0", "2001:db8:a1::2", "2001:db8:a3::2"},
		{"lan4", l.e1, "eth1", "2001:db8:a4::2", "2001:db8:a3::2"},
		{"lan3", l.e3, "lan3", "2001:db8:a3::2", "2001:db8:a1::2"},
	} {
		t.Run(c.link, func(t *testing.T) {
			s := frameSocket(t, c.ns, c.dev)
			routerMAC, _ := net.ParseMAC(l.lanMAC[c.link])
			hostMAC, _ := net.ParseMAC(ifaceMAC(t, c.ns, c.dev))
			src, router, far := netip.MustParseAddr(c.host), netip.MustParseAddr(strings.TrimSuffix(c.host, "2")+"1"), netip.MustParseAddr(c.far)
			var id uint16
			echo := func(dst netip.Addr, tpid, tci uint16) []byte {
				id++
				p := icmp6(src, dst, header.ICMPv6EchoRequest, []byte{byte(id >> 8), byte(id), 0, 1, 'v', 'l', 'a', 'n'})
				tag := []byte{byte(tci >> 8), byte(tci), 0x86, 0xdd}
				return ether(routerMAC, hostMAC, tpid, append(tag, p...))
			}
			// answered: an echo reply for identifier id
			answered := func(want uint16) bool {
				_, ok := s.await(func(f []byte) bool {
					return len(f) >= 14+48 && binary.BigEndian.Uint16(f[12:]) == 0x86dd && f[14+6] == 58 &&
						f[14+40] == byte(header.ICMPv6EchoReply) && binary.BigEndian.Uint16(f[14+44:]) == want
				})
				return ok
			}
			before := linkDrops(t, l.d, c.link)["unknown_vlan"]
			// priority-tagged: handled as untagged, answered and forwarded
			for _, dst := range []netip.Addr{router, far} {
				s.send(t, echo(dst, 0x8100, 5<<13))
				if !answered(id) {
					t.Errorf("a priority-tagged (VID 0) echo request to %v: no answer", dst)
				}
			}
			sent := 0
			for _, vid := range []uint16{1, 100, 4000, 4095} {
				for _, tpid := range []uint16{0x8100, 0x88a8} {
					for _, dst := range []netip.Addr{router, far} {
						s.send(t, echo(dst, tpid, 3<<13|vid))
						sent++
					}
				}
			}
			if _, ok := s.await(func(f []byte) bool {
				return len(f) >= 14+48 && binary.BigEndian.Uint16(f[12:]) == 0x86dd && f[14+6] == 58 && f[14+40] == byte(header.ICMPv6EchoReply)
			}); ok {
				t.Errorf("an echo request tagged with a VLAN the router has none for was answered or forwarded")
			}
			if got := linkDrops(t, l.d, c.link)["unknown_vlan"] - before; got != uint64(sent) {
				o, _, _ := l.d.run("-s", "link", "show", c.link)
				t.Errorf("%d frames tagged with unknown VLANs, %d counted unknown_vlan\n%s", sent, got, o)
			}
			// and untagged still goes
			s.send(t, ether(routerMAC, hostMAC, 0x86dd, echo(router, 0, 0)[18:]))
			if !answered(id) {
				t.Error("an untagged echo request after the tagged ones: no answer")
			}
		})
	}
	if o, _, _ := l.d.run("-s", "link", "show", "lan1"); !strings.Contains(o, "    drop unknown_vlan 16\n") {
		t.Errorf("link show -s lan1 does not count the tagged frames:\n%s", o)
	}
}

// TestVLANTaggedMirrorTAP: a frame of another ethertype tagged with a
// VLAN ID (LLDP, VID 100) does not go up a TAP mirror, as the kernel's
// own LLDP would not see it without a VLAN device; priority-tagged (VID
// 0) and untagged ones do.
func TestVLANTaggedMirrorTAP(t *testing.T) {
	parallel(t)
	l := newMirrorLabOf(t, "tap", nil)
	hs, ks := frameSocket(t, l.h, "eth0"), frameSocket(t, l.r, "km1")
	lldp := func(tci uint16, tagged bool, what string) []byte {
		payload := []byte("urouter-" + what)
		if !tagged {
			return ether([]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, hostMAC(t, l), 0x88cc, payload)
		}
		return ether([]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, hostMAC(t, l), 0x8100, append([]byte{byte(tci >> 8), byte(tci), 0x88, 0xcc}, payload...))
	}
	leaked := false // a frame tagged with VID 100 reached km1
	up := func(what string) bool {
		_, ok := ks.await(func(f []byte) bool {
			leaked = leaked || strings.HasSuffix(string(f), "urouter-vid-100")
			return strings.HasSuffix(string(f), "urouter-"+what)
		})
		return ok
	}
	hs.send(t, lldp(100, true, "vid-100"))
	hs.send(t, lldp(0, true, "vid-0"))
	if !up("vid-0") {
		t.Error("a priority-tagged LLDP frame did not go up the TAP mirror")
	}
	hs.send(t, lldp(100, true, "vid-100"))
	hs.send(t, lldp(0, false, "untagged"))
	if !up("untagged") {
		t.Error("an untagged LLDP frame did not go up the TAP mirror")
	}
	if leaked {
		t.Error("an LLDP frame tagged with VID 100 went up the TAP mirror")
	}
}
