package dataplane

import (
	"encoding/binary"
	"testing"

	"urouter/dataplane/port"
)

// BenchmarkEtherRead reads batches of 64 frames to the router's MAC, each
// an IPv6 packet for the packet path: what the Ethernet reader adds per
// frame (its checks of the tag, ethertype and MAC), 0 allocations.
func BenchmarkEtherRead(b *testing.B) {
	_, e, f := etherLink(b)
	e.io = &repeatFrames{fakeFrames: f, mac: e.mac}
	bufs, sizes := make([][]byte, 64), make([]int, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 2048)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n, err := e.ReadBatch(0, bufs, sizes); n != 64 || err != nil {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/packet")
}

// repeatFrames reads a full batch of the same unicast IPv6 frame's header
// each time, untagged: no tag is written (the packet is left as it is:
// the reader looks at its header only).
type repeatFrames struct {
	*fakeFrames
	mac [6]byte
}

func (r *repeatFrames) ReadFrames(_ int, bufs [][]byte, hdrs []port.EthHdr, tags []port.VLANTag, sizes []int) (int, error) {
	for i := range bufs {
		copy(hdrs[i][:6], r.mac[:])
		binary.BigEndian.PutUint16(hdrs[i][12:], port.EtherTypeIPv6)
		sizes[i] = vnetHdrLen + ipv6Len + 64
	}
	return len(bufs), nil
}
