package dataplane_test

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/nexthop"
	"urouter/seg6"
)

// TestSRv6EncapGSO: a TCP super-packet of almost 64 KiB to a seg6 route
// (its outer packet longer than an IPv6 payload length can say) leaves
// tb cut into segments, each encapsulated: the outer and inner payload
// lengths its own, the TCP checksum over the inner pseudo-header, the
// sequence numbers in order. The kernel could not cut IPv6 in IPv6 that
// a virtio_net_hdr cannot mark so.
func TestSRv6EncapGSO(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	const mss, size = 1200, 65400
	r.run(superTCP(t, net.ParseIP("2001:db8:9::1"), mss, size))
	segs := r.recv(r.tb)
	if want := (size + mss - 1) / mss; len(segs) != want {
		t.Fatalf("%d segments on tb, want %d", len(segs), want)
	}
	seq, total := uint32(7), 0
	for i, s := range segs {
		p := s[dataplane.VnetHdrLen:]
		h := seg6.SRHAt(p, 40)
		if h == nil || int(binary.BigEndian.Uint16(p[4:])) != len(p)-40 {
			t.Fatalf("segment %d: SRH % x, outer payload length %d of %d", i, []byte(h), binary.BigEndian.Uint16(p[4:]), len(p)-40)
		}
		in := p[40+h.Len():]
		if int(binary.BigEndian.Uint16(in[4:])) != len(in)-40 || dataplane.TransportSum(in, 40, 6) != 0xffff {
			t.Fatalf("segment %d: inner payload length %d of %d, checksum bad: %v", i, binary.BigEndian.Uint16(in[4:]), len(in)-40,
				dataplane.TransportSum(in, 40, 6) != 0xffff)
		}
		if got := binary.BigEndian.Uint32(in[44:]); got != seq {
			t.Errorf("segment %d: seq %d, want %d", i, got, seq)
		}
		seq += uint32(len(in) - 60)
		total += len(in) - 60
	}
	if total != size {
		t.Errorf("%d bytes of payload through, want %d", total, size)
	}
}

// superTCP is a TCP super-packet of size bytes from host1 to dst, its
// segments mss bytes, its checksum left to offload as a sender leaves it
// (the pseudo-header's sum in the field).
func superTCP(t testing.TB, dst net.IP, mss, size int) []byte {
	tcp := &layers.TCP{SrcPort: 5555, DstPort: 80, Seq: 7, ACK: true, Window: 100, DataOffset: 5}
	b := craft(t, ipv6(host1, dst, layers.IPProtocolTCP, 64), tcp, gopacket.Payload(make([]byte, size)))
	b[0], b[1] = unix.VIRTIO_NET_HDR_F_NEEDS_CSUM, unix.VIRTIO_NET_HDR_GSO_TCPV6
	binary.LittleEndian.PutUint16(b[2:], 60)
	binary.LittleEndian.PutUint16(b[4:], uint16(mss))
	binary.LittleEndian.PutUint16(b[6:], 40)
	binary.LittleEndian.PutUint16(b[8:], 16)
	binary.BigEndian.PutUint16(b[dataplane.VnetHdrLen+40+16:], ^dataplane.TransportSum(b[dataplane.VnetHdrLen:dataplane.VnetHdrLen+40], 40, 6))
	return b
}

// TestSRv6InlineGSO: a super-packet that H.Insert gave an SRH leaves
// whole by a link that takes super-packets (the kernel segments IPv6
// with extension headers itself), its offsets moved past the SRH; by one
// that does not, cut by urouter, each segment's checksum over the final
// destination's pseudo-header (RFC 8200 8.1), not the first segment's.
func TestSRv6InlineGSO(t *testing.T) {
	r := newRig(t)
	for _, rr := range []struct {
		dst, seg string
		l        *dataplane.Link
	}{{"2001:db8:7a::/64", "2001:db8:2::5", r.tb}, {"2001:db8:7b::/64", "2001:db8:3::5", r.tc}} {
		e, err := seg6.NewEncap(seg6.ModeInline, seg6.BuildSRH([]netip.Addr{netip.MustParseAddr(rr.seg), netip.IPv6Unspecified()}))
		if err != nil {
			t.Fatal(err)
		}
		x := r.r.Tables.Main().Begin()
		err = x.Add(fib6.Route{Dst: netip.MustParsePrefix(rr.dst), Attrs: fib6.Attrs{Metric: 1024, Nexthop: nexthop.Nexthop{Link: rr.l.Index, Encap: &seg6.State{Encap: e}}}})
		x.Commit()
		if err != nil {
			t.Fatal(err)
		}
	}
	const mss, size = 1200, 30000
	r.run(superTCP(t, net.ParseIP("2001:db8:7a::1"), mss, size))
	whole := r.recv(r.tb)
	if len(whole) != 1 {
		t.Fatalf("%d packets on tb, want the super-packet whole", len(whole))
	}
	vh, p := whole[0][:dataplane.VnetHdrLen], whole[0][dataplane.VnetHdrLen:]
	h := seg6.SRHAt(p, 40)
	if h == nil || vh[1] != unix.VIRTIO_NET_HDR_GSO_TCPV6 || int(binary.LittleEndian.Uint16(vh[6:])) != 40+h.Len() || len(p) != 40+h.Len()+20+size {
		t.Errorf("on tb: virtio_net_hdr % x, SRH % x, %d bytes", vh, []byte(h), len(p))
	}
	r.run(superTCP(t, net.ParseIP("2001:db8:7b::1"), mss, size))
	segs := r.recv(r.tc)
	if want := (size + mss - 1) / mss; len(segs) != want {
		t.Fatalf("%d segments on tc, want %d", len(segs), want)
	}
	final := tcpip.AddrFrom16Slice(net.ParseIP("2001:db8:7b::1"))
	for i, p := range segs { // tc has no virtio_net_hdr
		h := seg6.SRHAt(p, 40)
		if h == nil || dstOf(p) != netip.MustParseAddr("2001:db8:3::5") {
			t.Fatalf("segment %d: to %v, SRH % x", i, dstOf(p), []byte(h))
		}
		l4 := p[40+h.Len():]
		sum := header.PseudoHeaderChecksum(6, tcpip.AddrFrom16Slice(host1), final, uint16(len(l4)))
		if checksum.Checksum(l4, sum) != 0xffff {
			t.Fatalf("segment %d: TCP checksum not over the final destination's pseudo-header", i)
		}
	}
}
