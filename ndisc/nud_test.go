package ndisc

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeLink records what a table asks of its link (from any goroutine, as
// a real link is called).
type fakeLink struct {
	mu           sync.Mutex
	mcast, ucast int
	perTarget    map[netip.Addr]int // multicast solicitations
	released     int
	unreached    int
	changes      []State
}

func (f *fakeLink) solicit(target netip.Addr, _ MAC, unicast bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if unicast {
		f.ucast++
	} else {
		f.mcast++
		if f.perTarget == nil {
			f.perTarget = map[netip.Addr]int{}
		}
		f.perTarget[target]++
	}
}
func (f *fakeLink) release(_ netip.Addr, _ MAC, p [][]byte) {
	f.mu.Lock()
	f.released += len(p)
	f.mu.Unlock()
}
func (f *fakeLink) unreachable(_ netip.Addr, p [][]byte) {
	f.mu.Lock()
	f.unreached += len(p)
	f.mu.Unlock()
}
func (f *fakeLink) changed(_ netip.Addr, from, to State) {
	f.mu.Lock()
	f.changes = append(f.changes, to)
	f.mu.Unlock()
}

// testTable is a table on a clock the test moves, with a held-bytes
// budget of its own.
func testTable(p Params) (*Table, *fakeLink, *atomic.Int64) {
	return testTableHolding(p, NewBudget())
}

// testTableHolding is a testTable whose held packets count against held.
func testTableHolding(p Params, held *Budget) (*Table, *fakeLink, *atomic.Int64) {
	f := &fakeLink{}
	t := newTable(f, p, held)
	clk := &atomic.Int64{}
	clk.Store(int64(time.Hour)) // far from zero, as a real clock is
	t.Clock = clk
	return t, f, clk
}

// advance moves the clock by d in steps, running the timers as the
// table's goroutine would.
func advance(t *Table, clk *atomic.Int64, d time.Duration) {
	end := clk.Load() + int64(d)
	for clk.Load() < end {
		next := t.Run(clk.Load())
		clk.Store(min(max(next, clk.Load()+1), end))
	}
	t.Run(end)
}

var (
	target = netip.MustParseAddr("2001:db8::1")
	macA   = MAC{2, 0, 0, 0, 0, 0xa}
	macB   = MAC{2, 0, 0, 0, 0, 0xb}
)

// model is RFC 4861's neighbour cache entry for one neighbour, as its
// appendix C tabulates the transitions; "no entry" is None. Where Linux
// (which this router follows) departs from the table, the model follows
// Linux and says so:
//   - an entry whose resolution or probes failed is kept FAILED (the RFC
//     discards it), and a FAILED entry takes advertisements and
//     solicitations as an INCOMPLETE one does;
//   - an unsolicited NA without override and with another address
//     demotes a REACHABLE entry to STALE (NEIGH_UPDATE_F_WEAK_OVERRIDE);
//     the table says "unchanged";
//   - a solicited NA without a link-layer address confirms the entry
//     (REACHABLE), as section 7.2.5 says; the table says "unchanged";
//   - a solicited NA that changes nothing (another address, no override)
//     still stamps the entry confirmed, so a DELAY entry confirmed within
//     delay_first_probe_time goes back to REACHABLE at its timeout
//     instead of probing;
//   - the REACHABLE timeout goes to DELAY rather than STALE when a packet
//     was sent within delay_first_probe_time (the test's timeouts come
//     after idle time, so they see STALE).
type model struct {
	state     State
	mac       MAC
	hasMAC    bool
	probes    int
	confirmed bool // a solicited NA came since the clock last moved
}

type event struct {
	kind      int // evSend, evNA, evNS, evTimeout
	solicited bool
	override  bool
	mac       MAC
	hasMAC    bool
}

const (
	evSend = iota
	evNA
	evNS
	evTimeout
)

func (m *model) apply(e event, p Params) {
	oldMAC := m.mac
	defer func() {
		if m.mac != oldMAC && m.state != Reachable {
			m.confirmed = false // a new address is not confirmed (Linux backdates it)
		}
	}()
	pending := m.state == None || m.state == Failed || m.state == Incomplete
	switch e.kind {
	case evSend:
		switch m.state {
		case None, Failed:
			m.state, m.probes = Incomplete, 1 // created, a multicast NS at once
		case Stale:
			m.state = Delay
		}
	case evNA:
		if e.solicited && m.state != None && (m.state&Valid != 0 || e.hasMAC) {
			m.confirmed = true
		}
		switch {
		case m.state == None:
			// no entry: an advertisement creates none
		case pending:
			if e.hasMAC {
				m.mac, m.hasMAC = e.mac, true
				m.state = Stale
				if e.solicited {
					m.state = Reachable
				}
			}
		case !e.hasMAC || e.mac == m.mac:
			if e.solicited {
				m.state = Reachable
			}
		case e.override:
			m.mac = e.mac
			m.state = Stale
			if e.solicited {
				m.state = Reachable
			}
		case m.state == Reachable: // different address, no override
			m.state = Stale
		}
	case evNS:
		switch {
		case !e.hasMAC:
		case m.state == None || pending || e.mac != m.mac:
			m.mac, m.hasMAC = e.mac, true
			m.state = Stale
		}
	case evTimeout:
		defer func() { m.confirmed = false }() // the clock moves past delay_first_probe_time
		switch m.state {
		case Reachable:
			m.state = Stale
		case Delay:
			m.state, m.probes = Probe, 1
			if m.confirmed {
				m.state = Reachable
			}
		case Probe:
			if m.probes >= p.UcastProbes {
				m.state = Failed
			} else {
				m.probes++
			}
		case Incomplete:
			if m.probes >= p.McastProbes {
				m.state = Failed
			} else {
				m.probes++
			}
		}
	}
}

// timeout is how long until the model's entry's timer fires, after idle
// time (so REACHABLE ends in STALE). Run looks at the entries at most
// every minScan, so a timer fires up to minScan late: a scan just before
// the deadline (the periodic collection's, say) holds it back.
func timeout(t *Table, m *model, p Params) time.Duration {
	const late = minScan + time.Millisecond
	switch m.state {
	case Reachable:
		return t.ReachableTime() + p.DelayProbe + late
	case Delay:
		return p.DelayProbe + late
	}
	return p.Retrans + late
}

func TestNUDModel(t *testing.T) {
	p := DefaultParams()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		tbl, _, clk := testTable(p)
		var m model
		var history []string
		for step := 0; step < 60; step++ {
			e := event{kind: rng.IntN(4), solicited: rng.IntN(2) == 0, override: rng.IntN(2) == 0, hasMAC: rng.IntN(4) != 0}
			e.mac = macA
			if rng.IntN(3) == 0 {
				e.mac = macB
			}
			before := m
			switch e.kind {
			case evSend:
				tbl.Output(target, []byte{1})
			case evNA:
				tbl.Advertised(target, Advert{MAC: e.mac, HasMAC: e.hasMAC, Solicited: e.solicited, Override: e.override})
			case evNS:
				if e.hasMAC {
					tbl.Solicited(target, e.mac)
				}
			case evTimeout:
				advance(tbl, clk, timeout(tbl, &m, p))
			}
			m.apply(e, p)
			history = append(history, fmt.Sprintf("%v -%d%v%v%v-> %v", before.state, e.kind, e.solicited, e.override, e.mac == macA, m.state))
			tbl.Run(clk.Load()) // a new INCOMPLETE entry's first solicitation
			st, mac := tbl.State(target)
			if st != m.state || m.state&Valid != 0 && mac != m.mac {
				t.Fatalf("round %d step %d: from %v (%v) event %+v: table %v %v, RFC 4861 model %v %v\n%v",
					round, step, before.state, before.mac, e, st, mac, m.state, m.mac, history)
			}
		}
	}
}

// TestNUDSchedule follows a gateway that stops answering through Linux's
// schedule: REACHABLE for the reachable time, DELAY (packets were sent)
// for delay_first_probe_time, PROBE with ucast_solicit unicast
// solicitations retrans_time apart, FAILED one retrans_time after the
// last, the packets then waiting answered unreachable.
func TestNUDSchedule(t *testing.T) {
	p := DefaultParams()
	p.BaseReachable, p.DelayProbe, p.Retrans = 2*time.Second, time.Second, 500*time.Millisecond
	tbl, f, clk := testTable(p)
	if _, ok := tbl.Output(target, []byte{1}); ok {
		t.Fatal("an unknown neighbour resolved at once")
	}
	tbl.Run(clk.Load())
	if f.mcast != 1 {
		t.Fatalf("multicast solicitations %d, want 1 at once", f.mcast)
	}
	tbl.Advertised(target, Advert{MAC: macA, HasMAC: true, Solicited: true, Router: true})
	if f.released != 1 {
		t.Fatalf("released %d packets, want the 1 queued", f.released)
	}
	start := clk.Load()
	reach := tbl.ReachableTime()
	if reach < time.Second || reach >= 3*time.Second {
		t.Fatalf("reachable time %v outside [base/2, 3*base/2)", reach)
	}
	states := map[State]int64{}
	for clk.Load()-start < int64(10*time.Second) {
		clk.Add(int64(10 * time.Millisecond))
		if _, ok := tbl.Output(target, []byte{2}); !ok { // traffic goes on
			tbl.Output(target, []byte{3})
		}
		tbl.Run(clk.Load())
		st, _ := tbl.State(target)
		if _, seen := states[st]; !seen {
			states[st] = clk.Load() - start
		}
	}
	at := func(s State) time.Duration { return time.Duration(states[s]) }
	near := func(got, want time.Duration) bool { return got >= want && got <= want+20*time.Millisecond }
	if !near(at(Delay), reach) || !near(at(Probe), reach+p.DelayProbe) ||
		!near(at(Failed), reach+p.DelayProbe+3*p.Retrans) {
		t.Fatalf("DELAY at %v, PROBE at %v, FAILED at %v; want %v, +%v, +%v", at(Delay), at(Probe), at(Failed),
			reach, p.DelayProbe, 3*p.Retrans)
	}
	if _, seen := states[Stale]; seen {
		t.Fatal("an entry in use went STALE; Linux goes to DELAY")
	}
	if f.ucast != 3 {
		t.Fatalf("unicast probes %d, want ucast_solicit 3", f.ucast)
	}
	// after FAILED the next packet starts a resolution again: 3 multicast
	// solicitations, then FAILED, with Address Unreachable for what waited
	if f.unreached == 0 {
		t.Fatal("packets that waited on a failed resolution were not answered")
	}
}

func TestQueueBounded(t *testing.T) {
	p := DefaultParams()
	p.QueueLen = 5
	tbl, f, clk := testTable(p)
	for i := 0; i < 50; i++ {
		tbl.Output(target, []byte{byte(i)})
	}
	if info := tbl.Dump()[0]; info.Queued != 5 {
		t.Fatalf("%d packets queued, want unres_qlen 5", info.Queued)
	}
	// and no more bytes than unres_qlen_bytes, whatever their number
	big := netip.MustParseAddr("2001:db8::2")
	for i := 0; i < 50; i++ {
		tbl.Output(big, make([]byte, 65000))
	}
	for _, info := range tbl.Dump() {
		if info.Addr == big && info.Queued*65000 > p.QueueBytes {
			t.Fatalf("%d super-packets queued, over unres_qlen_bytes %d", info.Queued, p.QueueBytes)
		}
	}
	advance(tbl, clk, 5*time.Second)
	if st, _ := tbl.State(target); st != Failed || f.unreached < 5 || f.mcast != 6 {
		t.Fatalf("state %v, %d answered unreachable, %d solicitations; want FAILED, 5 and more, 3 per neighbour", st, f.unreached, f.mcast)
	}
}

// TestBounded floods the cache with new neighbours, as a scan of a /64
// through the router does, while neighbours announce themselves: it never
// holds more than thresh3, the ones that spoke all get in (unanswered
// entries give way to them), and what failed is collected.
func TestBounded(t *testing.T) {
	p := DefaultParams()
	p.Thresh1, p.Thresh2, p.Thresh3 = 8, 16, 32
	p.UnresMax, p.UnresSrcMax = 0, 0 // Linux's bounds alone
	tbl, _, clk := testTable(p)
	for i := 0; i < 1000; i++ {
		a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)})
		tbl.Output(a, []byte{1})
		if i%50 == 0 {
			n := netip.AddrFrom16([16]byte{0xfe, 0x80, 14: byte(i >> 8), 15: byte(i)})
			tbl.Solicited(n, macA)
			if st, _ := tbl.State(n); st != Stale {
				t.Fatalf("neighbour %v that solicited is %v during the flood, want STALE", n, st)
			}
		}
		if tbl.Len() > p.Thresh3 {
			t.Fatalf("%d entries, thresh3 is %d", tbl.Len(), p.Thresh3)
		}
		clk.Add(int64(10 * time.Millisecond))
	}
	if tbl.GaveWay.Load() == 0 {
		t.Fatal("no unanswered entry gave way")
	}
	// a table of answered entries only refuses the next one
	full, _, _ := testTable(p)
	for i := 0; i <= p.Thresh3; i++ {
		full.Solicited(netip.AddrFrom16([16]byte{0xfe, 0x80, 15: byte(i)}), macA)
	}
	if full.Len() != p.Thresh3 || full.Overflows.Load() != 1 {
		t.Fatalf("%d answered entries, %d refused; want thresh3 and 1", full.Len(), full.Overflows.Load())
	}
	// idle entries past gc_stale go at the periodic collection
	advance(tbl, clk, 2*p.GCStale)
	if tbl.Len() > p.Thresh1 {
		t.Fatalf("%d entries after collection, thresh1 is %d", tbl.Len(), p.Thresh1)
	}
}

func TestAdmin(t *testing.T) {
	tbl, _, _ := testTable(DefaultParams())
	if err := tbl.Set(target, macA, true, Permanent, Router, Add); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Set(target, macA, true, Permanent, 0, Add); err != ErrExists {
		t.Fatalf("second add: %v, want File exists", err)
	}
	tbl.Advertised(target, Advert{MAC: macB, HasMAC: true, Solicited: true, Override: true})
	if st, mac := tbl.State(target); st != Permanent || mac != macA {
		t.Fatalf("an advertisement changed a permanent entry: %v %v", st, mac)
	}
	if err := tbl.Set(netip.MustParseAddr("2001:db8::2"), macA, true, Reachable, 0, Change); err != ErrNoEntry {
		t.Fatalf("change of a missing entry: %v", err)
	}
	if err := tbl.Set(target, MAC{}, false, Stale, 0, Replace); err != nil {
		t.Fatal(err)
	}
	if st, mac := tbl.State(target); st != Stale || mac != macA {
		t.Fatalf("replace without lladdr: %v %v, want STALE keeping the address", st, mac)
	}
	if n := tbl.Flush(func(i Info) bool { return i.State&(Permanent|NoARP) == 0 }); n != 1 || tbl.Len() != 0 {
		t.Fatalf("flush removed %d, %d left", n, tbl.Len())
	}
	if err := tbl.Delete(target); err != ErrNoEntry {
		t.Fatalf("delete of a missing entry: %v", err)
	}
}
