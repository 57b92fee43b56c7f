package ndisc

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// packetFrom is a packet as the cache holds it (Headroom, then an IPv6
// header) from src, of n bytes in all.
func packetFrom(src netip.Addr, n int) []byte {
	b := make([]byte, max(n, Headroom+ipv6Len))
	b[Headroom] = 0x60
	s := src.As16()
	copy(b[Headroom+8:], s[:])
	return b
}

// randomIn is a random address of the /64 of p.
func randomIn(p netip.Prefix) netip.Addr {
	a := p.Addr().As16()
	binary.BigEndian.PutUint64(a[8:], rand.Uint64())
	return netip.AddrFrom16(a)
}

var lan = netip.MustParsePrefix("2001:db8:f2::/64")

// TestFloodFromOneSource: a sender scanning a /64 through the router
// starts at most unres_src_max resolutions; another sender's packet to a
// new neighbour starts one, the neighbour's answer makes it REACHABLE,
// and the flooder's addresses are solicited at most mcast_solicit times.
func TestFloodFromOneSource(t *testing.T) {
	p := DefaultParams()
	p.Retrans = 100 * time.Millisecond
	tbl, f, clk := testTable(p)
	flooder := netip.MustParseAddr("2001:db8:f1::66")
	for i := 0; i < 20000; i++ {
		tbl.Output(randomIn(lan), packetFrom(flooder, 100))
		if i%100 == 0 {
			advance(tbl, clk, 5*time.Millisecond)
		}
		if u := tbl.Stats().Unresolved; u > p.UnresSrcMax {
			t.Fatalf("%d entries awaiting resolution from one source, unres_src_max is %d", u, p.UnresSrcMax)
		}
	}
	if tbl.SourceLimited.Load() == 0 || tbl.UnresDiscards.Load() < tbl.SourceLimited.Load() {
		t.Fatalf("%d resolutions refused for their source, %d packets discarded", tbl.SourceLimited.Load(), tbl.UnresDiscards.Load())
	}
	c := netip.MustParseAddr("2001:db8:f2::3")
	if _, ok := tbl.Output(c, packetFrom(netip.MustParseAddr("2001:db8:f1::2"), 100)); ok {
		t.Fatal("a new neighbour resolved at once")
	}
	advance(tbl, clk, time.Millisecond)
	if st, _ := tbl.State(c); st != Incomplete || f.perTarget[c] != 1 {
		t.Fatalf("the new neighbour is %v with %d solicitations during the flood, want INCOMPLETE and 1", st, f.perTarget[c])
	}
	tbl.Advertised(c, Advert{MAC: macA, HasMAC: true, Solicited: true})
	if st, _ := tbl.State(c); st != Reachable || f.released != 1 {
		t.Fatalf("the answer left it %v with %d packets released, want REACHABLE and 1", st, f.released)
	}
	advance(tbl, clk, 2*time.Second)
	for a, n := range f.perTarget {
		if n > p.McastProbes {
			t.Fatalf("%v solicited %d times, mcast_solicit is %d", a, n, p.McastProbes)
		}
	}
}

// l4Packet is a packet from src of next header nh whose first four bytes
// after the IPv6 header are l4 (ports, or an ICMPv6 type and code).
func l4Packet(src netip.Addr, nh byte, l4 [4]byte) []byte {
	b := packetFrom(src, Headroom+ipv6Len+8)
	b[Headroom+6] = nh
	copy(b[Headroom+ipv6Len:], l4[:])
	return b
}

// TestScannersOwnNeighbour: a host scanning a /64 with UDP datagrams to
// one port holds at most three quarters of its unres_src_max; its ping
// to a new neighbour is solicited at its first packet, and released at
// the answer. Its scan over many ports still holds no more than
// unres_src_max.
func TestScannersOwnNeighbour(t *testing.T) {
	p := DefaultParams()
	tbl, f, clk := testTable(p)
	a := netip.MustParseAddr("2001:db8:f1::2")
	udp9 := l4Packet(a, 17, [4]byte{0x13, 0x88, 0, 9})
	for i := 0; i < 5000; i++ {
		tbl.Output(randomIn(lan), udp9)
		if i%100 == 0 {
			advance(tbl, clk, 5*time.Millisecond)
		}
	}
	if u := tbl.Stats().Unresolved; u != int(kindMax(p.UnresSrcMax)) {
		t.Fatalf("%d entries awaiting resolution for one kind of one source's traffic, want %d", u, kindMax(p.UnresSrcMax))
	}
	c := netip.MustParseAddr("2001:db8:f2::3")
	if _, ok := tbl.Output(c, l4Packet(a, 58, [4]byte{128})); ok {
		t.Fatal("a new neighbour resolved at once")
	}
	advance(tbl, clk, time.Millisecond)
	if st, _ := tbl.State(c); st != Incomplete || f.perTarget[c] != 1 {
		t.Fatalf("the scanner's ping to a new neighbour: %v with %d solicitations, want INCOMPLETE and 1", st, f.perTarget[c])
	}
	tbl.Advertised(c, Advert{MAC: macA, HasMAC: true, Solicited: true})
	if st, _ := tbl.State(c); st != Reachable || f.released != 1 {
		t.Fatalf("the answer left it %v with %d packets released, want REACHABLE and 1", st, f.released)
	}
	if s, ok := tbl.StateOf(c); s != Reachable || !ok || testing.AllocsPerRun(100, func() { tbl.StateOf(c) }) != 0 {
		t.Errorf("StateOf: %v %v, or it allocates", s, ok)
	}
	for i := 0; i < 5000; i++ {
		tbl.Output(randomIn(lan), l4Packet(a, 17, [4]byte{0x13, 0x88, byte(i >> 8), byte(i)}))
		if u := tbl.Stats().Unresolved; u > p.UnresSrcMax {
			t.Fatalf("%d entries awaiting resolution from one source over many ports, unres_src_max is %d", u, p.UnresSrcMax)
		}
	}
}

// TestFloodFromEverywhere: a flood from many sources keeps at most
// unres_max entries waiting (the oldest give way), the table within
// thresh3, and lets in a neighbour that solicits and one that answers a
// solicitation after its entry gave way.
func TestFloodFromEverywhere(t *testing.T) {
	p := DefaultParams()
	p.Thresh1, p.Thresh2, p.Thresh3, p.UnresMax = 64, 128, 256, 64
	// c's the one solicitation: no later one may take its slot in asked
	p.SolicitRate, p.SolicitBurst = 1, 1
	tbl, f, clk := testTable(p)
	upstream := netip.MustParsePrefix("2001:db8:100::/40")
	src := func() netip.Addr {
		a := upstream.Addr().As16()
		a[5], a[6], a[7] = byte(rand.N(256)), byte(rand.N(256)), byte(rand.N(256))
		return netip.AddrFrom16(a)
	}
	c := netip.MustParseAddr("2001:db8:f2::3")
	tbl.Output(c, packetFrom(src(), 100))
	advance(tbl, clk, time.Millisecond) // c is solicited
	for i := 0; i < 20000; i++ {
		tbl.Output(randomIn(lan), packetFrom(src(), 100))
		if s := tbl.Stats(); s.Unresolved > p.UnresMax || s.Entries > p.Thresh3 {
			t.Fatalf("%d entries, %d awaiting resolution; thresh3 %d, unres_max %d", s.Entries, s.Unresolved, p.Thresh3, p.UnresMax)
		}
		if i%1000 == 0 {
			n := netip.AddrFrom16([16]byte{0xfe, 0x80, 14: byte(i >> 8), 15: byte(i)})
			tbl.Solicited(n, macB)
			if st, _ := tbl.State(n); st != Stale {
				t.Fatalf("a neighbour that solicited is %v during the flood", st)
			}
			advance(tbl, clk, time.Millisecond)
		}
	}
	if tbl.GaveWay.Load() == 0 {
		t.Fatal("no entry gave way")
	}
	if st, _ := tbl.State(c); st != None {
		t.Fatalf("c's entry outlived 20,000 new ones: %v", st)
	}
	tbl.Advertised(c, Advert{MAC: macA, HasMAC: true, Solicited: true})
	if st, mac := tbl.State(c); st != Reachable || mac != macA {
		t.Fatalf("c answered the solicitation: %v %v, want REACHABLE", st, mac)
	}
	// an advertisement nobody asked for makes no entry
	d := netip.MustParseAddr("2001:db8:f2::4")
	tbl.Advertised(d, Advert{MAC: macA, HasMAC: true, Solicited: true})
	if st, _ := tbl.State(d); st != None {
		t.Fatalf("an unasked advertisement made an entry %v", st)
	}
	tbl.Advertised(d, Advert{MAC: macA, HasMAC: true, Untracked: true})
	if st, _ := tbl.State(d); st != Stale {
		t.Fatalf("an untracked advertisement let in: %v, want STALE", st)
	}
	_ = f
}

// TestSolicitRate: multicast solicitations for new neighbours stay within
// solicit_rate and solicit_burst; a known neighbour's probes are not held
// back by them.
func TestSolicitRate(t *testing.T) {
	p := DefaultParams()
	p.Thresh1, p.Thresh2, p.Thresh3, p.UnresMax, p.UnresSrcMax = 4000, 4000, 4000, 4000, 0
	p.SolicitRate, p.SolicitBurst = 100, 10
	tbl, f, clk := testTable(p)
	known := netip.MustParseAddr("2001:db8:f2::2")
	tbl.Solicited(known, macA)
	tbl.Output(known, []byte{1}) // STALE to DELAY, then PROBE
	for i := 0; i < 1000; i++ {
		tbl.Output(randomIn(lan), []byte{1})
	}
	advance(tbl, clk, time.Millisecond)
	if f.mcast != 10 {
		t.Fatalf("%d multicast solicitations at once, want solicit_burst 10", f.mcast)
	}
	// a thousand new neighbours a second for 3 s: about 100 a second
	for i := 0; i < 300; i++ {
		for j := 0; j < 10; j++ {
			tbl.Output(randomIn(lan), []byte{1})
		}
		advance(tbl, clk, 10*time.Millisecond)
	}
	if n := f.mcast - 10; n < 270 || n > 310 {
		t.Fatalf("%d multicast solicitations in 3 s, want about 300 (solicit_rate 100)", n)
	}
	advance(tbl, clk, p.DelayProbe)
	if f.ucast == 0 {
		t.Fatal("the known neighbour's probe was held back")
	}
	if tbl.SolicitLimited.Load() == 0 {
		t.Fatal("no solicitation counted as held back")
	}
}

// TestHeldBytesRouterWide: what all of a router's caches hold for
// resolution stays within its unres_total_bytes, and is given back when
// resolutions end; another router's caches have a budget of their own.
func TestHeldBytesRouterWide(t *testing.T) {
	held, other := NewBudget(), NewBudget()
	held.SetMax(100_000)
	p := DefaultParams()
	p.Retrans = 10 * time.Millisecond
	var wg sync.WaitGroup
	var tables [2]*Table
	for i := range tables {
		tbl, _, clk := testTableHolding(p, held)
		tables[i] = tbl
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 2000; j++ {
				tbl.Output(randomIn(lan), packetFrom(netip.AddrFrom16([16]byte{0x20, 1, 0xd, 0xb8, 7: byte(j)}), 1500))
				if held.Held() > held.Max() {
					t.Errorf("%d bytes held, unres_total_bytes is %d", held.Held(), held.Max())
					return
				}
			}
			advance(tbl, clk, time.Second)
		}()
	}
	wg.Wait()
	if tables[0].HeldLimited.Load()+tables[1].HeldLimited.Load() == 0 {
		t.Fatal("no packet refused for the router's bound")
	}
	if h := held.Held(); h != 0 {
		t.Fatalf("%d bytes still held after every resolution failed", h)
	}
	// a table that goes (its link deleted) gives back what it held
	tbl, _, _ := testTableHolding(p, held)
	tbl.Output(target, packetFrom(target, 1000))
	tbl.Close()
	if h := held.Held(); h != 0 {
		t.Fatalf("%d bytes still held after the table closed", h)
	}
	// another router's cache holds against its own budget, untouched
	// by this one's: full, it refuses nothing to the other
	for j := 0; j < 1000 && held.Held()+1500 <= held.Max(); j++ {
		tables[0].Output(randomIn(lan), packetFrom(netip.AddrFrom16([16]byte{0x20, 1, 0xd, 0xb8, 7: byte(j)}), 1500))
	}
	if held.Held()+1500 <= held.Max() {
		t.Fatalf("the router's caches hold %d of %d: not full", held.Held(), held.Max())
	}
	tbl, _, _ = testTableHolding(p, other)
	tbl.Output(target, packetFrom(target, 1000))
	if h := other.Held(); h != 1000 || tbl.HeldLimited.Load() != 0 {
		t.Errorf("the other router's budget holds %d (want 1000), refused %d", h, tbl.HeldLimited.Load())
	}
	tables[0].Close()
	tables[1].Close()
	tbl.Close()
}

// TestWantedNeighbourGetsIn: a neighbour asked for again, every 200 ms,
// by the very sender that floods (refused at first for its source's
// bound), or during a flood from everywhere (its entry given way before
// its solicitation could go), is solicited within a few tries and
// resolves when it answers.
func TestWantedNeighbourGetsIn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		source func() netip.Addr
	}{
		{"the flooder itself", func() netip.Addr { return netip.MustParseAddr("2001:db8:f1::2") }},
		{"from everywhere", func() netip.Addr { return randomIn(netip.MustParsePrefix("2001:db8:f1::/64")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			tbl, f, clk := testTable(p)
			c := netip.MustParseAddr("2001:db8:f2::3")
			asker := netip.MustParseAddr("2001:db8:f1::2")
			// 20,000 new addresses a second, a Run every 2 ms, C asked for
			// every 200 ms from 1 s on
			for ms := 0; ms < 3000; ms++ {
				for range 20 {
					tbl.Output(randomIn(lan), packetFrom(tc.source(), 100))
				}
				if ms >= 1000 && ms%200 == 0 {
					tbl.Output(c, packetFrom(asker, 100))
				}
				clk.Add(int64(time.Millisecond))
				if ms%2 == 0 {
					tbl.Run(clk.Load())
				}
				if f.perTarget[c] > 0 {
					t.Logf("C solicited %d ms after it was first asked for", ms-1000)
					break
				}
			}
			if f.perTarget[c] == 0 {
				t.Fatalf("C was never solicited (%+v)", tbl.Stats())
			}
			tbl.Advertised(c, Advert{MAC: macA, HasMAC: true, Solicited: true})
			if st, _ := tbl.State(c); st != Reachable {
				t.Fatalf("C answered and is %v", st)
			}
			if s := tbl.Stats(); s.Entries > p.Thresh3 || s.Unresolved > p.UnresMax {
				t.Fatalf("%+v: beyond thresh3 or unres_max", s)
			}
		})
	}
}

// TestUnresStress: senders flooding from many sources, the ND goroutine's
// Run, answers and solicitations, all at once (under -race): the table
// stays within its bounds, and its accounts agree with its entries after
// (entries awaiting resolution, per source, bytes held).
func TestUnresStress(t *testing.T) {
	p := DefaultParams()
	p.Thresh1, p.Thresh2, p.Thresh3, p.UnresMax, p.UnresSrcMax = 32, 64, 128, 48, 4
	p.Retrans = 5 * time.Millisecond
	tbl, _, clk := testTable(p)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			src := netip.AddrFrom16([16]byte{0x20, 1, 0xd, 0xb8, 15: byte(g)})
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if i%3 == 0 {
					src = randomIn(netip.MustParsePrefix("2001:db8:1::/64"))
				}
				tbl.Output(randomIn(lan), packetFrom(src, 200))
				sent.Add(1)
				if s := tbl.Stats(); s.Entries > p.Thresh3 {
					t.Errorf("%d entries, thresh3 %d", s.Entries, p.Thresh3)
					return
				}
			}
		})
	}
	// the ND goroutine runs 300 rounds, and on until the senders sent
	// 4,000 packets (or all gave up)
	ran, senders := make(chan struct{}), make(chan struct{})
	go func() { wg.Wait(); close(senders) }()
	go func() {
		defer close(ran)
		for round := 0; round < 300 || sent.Load() < 4000; round++ {
			select {
			case <-senders:
				return
			default:
			}
			clk.Add(int64(time.Millisecond))
			tbl.Run(clk.Load())
			tbl.Solicited(randomIn(lan), macA)
			tbl.Advertised(randomIn(lan), Advert{MAC: macB, HasMAC: true, Solicited: true})
		}
	}()
	<-ran
	close(stop)
	<-senders
	incomplete, bySource, byKind, held := 0, map[uint16]int32{}, map[uint16]int32{}, int64(0)
	for e := range tbl.all() {
		e.mu.Lock()
		if e.state == Incomplete != e.unres {
			t.Errorf("%v: %v, counted awaiting resolution %v", e.addr, e.state, e.unres)
		}
		if e.unres {
			incomplete++
			if e.source != 0 {
				bySource[e.source]++
				byKind[e.kind]++
			}
		}
		held += int64(e.queued)
		e.mu.Unlock()
	}
	if n := int(tbl.unres.Load()); n != incomplete || n > p.UnresMax+4 {
		t.Errorf("%d counted awaiting resolution, %d entries INCOMPLETE (unres_max %d)", n, incomplete, p.UnresMax)
	}
	for s := range tbl.bySource {
		if got := tbl.bySource[s].Load(); got != bySource[uint16(s+1)] {
			t.Errorf("source slot %d counts %d, its entries %d", s, got, bySource[uint16(s+1)])
		}
	}
	for k := range tbl.byKind {
		if got := tbl.byKind[k].Load(); got != byKind[uint16(k+1)] {
			t.Errorf("kind slot %d counts %d, its entries %d", k, got, byKind[uint16(k+1)])
		}
	}
	if h := tbl.held.Held(); h != held {
		t.Errorf("%d bytes counted held, the entries hold %d", h, held)
	}
	tbl.Close()
}

// TestRememberedKeys: what gave way is remembered by a hash of the whole
// address: a scan of addresses that differ in a few bits only (here the
// last two bytes) does not make new ones look asked for again.
func TestRememberedKeys(t *testing.T) {
	tbl, _, _ := testTable(DefaultParams())
	addr := func(i int) netip.Addr {
		return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)})
	}
	for i := 0; i < 4000; i++ {
		tbl.remember(addr(i))
	}
	hits, again := 0, 0
	for i := 4000; i < 8000; i++ {
		if tbl.repeated(addr(i)) {
			hits++
		}
	}
	for i := 3000; i < 4000; i++ {
		if tbl.repeated(addr(i)) {
			again++
		}
	}
	if hits > 10 || again < 800 {
		t.Fatalf("%d of 4,000 new addresses look asked for again, %d of the last 1,000 remembered do", hits, again)
	}
}
