package dataplane

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"urouter/dataplane/port"
	"urouter/decide"
	"urouter/ndisc"
	"urouter/seg6"
)

// Packet tracing (`trace add COUNT [dev LINK] [FILTER]`): the next COUNT
// packets a link reads that the filter takes carry a record through the
// packet path, a step per stage (read, parse, the decision as `route get
// -d` explains it, what the decision made of the packet, its neighbour,
// its write), each stamped in nanoseconds. With no trace armed a batch
// pays one atomic load (the taps, with the captures); a packet traced pays what
// its record costs, allocations and the decision explained again, which
// only COUNT packets do.

// TraceStage names a step of a packet's record.
type TraceStage uint8

const (
	StageRead TraceStage = iota
	StageParse
	StageDecide // Explain holds the steps
	StageForward
	StageLocal
	StageDrop
	StageICMP // the ICMPv6 error the packet earned
	StageNeighbour
	StageWrite
	StageSRv6 // an encapsulation or behaviour, and the decision after it
)

var stageNames = [...]string{"read", "parse", "decide", "forward", "local", "drop", "icmp6", "neighbour", "write", "seg6"}

func (s TraceStage) String() string { return stageNames[s] }

// TraceStep is one step of a traced packet.
type TraceStep struct {
	Time  int64 // Unix nanoseconds
	Stage TraceStage
	Text  string
}

// TraceRecord is what one traced packet did.
type TraceRecord struct {
	ID    uint64
	Link  string // the link it came in by
	Steps []TraceStep
	// the decision's key and, for StageDecide, how it is reached, explained
	// again as route get -d explains it; what the batch's own decision
	// made of the packet is the step after it
	Key     decide.Key
	Explain *decide.Explanation
}

func (r *TraceRecord) add(s TraceStage, format string, a ...any) {
	r.Steps = append(r.Steps, TraceStep{Time: time.Now().UnixNano(), Stage: s, Text: fmt.Sprintf(format, a...)})
}

// Tracer is an armed trace: which packets it takes and how many more.
type Tracer struct {
	link   int32 // 0: any
	filter Filter
	left   atomic.Int64
	log    *traceLog
}

// traceLog keeps the records of the packets traced, the last MaxTraces:
// once full, a ring whose oldest is at first.
type traceLog struct {
	mu      sync.Mutex
	next    uint64
	records []*TraceRecord
	first   int
}

// MaxTraces bounds the records a router keeps, and a trace's count.
const MaxTraces = 10000

// ArmTrace arms a trace of the next count packets read on link l (nil:
// any) that f takes (nil: all), in place of any armed; the records add to
// those kept.
func (dp *Dataplane) ArmTrace(count int, l *Link, f Filter) {
	t := &Tracer{filter: f, log: &dp.traces}
	if l != nil {
		t.link = l.Index
	}
	t.left.Store(int64(min(count, MaxTraces)))
	dp.tapMu.Lock()
	defer dp.tapMu.Unlock()
	dp.publishTaps(dp.taps.Load().captures(), t)
}

// ClearTrace disarms the trace and forgets the records.
func (dp *Dataplane) ClearTrace() {
	dp.tapMu.Lock()
	dp.publishTaps(dp.taps.Load().captures(), nil)
	dp.tapMu.Unlock()
	dp.traces.mu.Lock()
	dp.traces.records, dp.traces.first = nil, 0
	dp.traces.mu.Unlock()
}

// Traces returns the records kept, oldest first, and how many packets
// the armed trace still takes.
func (dp *Dataplane) Traces() ([]*TraceRecord, int) {
	left := 0
	if t := dp.taps.Load().tracer(); t != nil {
		left = int(max(t.left.Load(), 0))
	}
	lg := &dp.traces
	lg.mu.Lock()
	defer lg.mu.Unlock()
	return append(slices.Clone(lg.records[lg.first:]), lg.records[:lg.first]...), left
}

// take reports whether the trace takes packet b (virtio_net_hdr and
// packet) read on link l, counting it; the last one disarms it.
func (t *Tracer) take(dp *Dataplane, l *Link, b []byte) bool {
	if t.link != 0 && l.Index != t.link || len(b) < vnetHdrLen ||
		t.filter != nil && !t.filter.Match(b[vnetHdrLen:]) {
		return false
	}
	for {
		n := t.left.Load()
		if n <= 0 {
			return false
		}
		if t.left.CompareAndSwap(n, n-1) {
			if n == 1 {
				dp.disarm(t)
			}
			return true
		}
	}
}

// disarm takes spent trace t out of the packet path without the lock
// (its last packet's worker does it): a publish under the lock that
// raced it leaves t out too, as spent.
func (dp *Dataplane) disarm(t *Tracer) {
	for {
		cur := dp.taps.Load()
		if cur == nil || cur.tr != t {
			return
		}
		var next *taps
		if cur.caps != nil {
			next = &taps{caps: cur.caps}
		}
		if dp.taps.CompareAndSwap(cur, next) {
			return
		}
	}
}

func (lg *traceLog) keep(r *TraceRecord) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	lg.next++
	r.ID = lg.next
	if len(lg.records) < MaxTraces {
		lg.records = append(lg.records, r)
		return
	}
	lg.records[lg.first] = r
	lg.first = (lg.first + 1) % MaxTraces
}

// traceRead starts a record for packet k of the batch, read on queue q,
// if the armed trace takes it.
func (w *worker) traceRead(k *pkt) {
	if !w.tr.take(w.dp, w.in, k.b) {
		return
	}
	r := &TraceRecord{Link: w.in.Name}
	vh := port.DecodeVnet(k.b)
	r.add(StageRead, "dev %s queue %d size %d%s", w.in.Name, w.q, len(k.b)-vnetHdrLen, gsoText(&vh))
	k.tr = r
	w.traced = append(w.traced, r)
}

func gsoText(vh *port.VnetHdr) string {
	if !vh.GSO() {
		return " gso none"
	}
	return fmt.Sprintf(" gso %s size %d", port.GSOName(vh.GSOType), vh.GSOSize)
}

// traceParse records what parse made of a traced packet.
func (k *pkt) traceParse() {
	if k.act == actDrop || k.act == actError {
		return // the drop step says why (an error in its options: not parsed further)
	}
	p := k.p
	var ports string
	if k.l4.ports {
		ports = fmt.Sprintf(" sport %d dport %d", k.l4.sport, k.l4.dport)
	} else if k.l4.icmp {
		ports = fmt.Sprintf(" type %d", k.l4.icmpTy)
	}
	tc, label := p.TOS()
	k.tr.add(StageParse, "%s > %s %s%s hoplimit %d tclass 0x%02x flowlabel 0x%05x length %d",
		netip.AddrFrom16([16]byte(p.SourceAddressSlice())), netip.AddrFrom16([16]byte(p.DestinationAddressSlice())),
		ipprotoName(k.l4.proto), ports, p.HopLimit(), tc, label, len(p))
}

// traceDecision records how the decision of a traced packet with key is
// reached, as `route get -d` explains it (what the batch's own decision
// made of the packet is the next step's).
func (w *worker) traceDecision(k *pkt, key *decide.Key) {
	ex := w.dp.Decider.Explain(key)
	k.tr.Key, k.tr.Explain = *key, &ex
	k.tr.add(StageDecide, "")
}

// traceAct records where a traced packet goes once the batch is decided
// (a drop records itself, in dropPacket).
func (w *worker) traceAct(k *pkt) {
	switch k.act {
	case actForward:
		hl := k.p.HopLimit()
		k.tr.add(StageForward, "dev %s via %s hoplimit %d", k.egress.Name, k.via, hl)
		if t := k.egress.Neigh(); t != nil && !k.via.IsMulticast() {
			st, mac := t.State(k.via)
			if st&ndisc.Valid != 0 {
				k.tr.add(StageNeighbour, "%s dev %s lladdr %s %s", k.via, k.egress.Name, mac, st)
			} else {
				k.tr.add(StageNeighbour, "%s dev %s %s", k.via, k.egress.Name, st)
			}
		}
	case actLocal:
		name := w.in.Name
		if k.egress != nil {
			name = k.egress.Name
		}
		k.tr.add(StageLocal, "for the router (address of %s)", name)
	}
}

// traceSRv6 records an SRv6 step of a traced packet: what it did (what),
// the packet as it left the step, and the decision made for it then.
func (k *pkt) traceSRv6(what string, key *decide.Key, r *decide.Result) {
	p := k.p
	seg := ""
	if h := seg6.SRHAt(p, seg6.Find(p, false)); h != nil {
		seg = fmt.Sprintf(" segleft %d", h.SegmentsLeft())
	}
	how := fmt.Sprintf("lookup %s: no route", netip.AddrFrom16(key.Dst))
	if r.Verdict != decide.NoRoute {
		how = fmt.Sprintf("lookup %s in table %d: %s", netip.AddrFrom16(key.Dst), r.Table, verdictWord(r, k))
	}
	k.tr.add(StageSRv6, "%s: %s > %s%s hoplimit %d; %s", what, netip.AddrFrom16([16]byte(p.SourceAddressSlice())),
		netip.AddrFrom16([16]byte(p.DestinationAddressSlice())), seg, p.HopLimit(), how)
}

// verdictWord is a decision as an SRv6 step's record words it.
func verdictWord(r *decide.Result, k *pkt) string {
	switch r.Verdict {
	case decide.Forward:
		if k.egress != nil {
			return "forward dev " + k.egress.Name
		}
		return "forward"
	case decide.Local:
		return "local"
	case decide.Blackhole:
		return "blackhole"
	case decide.Prohibit:
		return "prohibit"
	}
	return "unreachable"
}

// traceICMP records the ICMPv6 error a traced packet earned, sent or held
// back by the rate limits.
func (k *pkt) traceICMP(sent bool) {
	how := "sent"
	if !sent {
		how = "not sent: rate limited"
	}
	k.tr.add(StageICMP, "error type %d code %d to %s: %s", k.icmpType, k.icmpCode,
		netip.AddrFrom16([16]byte(k.p.SourceAddressSlice())), how)
}

// traceWrote records the write of queued packet o to link l.
func traceWrote(o *outPkt, l *Link, err error) {
	if err != nil {
		o.tr.add(StageWrite, "dev %s size %d: %v", l.Name, len(o.b)-vnetHdrLen, err)
		return
	}
	o.tr.add(StageWrite, "dev %s size %d packets %d: done", l.Name, len(o.b)-vnetHdrLen, o.packets)
}

// traceDone keeps the records of the batch's traced packets.
func (w *worker) traceDone() {
	for i, r := range w.traced {
		w.tr.log.keep(r)
		w.traced[i] = nil
	}
	w.traced = w.traced[:0]
}

// ipprotoName is a next header as a trace words it.
func ipprotoName(p uint8) string {
	switch p {
	case protoTCP:
		return "tcp"
	case protoUDP:
		return "udp"
	case protoICMPv6:
		return "ipv6-icmp"
	case protoSCTP:
		return "sctp"
	}
	return fmt.Sprintf("proto %d", p)
}
