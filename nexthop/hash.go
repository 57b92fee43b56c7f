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
	// PolicyInnerL3: the inner packet's L3 fields if it is encapsulated;
	// the router hashes no inner packet, so it is PolicyL3.
	PolicyInnerL3 = 2
	// PolicyFields: the fields of Hasher.Fields.
	PolicyFields = 3
)

// Linux's fib_multipath_hash_fields, for PolicyFields; the inner ones
// (0x40 and up) hash nothing here.
const (
	FieldSrcIP = 1 << iota
	FieldDstIP
	FieldProto
	FieldFlowLabel
	FieldSrcPort
	FieldDstPort
)

// Hasher hashes flows with one router's policy and seed, so that two
// routers in a row do not split flows alike (Linux seeds per boot).
type Hasher struct {
	Seed   uint64
	Policy uint8
	Fields uint32 // for PolicyFields
}

func (h Hasher) fields() uint32 {
	switch h.Policy {
	case PolicyL4:
		return FieldSrcIP | FieldDstIP | FieldProto | FieldSrcPort | FieldDstPort
	case PolicyFields:
		return h.Fields
	}
	return FieldSrcIP | FieldDstIP | FieldProto | FieldFlowLabel
}

// Hash spreads flows over paths: packets of one flow hash alike, so they
// take one path and stay in order. It allocates nothing.
func (h Hasher) Hash(f *Flow) uint32 {
	const k = 0x9e3779b97f4a7c15
	fs := h.fields()
	var x uint64
	if fs&FieldProto != 0 {
		x |= uint64(f.Proto) << 48
	}
	if fs&FieldSrcPort != 0 {
		x |= uint64(f.SrcPort) << 32
	}
	if fs&FieldDstPort != 0 {
		x |= uint64(f.DstPort) << 16
	}
	if fs&FieldFlowLabel != 0 {
		x ^= uint64(f.Label & 0xfffff)
	}
	x ^= h.Seed
	var src, dst [16]byte
	if fs&FieldSrcIP != 0 {
		src = f.Src
	}
	if fs&FieldDstIP != 0 {
		dst = f.Dst
	}
	for _, w := range [4]uint64{
		binary.LittleEndian.Uint64(src[:8]), binary.LittleEndian.Uint64(src[8:]),
		binary.LittleEndian.Uint64(dst[:8]), binary.LittleEndian.Uint64(dst[8:]),
	} {
		hi, lo := bits.Mul64(x^w, k)
		x = hi ^ lo
	}
	hi, lo := bits.Mul64(x, k)
	return uint32(hi ^ lo)
}
