package dataplane_test

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"
)

// FuzzForward feeds arbitrary bytes (a virtio_net_hdr and a packet, split
// into up to three packets of one batch) through the packet path: it
// must not panic, and never reads past a packet (each is given exactly
// its own bytes: a slice past its end would panic).
func FuzzForward(f *testing.F) {
	seed := func(ls ...gopacket.SerializableLayer) {
		f.Add(craft(f, ls...), uint8(0))
	}
	seed(ipv6(host1, host2, layers.IPProtocolUDP, 64), &layers.UDP{SrcPort: 1, DstPort: 2}, gopacket.Payload("x"))
	seed(ipv6(host1, routerAddr, layers.IPProtocolICMPv6, 64),
		&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}, &layers.ICMPv6Echo{}, gopacket.Payload("x"))
	seed(ipv6(host1, net.ParseIP("2001:db8:99::1"), layers.IPProtocolTCP, 64), &layers.TCP{SrcPort: 1, DstPort: 2, DataOffset: 5})
	seed(ipv6(host1, net.ParseIP("2001:db8:3::2"), layers.IPProtocolTCP, 64), &layers.TCP{SrcPort: 1, DstPort: 2, DataOffset: 5},
		gopacket.Payload(make([]byte, 3000)))
	chain := craft(f, ipv6(host1, host2, 60, 64), gopacket.Payload([]byte{44, 0, 1, 4, 0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 2, 0, 9, 0, 0, 'x'}))
	f.Add(chain, uint8(1))
	gso := craft(f, ipv6(host1, net.ParseIP("2001:db8:3::2"), layers.IPProtocolTCP, 64),
		&layers.TCP{SrcPort: 1, DstPort: 2, DataOffset: 5}, gopacket.Payload(make([]byte, 3000)))
	gso[0], gso[1] = unix.VIRTIO_NET_HDR_F_NEEDS_CSUM, unix.VIRTIO_NET_HDR_GSO_TCPV6
	binary.LittleEndian.PutUint16(gso[4:], 1000)
	binary.LittleEndian.PutUint16(gso[6:], 40)
	binary.LittleEndian.PutUint16(gso[8:], 16)
	f.Add(gso, uint8(2))
	r := newRig(f)
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		if len(data) > 65535+40 {
			return
		}
		parts := [][]byte{data}
		if s := int(split); s > 0 && s < len(data) && split%3 != 0 {
			parts = [][]byte{data[:s], data[s:], data}
		}
		r.w.ForwardExact(parts...) // exactly the packets: nothing past them to read
		for _, fd := range r.peer {
			buf := make([]byte, 1<<17)
			for {
				if _, err := unix.Read(fd, buf); err != nil {
					break
				}
			}
		}
	})
}
