package dataplane

import (
	"errors"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"urouter/fib6"
)

// batchSize is how many packets a worker reads before it routes them.
const batchSize = 64

// worker owns one TUN queue: it reads batches from it and routes them.
// Everything it touches per packet is its own; shared state (links,
// tables, addresses) is read through atomic pointers.
type worker struct {
	dp    *Dataplane
	in    *Link
	q     *tunQueue
	id    int
	vnet  bool
	epoch atomic.Uint64 // odd while a batch is in flight (see synchronize)

	bufs   [batchSize][]byte
	sizes  [batchSize]int
	nread  int
	err    error
	readFn func(fd uintptr) bool
	// single: traffic is sparse, so forward each packet as soon as it is
	// read rather than pay one more read (EAGAIN) to learn the batch has
	// ended: ~7 µs per hop of ping RTT here. calls counts the callbacks of
	// one Read; a packet waiting at the first one means traffic is dense.
	single bool
	calls  int

	pk       [batchSize]pkt
	dsts     [batchSize][16]byte
	srcs     [batchSize][16]byte
	hashes   [batchSize]uint32
	res      [batchSize]*fib6.Attrs
	pending  [batchSize]int
	ctrs     []*Counters // by link index
	scratch  []byte      // ICMPv6 messages
	segments []byte      // segmentation output
}

func newWorker(dp *Dataplane, l *Link, q *tunQueue, id int) *worker {
	w := &worker{dp: dp, in: l, q: q, id: id, vnet: l.dev.Load().vnet}
	for i := range w.bufs {
		w.bufs[i] = make([]byte, vnetHdrLen+maxPacket)
	}
	w.scratch = make([]byte, vnetHdrLen+MinMTU)
	w.segments = make([]byte, vnetHdrLen+maxPacket)
	w.readFn = w.readBatch
	w.single = true
	return w
}

// readBatch is the netpoller callback: it reads packets until the queue
// is empty or the batch full (in single mode: one packet), and asks to be
// called again (after the fd is readable) only when it read nothing.
func (w *worker) readBatch(fd uintptr) bool {
	off := 0
	if !w.vnet {
		off = vnetHdrLen // keep the header's room; it reads as zeros
	}
	w.calls++
	for w.nread < batchSize {
		if w.single && w.nread == 1 {
			if w.calls == 1 {
				w.single = false // a packet was already queued: dense
			} else {
				return true
			}
		}
		b := w.bufs[w.nread]
		n, err := unix.Read(int(fd), b[off:])
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return w.nread > 0
		}
		if err != nil {
			w.err = err
			return true
		}
		if off > 0 {
			clear(b[:off])
		}
		w.sizes[w.nread] = off + n
		w.nread++
	}
	return true
}

// RoutineRead reads and routes batches until the link's device closes.
func (w *worker) RoutineRead() {
	for {
		w.nread, w.err, w.calls = 0, nil, 0
		err := w.q.rc.Read(w.readFn)
		if w.nread == 1 {
			w.single = true
		}
		if w.nread > 0 {
			w.epoch.Add(1)
			w.forward(w.nread)
			w.epoch.Add(1)
		}
		if err != nil || w.err != nil {
			if errors.Is(err, os.ErrClosed) || w.in.dev.Load() == nil {
				return
			}
			if errors.Is(w.err, unix.EBADFD) || errors.Is(w.err, unix.EBADF) {
				return
			}
			// EIO and the like while the other side is down: count, go on
			w.ctr(w.in).RxErrors.add(1)
		}
	}
}

// ctr returns the worker's own counters on link l.
func (w *worker) ctr(l *Link) *Counters {
	i := int(l.Index)
	if i >= len(w.ctrs) {
		w.ctrs = append(w.ctrs, make([]*Counters, i+1-len(w.ctrs))...)
	}
	c := w.ctrs[i]
	if c == nil {
		c = l.NewCounters()
		w.ctrs[i] = c
	}
	return c
}

func (w *worker) drop(l *Link, why DropReason) { w.ctr(l).Drops[why].add(1) }

// write sends b (virtio_net_hdr and packet: one, or a super-packet of
// packets wire packets) out of TUN link out, by the queue that matches
// the worker.
func (w *worker) write(out *Link, dev *tunDev, b []byte, packets int) {
	q := dev.queues[w.id%len(dev.queues)]
	size := uint64(len(b) - vnetHdrLen) // counted as Linux counts: the IPv6 packet
	if !dev.vnet {
		b = b[vnetHdrLen:]
	}
	for {
		_, err := unix.Write(q.fd, b)
		if err == unix.EINTR {
			continue
		}
		c := w.ctr(out)
		if err != nil {
			c.Drops[DropWrite].add(1)
			c.TxErrors.add(1)
			return
		}
		c.TxPackets.add(uint64(packets))
		c.TxBytes.add(size)
		return
	}
}
