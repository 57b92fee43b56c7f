package nexthop

import (
	"encoding/binary"
	"math/bits"
)

// Flow is what multipath hashing looks at: the addresses, the transport
// protocol and ports when the packet shows them, and the flow label.
type Flow struct {
	Src, Dst         [16]byte
	Proto            uint8
	SrcPort, DstPort uint16
	Label            uint32
}

// Hash spreads flows over paths: packets of one flow hash alike, so they
// take one path and stay in order. It allocates nothing.
func (f *Flow) Hash() uint32 {
	const k = 0x9e3779b97f4a7c15
	h := uint64(f.Proto)<<48 | uint64(f.SrcPort)<<32 | uint64(f.DstPort)<<16 | uint64(f.Label&0xfffff)
	for _, w := range [4]uint64{
		binary.LittleEndian.Uint64(f.Src[:8]), binary.LittleEndian.Uint64(f.Src[8:]),
		binary.LittleEndian.Uint64(f.Dst[:8]), binary.LittleEndian.Uint64(f.Dst[8:]),
	} {
		hi, lo := bits.Mul64(h^w, k)
		h = hi ^ lo
	}
	hi, lo := bits.Mul64(h, k)
	return uint32(hi ^ lo)
}
