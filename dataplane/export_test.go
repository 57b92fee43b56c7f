package dataplane

import (
	"net/netip"
	"time"

	"urouter/dataplane/port"
)

// Hooks for the tests of this directory, which are package dataplane_test
// so that they can build the router through package router, as the daemon
// does.

// TestWorker is a worker driven by a test instead of a port's reads.
type TestWorker struct{ w *worker }

// NewTestWorker makes a worker for link l (which must still have its
// port) and registers it with the dataplane, so that Remove waits for its
// batches.
func NewTestWorker(dp *Dataplane, l *Link, id int) *TestWorker {
	w := newWorker(dp, l, l.portOf(), 0, id)
	dp.mu.Lock()
	ws := append(append([]*worker(nil), dp.snapshot()...), w)
	dp.workers.Store(&ws)
	dp.mu.Unlock()
	return &TestWorker{w: w}
}

// Forward routes pkts (each a virtio_net_hdr and a packet) as one batch.
func (t *TestWorker) Forward(pkts ...[]byte) {
	for i, p := range pkts {
		t.w.sizes[i] = copy(t.w.bufs[i], p)
	}
	t.run(len(pkts))
}

// ForwardExact routes pkts as one batch in buffers of exactly their size,
// so that a read past a packet's end panics.
func (t *TestWorker) ForwardExact(pkts ...[]byte) {
	saved := t.w.bufs
	for i, p := range pkts {
		t.w.bufs[i] = append([]byte(nil), p...)
		t.w.sizes[i] = len(p)
	}
	t.run(len(pkts))
	t.w.bufs = saved
}

func (t *TestWorker) run(n int) {
	t.w.epoch.Add(1)
	t.w.forward(n)
	t.w.epoch.Add(1)
}

// Segment cuts super-packet b (virtio_net_hdr and packet) for link out,
// as the worker does for an egress that cannot take it, and sends it.
func (t *TestWorker) Segment(b []byte, out *Link) {
	k := &pkt{b: b, p: b[vnetHdrLen:], vh: port.DecodeVnet(b)}
	t.w.segment(k, out)
	t.w.flush()
}

// What the tests read of packets.
const VnetHdrLen = vnetHdrLen

// VnetGSO returns a virtio_net_hdr's GSO type and size, and checksum start
// and offset.
func VnetGSO(b []byte) (gsoType uint8, gsoSize, csumStart, csumOffset uint16) {
	h := port.DecodeVnet(b)
	return h.GSOType, h.GSOSize, h.CsumStart, h.CsumOffset
}

// TransportSum sums a transport segment at p[l4:] with its pseudo-header:
// 0xffff for a valid checksum.
func TransportSum(p []byte, l4 int, proto byte) uint16 { return transportSum(p, l4, proto) }

// DestLimiter is the per-destination ICMPv6 limiter alone.
type DestLimiter struct{ d destBuckets }

func NewDestLimiter(interval time.Duration, burst int) *DestLimiter {
	l := &DestLimiter{}
	l.d.set(interval, burst)
	return l
}

func (l *DestLimiter) Allow(dst [16]byte, nowNs int64) bool { return l.d.allow(&dst, nowNs) }

// NewTestMirrorWorker is a worker that routes batches as the kernel's,
// sent out of link l's mirror (which has no kernel side).
func NewTestMirrorWorker(dp *Dataplane, l *Link, id int) *TestWorker {
	t := NewTestWorker(dp, l, id)
	t.w.own = &Mirror{link: l}
	return t
}

// ForwardOwn routes pkts as one batch the kernel sent out of the mirror.
func (t *TestWorker) ForwardOwn(pkts ...[]byte) {
	for i, p := range pkts {
		t.w.sizes[i] = copy(t.w.bufs[i], p)
	}
	t.w.epoch.Add(1)
	t.w.forwardOwn(len(pkts))
	t.w.epoch.Add(1)
}

// Class is the CoPP class of b (virtio_net_hdr and packet) punted to the
// router, given up a mirror if toKernel.
func (t *TestWorker) Class(b []byte, toKernel bool) CoPPClass {
	k := &pkt{b: b}
	if !t.w.parse(k) {
		return CoPPOther
	}
	return t.w.dp.peers.coppClass(k.p, &k.l4, toKernel, t.w.dp.now())
}

// IsPeer reports whether a counts as a session peer after from now.
func (dp *Dataplane) IsPeer(a netip.Addr, after time.Duration) bool {
	b := a.As16()
	return dp.peers.has(&b, coarse(dp.now())+uint64(after/time.Second))
}

// SetClock gives the limiters and the peers the clock now (nanoseconds),
// which the test moves.
func (dp *Dataplane) SetClock(now func() int64) { dp.clock.Store(&now) }

// SwapBuffers swaps the worker's read buffers i and j, as an Ethernet
// reader does when it keeps a batch's frames together.
func (t *TestWorker) SwapBuffers(i, j int) { t.w.bufs[i], t.w.bufs[j] = t.w.bufs[j], t.w.bufs[i] }
