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

// Hash policies, Linux's net.ipv6.fib_multipath_hash_policy.
const (
	// PolicyL3: source, destination, flow label and next header.
	PolicyL3 = 0
	// PolicyL4: source, destination, ports and next header.
	PolicyL4 = 1
)

// Hasher hashes flows with one router's policy and seed, so that two
// routers in a row do not split flows alike (Linux seeds per boot).
type Hasher struct {
	Seed   uint64
	Policy uint8
}

// Hash spreads flows over paths: packets of one flow hash alike, so they
// take one path and stay in order. It allocates nothing.
func (h Hasher) Hash(f *Flow) uint32 {
	const k = 0x9e3779b97f4a7c15
	var x uint64
	if h.Policy == PolicyL4 {
		x = uint64(f.Proto)<<48 | uint64(f.SrcPort)<<32 | uint64(f.DstPort)<<16
	} else {
		x = uint64(f.Proto)<<48 | uint64(f.Label&0xfffff)
	}
	x ^= h.Seed
	for _, w := range [4]uint64{
		binary.LittleEndian.Uint64(f.Src[:8]), binary.LittleEndian.Uint64(f.Src[8:]),
		binary.LittleEndian.Uint64(f.Dst[:8]), binary.LittleEndian.Uint64(f.Dst[8:]),
	} {
		hi, lo := bits.Mul64(x^w, k)
		x = hi ^ lo
	}
	hi, lo := bits.Mul64(x, k)
	return uint32(hi ^ lo)
}
