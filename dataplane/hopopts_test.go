package dataplane_test

import (
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"urouter/dataplane"
)

// hbhPacket is a UDP packet from host1 to host2 behind a Hop-by-Hop header
// holding opts (padded by the caller to a multiple of 8 with the two
// header bytes); jumbo sets the payload length to 0.
func hbhPacket(opts []byte, jumbo bool) []byte {
	u := []byte{0x9c, 0x40, 0x1b, 0x59, 0, 12, 0, 0, 'p', 'i', 'n', 'g'} // ports 40000 -> 7001
	h := append([]byte{17, byte((len(opts)+2)/8 - 1)}, opts...)
	p := make([]byte, 40, 40+len(h)+len(u))
	binary.BigEndian.PutUint32(p, 6<<28)
	p[6], p[7] = 0, 64
	copy(p[8:], host1.To16())
	copy(p[24:], host2.To16())
	p = append(append(p, h...), u...)
	if !jumbo {
		binary.BigEndian.PutUint16(p[4:], uint16(len(p)-40))
	}
	return append(make([]byte, dataplane.VnetHdrLen), p...)
}

func jumboOpt(size uint32) []byte {
	o := []byte{0xc2, 4, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(o[2:], size)
	return o
}

// TestHopByHop: Hop-by-Hop options as a Linux 6.18 router treats them on
// a forwarded packet (each case was sent through one in a netns):
// forwarded, dropped, or answered with a Parameter Problem of that code
// pointing at that offset.
func TestHopByHop(t *testing.T) {
	const fwd, drop = -1, -2
	unknown := func(n int) []byte {
		var o []byte
		for i := 0; i < n; i++ {
			o = append(o, 0x1e, 0) // action 00, empty
		}
		return o
	}
	cases := []struct {
		name  string
		opts  []byte
		jumbo bool
		code  int // fwd, drop, or the Parameter Problem's code
		ptr   uint32
	}{
		{"Pad1 and PadN", []byte{0, 1, 3, 0, 0, 0}, false, fwd, 0},
		{"six Pad1", []byte{0, 0, 0, 0, 0, 0}, false, fwd, 0},
		{"PadN with a non-zero byte", []byte{1, 4, 0, 0, 1, 0}, false, drop, 0},
		{"eight bytes of padding in a row", []byte{1, 6, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0}, false, drop, 0},
		{"Router Alert", []byte{5, 2, 0, 0, 1, 0}, false, fwd, 0},
		{"Router Alert of length 4", []byte{5, 4, 0, 0, 0, 0}, false, drop, 0},
		{"unknown, action 00", []byte{0x1e, 4, 1, 2, 3, 4}, false, fwd, 0},
		{"unknown, action 01", []byte{0x5e, 4, 1, 2, 3, 4}, false, drop, 0},
		{"unknown, action 10", []byte{0x9e, 4, 1, 2, 3, 4}, false, 2, 42},
		{"unknown, action 10, further in", []byte{1, 0, 0x9e, 2, 1, 2}, false, 2, 44},
		{"unknown, action 11", []byte{0xde, 4, 1, 2, 3, 4}, false, 2, 42},
		{"Jumbo 70000 with a payload length", jumboOpt(70000), false, 0, 42},
		{"Jumbo 1000 with a payload length", jumboOpt(1000), false, 0, 44},
		{"Jumbo misaligned", append(append([]byte{0}, jumboOpt(70000)...), 0), true, drop, 0},
		{"Jumbo 1000, payload length 0", jumboOpt(1000), true, 0, 44},
		{"Jumbo 70000, payload length 0, a short packet", jumboOpt(70000), true, drop, 0},
		{"payload length 0 without a Jumbo", []byte{1, 4, 0, 0, 0, 0}, true, drop, 0},
		{"8 unknown options", append(unknown(8), 1, 4, 0, 0, 0, 0), false, fwd, 0},
		{"9 unknown options", append(unknown(9), 1, 2, 0, 0), false, drop, 0},
		{"CALIPSO", []byte{7, 4, 0, 0, 0, 0}, false, drop, 0},
		{"an option past the header's end", []byte{0x1e, 9, 0, 0, 0, 0}, false, drop, 0},
		{"the header past the packet", []byte{0, 0, 0, 0, 0, 0}, false, drop, 0},
	}
	for _, c := range cases {
		r := newRig(t)
		pkt := hbhPacket(c.opts, c.jumbo)
		if c.name == "the header past the packet" {
			pkt[dataplane.VnetHdrLen+41] = 9
		}
		r.run(pkt)
		out, back := r.recv(r.tb), r.recv(r.ta)
		drops := r.ta.Stats().RxDropped
		switch c.code {
		case fwd:
			if len(out) != 1 || len(back) != 0 || drops != 0 {
				t.Errorf("%s: %d forwarded, %d answers, %d drops; want it forwarded", c.name, len(out), len(back), drops)
			} else if p := decode(t, out[0], true); p.Layer(layers.LayerTypeIPv6).(*layers.IPv6).HopLimit != 63 {
				t.Errorf("%s: forwarded without its hop limit decremented", c.name)
			}
		case drop:
			if len(out) != 0 || len(back) != 0 || drops != 1 {
				t.Errorf("%s: %d forwarded, %d answers, %d drops; want it dropped", c.name, len(out), len(back), drops)
			}
		default:
			if len(out) != 0 || len(back) != 1 || drops != 1 {
				t.Errorf("%s: %d forwarded, %d answers, %d drops; want a Parameter Problem", c.name, len(out), len(back), drops)
				continue
			}
			ip, ic := icmpOf(t, back[0])
			if ic.TypeCode.Type() != 4 || int(ic.TypeCode.Code()) != c.code || binary.BigEndian.Uint32(ic.Payload[:4]) != c.ptr {
				t.Errorf("%s: %v pointer %d, want Parameter Problem code %d pointer %d", c.name, ic.TypeCode,
					binary.BigEndian.Uint32(ic.Payload[:4]), c.code, c.ptr)
			}
			if !ip.SrcIP.Equal(routerAddr) {
				t.Errorf("%s: from %s", c.name, ip.SrcIP)
			}
		}
	}
}
