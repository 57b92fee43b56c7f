package dataplane_test

import (
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"urouter/dataplane"
)

// TestTCPReset: a TCP segment to one of the router's addresses gets the
// reset Linux 6.18 sends for a closed port (checked against one in a
// netns): from the address it was sent to, hop limit 64, the DSCP without
// ECN, window 0, no options; never for a reset or a bad checksum.
func TestTCPReset(t *testing.T) {
	r := newRig(t)
	cases := []struct {
		name        string
		to          net.IP
		seg         layers.TCP
		payload     int
		rst         bool
		seq, ack    uint32
		flagACK     bool
		badChecksum bool
	}{
		{name: "SYN", to: routerAddr, seg: layers.TCP{SYN: true, Seq: 12345}, rst: true, seq: 0, ack: 12346, flagACK: true},
		{name: "SYN with data", to: routerAddr, seg: layers.TCP{SYN: true, Seq: 100}, payload: 10, rst: true, ack: 111, flagACK: true},
		{name: "ACK with data", to: routerAddr, seg: layers.TCP{ACK: true, Seq: 1000, Ack: 5000}, payload: 10, rst: true, seq: 5000},
		{name: "FIN+ACK", to: routerAddr, seg: layers.TCP{FIN: true, ACK: true, Seq: 7, Ack: 6000}, rst: true, seq: 6000},
		{name: "FIN", to: routerAddr, seg: layers.TCP{FIN: true, Seq: 3000}, rst: true, ack: 3001, flagACK: true},
		{name: "no flags", to: routerAddr, seg: layers.TCP{Seq: 3100}, rst: true, ack: 3100, flagACK: true},
		{name: "RST", to: routerAddr, seg: layers.TCP{RST: true, Seq: 5}},
		{name: "RST+ACK", to: routerAddr, seg: layers.TCP{RST: true, ACK: true, Seq: 5, Ack: 9}},
		{name: "SYN with a bad checksum", to: routerAddr, seg: layers.TCP{SYN: true, Seq: 1}, badChecksum: true},
		{name: "SYN to the other address", to: net.ParseIP("2001:db8:2::1"), seg: layers.TCP{SYN: true, Seq: 50}, rst: true, ack: 51, flagACK: true},
	}
	for _, c := range cases {
		seg := c.seg
		seg.SrcPort, seg.DstPort, seg.Window = 40001, 9, 1000
		ip := ipv6(host1, c.to, layers.IPProtocolTCP, 64)
		ip.TrafficClass, ip.FlowLabel = 0xbb, 0x12345
		pkt := craft(t, ip, &seg, gopacket.Payload(make([]byte, c.payload)))
		if c.badChecksum {
			pkt[len(pkt)-4] ^= 0xff // inside the checksum field (no payload)
		}
		before := r.ta.Stats()
		r.run(pkt)
		got := r.recv(r.ta)
		after := r.ta.Stats()
		if !c.rst {
			if len(got) != 0 {
				t.Errorf("%s: answered", c.name)
			}
			if c.badChecksum && after.Drops[dataplane.DropChecksum].Count != before.Drops[dataplane.DropChecksum].Count+1 {
				t.Errorf("%s: not counted as a bad checksum", c.name)
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("%s: %d answers, want a reset", c.name, len(got))
			continue
		}
		if dataplane.TransportSum(got[0][dataplane.VnetHdrLen:], 40, 6) != 0xffff {
			t.Errorf("%s: bad checksum on the reset", c.name)
		}
		p := decode(t, got[0], true)
		rip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
		rt := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if !rip.SrcIP.Equal(c.to) || !rip.DstIP.Equal(host1) || rip.HopLimit != 64 || rip.TrafficClass != 0xb8 {
			t.Errorf("%s: from %s to %s hop limit %d class %#x", c.name, rip.SrcIP, rip.DstIP, rip.HopLimit, rip.TrafficClass)
		}
		if !rt.RST || rt.ACK != c.flagACK || rt.SYN || rt.FIN || rt.Seq != c.seq || rt.Ack != c.ack ||
			rt.Window != 0 || rt.DataOffset != 5 || rt.SrcPort != 9 || rt.DstPort != 40001 {
			t.Errorf("%s: RST %v ACK %v seq %d ack %d window %d doff %d ports %d>%d", c.name, rt.RST, rt.ACK, rt.Seq, rt.Ack,
				rt.Window, rt.DataOffset, rt.SrcPort, rt.DstPort)
		}
	}
}

// TestUDPToTheRouter: a closed port answers a good datagram with Port
// Unreachable, and says nothing to one with a bad or zero checksum, which
// is counted.
func TestUDPToTheRouter(t *testing.T) {
	r := newRig(t)
	good := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, routerAddr, layers.IPProtocolUDP, 64)}, udp(10)...)...)
	bad := append([]byte(nil), good...)
	bad[dataplane.VnetHdrLen+40+6] ^= 0x55
	zero := append([]byte(nil), good...)
	zero[dataplane.VnetHdrLen+40+6], zero[dataplane.VnetHdrLen+40+7] = 0, 0
	r.run(good, bad, zero)
	got := r.recv(r.ta)
	if len(got) != 1 {
		t.Fatalf("%d answers, want one Port Unreachable", len(got))
	}
	if _, ic := icmpOf(t, got[0]); ic.TypeCode.Type() != 1 || ic.TypeCode.Code() != 4 {
		t.Errorf("answered %v", ic.TypeCode)
	}
	if n := r.ta.Stats().Drops[dataplane.DropChecksum].Count; n != 2 {
		t.Errorf("%d bad checksums counted, want 2", n)
	}
}
