package dataplane

import (
	"errors"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"

	"urouter/dataplane/port"
	"urouter/decide"
)

// batchSize is how many packets a worker reads before it routes them.
const batchSize = decide.MaxBatch

// A port's frames are read a batch at a time into arrays of its own.
const _ = uint(port.BatchSize - batchSize) // fails to build if a port's batch is smaller

// Room for what a worker builds while it routes a batch: segments of a
// super-packet, coalesced datagrams, ICMPv6 errors. A full area is written
// out before more is built.
const (
	areaSize = 256 << 10
	maxOut   = 256 // writes queued at most before they go out
)

// worker owns one queue of one link's port: it reads batches from it,
// routes them and writes them out. Everything it touches per packet is its
// own; shared state (links, tables, addresses) is read through atomic
// pointers.
type worker struct {
	dp *Dataplane
	// now is the limiters' clock (Dataplane.now) as the batch began:
	// read once a batch, not once for each packet punted or answered
	// (set by forward, forwardOwn, and a sender's ndLink.Unreachable)
	now int64
	// batchSeq counts the batches begun (forward, forwardOwn, an ND
	// sender's Unreachable): what is remembered for one batch is keyed
	// by it
	batchSeq uint64
	// outerSrc is the outer source SRv6 selected last in this batch
	// (srv6.go's outerSource)
	outerSrc outerSrcMemo
	// in is the link the batch being routed came in by: home, the link
	// whose port the worker reads, or one of its VLAN links (forwardRuns)
	in    *Link
	home  *Link
	eth   *ether    // home's device, if it is an Ethernet link's
	runs  *vlanRuns // a batch of several links, sorted by link
	port  port.Port
	q     int
	id    int
	epoch atomic.Uint64 // odd while a batch is in flight (see synchronize)
	own   *Mirror       // reads what the kernel sends out of this mirror
	caps  *captureSet   // the captures as of this batch (nil: none)
	tr    *Tracer       // the trace armed as of this batch (nil: none)
	// traced are the batch's traced packets' records; cur the record of
	// the packet whose writes are being queued
	traced []*TraceRecord
	cur    *TraceRecord

	bufs [batchSize][]byte
	// base are the buffers bufs read into, with the room in front of
	// each that SRv6 pushes headers into (srv6.go); base[i] is bufs[i]'s
	base    [batchSize][]byte
	sizes   [batchSize]int
	pk      [batchSize]pkt
	keys    [batchSize]decide.Key
	res     [batchSize]decide.Result
	pending [batchSize]int // the packet of each key
	batch   decide.Batch
	ctrs    []*Counters // by link index

	// writes queued while the batch is routed, sent in order per egress
	out  [maxOut]outPkt
	nout int
	area []byte
	used int
	wb   [maxOut][]byte // one egress's run, for its WriteBatch
	wv   [maxOut]netip.Addr
	wi   [maxOut]int // the index in out of each of them
}

// outPkt is one queued write: a buffer (virtio_net_hdr and packet) for an
// egress, carrying this many wire packets.
type outPkt struct {
	link    *Link
	port    port.Port
	b       []byte
	via     netip.Addr // the neighbour it goes to
	packets int
	tr      *TraceRecord // the traced packet it is or answers
}

func newWorker(dp *Dataplane, l *Link, port port.Port, q, id int) *worker {
	w := &worker{dp: dp, in: l, home: l, port: port, q: q, id: id}
	if e, ok := port.(*ether); ok {
		w.eth, w.runs = e, new(vlanRuns)
	}
	for i := range w.bufs {
		w.base[i] = make([]byte, srv6Room+vnetHdrLen+maxPacket)
		w.bufs[i] = w.base[i][srv6Room:]
	}
	w.area = make([]byte, areaSize)
	return w
}

// newSender is a worker that reads nothing: it routes the packets a link
// makes off the packet path (an Ethernet link's Address Unreachable
// errors), as if they came in by l. One goroutine uses it at a time, its
// batches marked in its epoch as a worker's, and the grace period
// (synchronize) waits for it too: it writes to other links' ports.
func (dp *Dataplane) newSender(l *Link) *worker {
	w := &worker{dp: dp, in: l, home: l, id: -1, area: make([]byte, areaSize)}
	dp.sendersMu.Lock()
	defer dp.sendersMu.Unlock()
	dp.senders = append(dp.senders, w)
	return w
}

// RoutineRead reads and routes batches until the link's port closes.
func (w *worker) RoutineRead() {
	for w.readBatch() {
	}
}

// readBatch reads a batch and routes it; false once the port is closed.
func (w *worker) readBatch() bool {
	n, err := w.port.ReadBatch(w.q, w.bufs[:], w.sizes[:])
	if n > 0 {
		w.epoch.Add(1)
		switch {
		case w.own != nil:
			w.forwardOwn(n)
		case w.eth != nil && w.eth.mixed[w.q]:
			w.forwardRuns(n)
		default:
			w.forward(n)
		}
		w.epoch.Add(1)
	}
	if err != nil {
		if errors.Is(err, os.ErrClosed) {
			return false
		}
		// ENETDOWN is the socket told that its interface went down
		// (packet_notifier), once, not a frame received in error:
		// Linux's rx_errors does not count it. EIO and the like
		// while the other side is down: count, go on.
		if !errors.Is(err, syscall.ENETDOWN) {
			w.ctr(w.home).RxErrors.add(1)
		}
	}
	return true
}

var errNothingWritten = errors.New("the port wrote nothing")

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

// scratch returns n bytes of the worker's area for a packet it builds,
// writing out what is queued first if the area is full. A packet is at most
// vnetHdrLen+maxPacket, well within the area.
func (w *worker) scratch(n int) []byte {
	if w.used+n > len(w.area) {
		w.flush()
	}
	b := w.area[w.used : w.used+n : w.used+n]
	w.used += n
	return b
}

// queue adds b (virtio_net_hdr and packet, carrying packets wire packets)
// to what goes out of link out to neighbour via.
func (w *worker) queue(out *Link, b []byte, via netip.Addr, packets int) {
	port := out.portOf()
	if port == nil {
		w.drop(w.in, DropLinkDown)
		w.dropped(out, DirOut, b, w.cur, DropLinkDown)
		return
	}
	if w.nout == maxOut {
		w.flush()
	}
	w.out[w.nout] = outPkt{link: out, port: port, b: b, via: via, packets: packets, tr: w.cur}
	w.nout++
}

// flush writes what is queued: egress by egress, in the order queued (the
// order of a flow's packets), each egress's run as one WriteBatch.
func (w *worker) flush() {
	for i := 0; i < w.nout; i++ {
		l := w.out[i].link
		if l == nil {
			continue // already written with an earlier egress's run
		}
		n := 0
		for j := i; j < w.nout; j++ {
			if w.out[j].link == l {
				w.wb[n], w.wv[n], w.wi[n] = w.out[j].b, w.out[j].via, j
				n++
				w.out[j].link = nil
			}
		}
		w.write(l, w.out[i].port, n)
	}
	w.nout, w.used = 0, 0
}

// write sends the n writes gathered in wb (queued as out[wi[...]]) to
// link l's port, and counts them there: a write the port refuses is
// dropped, and the rest still go.
func (w *worker) write(l *Link, port port.Port, n int) {
	c := w.ctr(l)
	for done := 0; done < n; {
		m, err := port.WriteBatch(w.id, w.wb[done:n], w.wv[done:n])
		for _, j := range w.wi[done : done+m] {
			o := &w.out[j]
			c.TxPackets.add(uint64(o.packets))
			c.TxBytes.add(uint64(len(o.b) - vnetHdrLen)) // counted as Linux counts: the IPv6 packet
			// the packet a port took is unchanged past its virtio_net_hdr
			if w.caps != nil {
				w.caps.capture(l, DirOut, o.b, false, 0)
			}
			if o.tr != nil {
				traceWrote(o, l, nil)
			}
		}
		done += m
		if err != nil || m == 0 { // a port that wrote nothing and said nothing: lost too
			c.Drops[DropWrite].add(1)
			c.TxErrors.add(1)
			o := &w.out[w.wi[done]]
			w.dropped(l, DirOut, o.b, nil, DropWrite) // its trace says so at its write
			if o.tr != nil {
				if err == nil {
					err = errNothingWritten
				}
				traceWrote(o, l, err)
			}
			done++
		}
	}
}
