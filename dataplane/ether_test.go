package dataplane

import (
	"encoding/binary"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/dataplane/port"
	"urouter/decide"
	"urouter/fib6"
	"urouter/ndisc"
	"urouter/rules"
)

// fakeFrames is an Ethernet device in memory: what is written is kept,
// what a test hands in is read.
type fakeFrames struct {
	mu   sync.Mutex
	sent []sentFrame
	rx   chan []byte // a whole frame: Ethernet header, then the IPv6 packet
	// wrote is signalled after frames are written (not waited for)
	wrote chan struct{}
	done  chan struct{}
	once  sync.Once
}

type sentFrame struct {
	hdr  port.EthHdr
	tags []byte // the VLAN tags between its MACs and its ethertype
	pkt  []byte // the IPv6 packet
}

func newFakeFrames() *fakeFrames {
	return &fakeFrames{rx: make(chan []byte, 64), wrote: make(chan struct{}, 1), done: make(chan struct{})}
}

func (*fakeFrames) Queues() int { return 1 }

func (f *fakeFrames) ReadFrames(_ int, bufs [][]byte, hdrs []port.EthHdr, tags []port.VLANTag, sizes []int) (int, error) {
	select {
	case fr := <-f.rx:
		copy(hdrs[0][:], fr)
		if tpid := binary.BigEndian.Uint16(fr[12:]); port.IsVLAN(tpid) { // taken out, as a port does
			tags[0] = port.VLANTag{TPID: tpid, TCI: binary.BigEndian.Uint16(fr[14:]), Type: binary.BigEndian.Uint16(fr[16:])}
			if fr = append(fr[:12:12], fr[16:]...); tags[0].VID() != 0 {
				binary.BigEndian.PutUint16(fr[12:], tpid)
			}
			copy(hdrs[0][:], fr)
		}
		clear(bufs[0][:vnetHdrLen])
		sizes[0] = vnetHdrLen + copy(bufs[0][vnetHdrLen:], fr[port.EthHdrLen:])
		return 1, nil
	case <-f.done:
		return 0, os.ErrClosed
	}
}

func (f *fakeFrames) WriteFrames(hdrs []port.EthHdr, pkts [][]byte) (int, error) {
	return f.WriteTagged(nil, hdrs, pkts)
}

func (f *fakeFrames) WriteTagged(tags []byte, hdrs []port.EthHdr, pkts [][]byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, p := range pkts {
		f.sent = append(f.sent, sentFrame{hdrs[i], append([]byte(nil), tags...), append([]byte(nil), p[vnetHdrLen:]...)})
	}
	select {
	case f.wrote <- struct{}{}:
	default: // signalled already
	}
	return len(pkts), nil
}

func (f *fakeFrames) take() []sentFrame {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sent
	f.sent = nil
	return s
}

func (*fakeFrames) Offloads() port.Offloads {
	return port.Offloads{TCP: true, UDP: true, PartialCsum: true}
}
func (*fakeFrames) SetMTU(int) error { return nil }
func (*fakeFrames) SetUp(bool) error { return nil }
func (f *fakeFrames) Close() error {
	f.once.Do(func() { close(f.done) })
	return nil
}

// ND's names, as these tests use them: ND runs behind the port here.
const (
	optSourceLL = 1
	optTargetLL = ndisc.TargetLLOption
	DADDone     = ndisc.DADDone
)

var (
	solicitedNode = ndisc.SolicitedNode
	linkOption    = ndisc.LinkOption
	allNodes      = netip.MustParseAddr("ff02::1")
)

var (
	routerMAC = ndisc.MAC{2, 0, 0, 0, 1, 1}
	hostMAC   = ndisc.MAC{2, 0, 0, 0, 2, 2}
	hostAddr  = netip.MustParseAddr("2001:db8:91::2")
)

// testDataplane is a dataplane with its loopback, deciding in tables of
// its own (returned) with no rules but Linux's.
func testDataplane() (*Dataplane, *fib6.Tables) {
	links := NewLinks()
	tables := fib6.NewTables()
	dp := New(links, decide.New(tables, rules.NewRegistry(func(string) int32 { return 0 }, 1), links))
	dp.AddLoopback()
	return dp, tables
}

// etherLink is an Ethernet link over fake frames, up, with
// 2001:db8:91::1/64 and its link-local address, in a dataplane of its own.
// Its addresses skip DAD, which would take a retrans time (a second):
// TestDADTransmits is DAD's test; addresses a test adds later have it.
func etherLink(t testing.TB) (*Link, *ether, *fakeFrames) {
	t.Helper()
	dp, _ := testDataplane()
	links := dp.Links
	f := newFakeFrames()
	e, err := newEther("tap", f, routerMAC, EtherOptions{Neigh: ndisc.DefaultParams()})
	if err != nil {
		t.Fatal(err)
	}
	l, err := dp.AddLink("e0", 0, e, 1500)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dp.Remove(l); err != nil {
			t.Error(err)
		}
	})
	links.SetUp(l, true)
	ll, _ := l.LinkLocal()
	l.SetDADTransmits(0)
	for _, a := range []netip.Prefix{netip.MustParsePrefix("2001:db8:91::1/64"), ll} {
		if err := links.AddAddr(l, a); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the addresses to be usable", func() bool {
		return l.DAD(ll.Addr()) == DADDone && l.DAD(netip.MustParseAddr("2001:db8:91::1")) == DADDone
	})
	l.SetDADTransmits(1) // Linux's default
	f.take()             // what the link sent as it came up
	return l, e, f
}

// ndFrame is a Neighbour Discovery message from the host, framed.
func ndFrame(typ header.ICMPv6Type, src, dst netip.Addr, body []byte, hopLimit uint8) []byte {
	b := make([]byte, port.EthHdrLen+ipv6Len+header.ICMPv6HeaderSize+len(body))
	copy(b[0:6], routerMAC[:])
	copy(b[6:12], hostMAC[:])
	binary.BigEndian.PutUint16(b[12:], port.EtherTypeIPv6)
	p := header.IPv6(b[port.EthHdrLen:])
	p.Encode(&header.IPv6Fields{PayloadLength: uint16(header.ICMPv6HeaderSize + len(body)),
		TransportProtocol: header.ICMPv6ProtocolNumber, HopLimit: hopLimit, SrcAddr: addrOf(src), DstAddr: addrOf(dst)})
	m := header.ICMPv6(p.Payload())
	m.SetType(typ)
	copy(m.MessageBody(), body)
	m.SetChecksum(header.ICMPv6Checksum(header.ICMPv6ChecksumParams{Header: m, Src: addrOf(src), Dst: addrOf(dst)}))
	return b
}

func naBody(target netip.Addr, solicited, override bool, mac ndisc.MAC) []byte {
	b := make([]byte, header.NDPNAMinimumSize+8)
	na := header.NDPNeighborAdvert(b)
	na.SetTargetAddress(tcpip.AddrFrom16(target.As16()))
	na.SetSolicitedFlag(solicited)
	na.SetOverrideFlag(override)
	copy(b[header.NDPNAMinimumSize:], append([]byte{optTargetLL, 1}, mac[:]...))
	return b
}

func nsBody(target netip.Addr, sll *ndisc.MAC) []byte {
	b := make([]byte, header.NDPNSMinimumSize)
	header.NDPNeighborSolicit(b).SetTargetAddress(tcpip.AddrFrom16(target.As16()))
	if sll != nil {
		b = append(b, optSourceLL, 1)
		b = append(b, sll[:]...)
	}
	return b
}

// waitSent waits for n frames written.
func waitSent(t *testing.T, f *fakeFrames, n int) []sentFrame {
	t.Helper()
	var got []sentFrame
	deadline := time.After(3 * time.Second)
	for got = f.take(); len(got) < n; got = append(got, f.take()...) {
		select {
		case <-f.wrote:
		case <-deadline:
			t.Fatalf("%d frames written, want %d", len(got), n)
		}
	}
	return got
}

// ndSettled waits until the ND goroutine has handled every message sent
// to it before: it handles them in order, and answers a DAD probe for
// the router's address own last. It returns the frames written before
// that answer.
func ndSettled(t *testing.T, f *fakeFrames, own netip.Addr) []sentFrame {
	t.Helper()
	f.rx <- ndFrame(header.ICMPv6NeighborSolicit, netip.IPv6Unspecified(), solicitedNode(own), nsBody(own, nil), 255)
	deadline := time.After(3 * time.Second)
	var got []sentFrame
	for {
		got = append(got, f.take()...)
		for i, s := range got {
			m := header.ICMPv6(header.IPv6(s.pkt).Payload())
			if m.Type() == header.ICMPv6NeighborAdvert &&
				netip.AddrFrom16(header.NDPNeighborAdvert(m.MessageBody()).TargetAddress().As16()) == own &&
				netip.AddrFrom16([16]byte(header.IPv6(s.pkt).DestinationAddressSlice())) == netip.MustParseAddr("ff02::1") {
				return got[:i]
			}
		}
		select {
		case <-f.wrote:
		case <-deadline:
			t.Fatalf("no answer to a DAD probe for %v: %d frames", own, len(got))
		}
	}
}

// TestEtherResolve: a packet to an unknown neighbour waits; the ND
// goroutine solicits it from the link-local address to its
// solicited-node group; its advertisement releases the packet to its MAC;
// the next packet goes at once. A solicitation for the router's address
// is answered as Linux answers it.
func TestEtherResolve(t *testing.T) {
	l, e, f := etherLink(t)
	pkt := make([]byte, vnetHdrLen+ipv6Len)
	header.IPv6(pkt[vnetHdrLen:]).Encode(&header.IPv6Fields{HopLimit: 63, SrcAddr: addrOf(netip.MustParseAddr("2001:db8:5::1")), DstAddr: addrOf(hostAddr)})
	if n, err := e.WriteBatch(0, [][]byte{pkt}, []netip.Addr{hostAddr}); n != 1 || err != nil {
		t.Fatalf("WriteBatch: %d %v", n, err)
	}
	ns := waitSent(t, f, 1)[0]
	ll, _ := l.LinkLocal()
	p := header.IPv6(ns.pkt)
	if ns.hdr[0] != 0x33 || ns.hdr[2] != 0xff || netip.AddrFrom16([16]byte(p.SourceAddressSlice())) != ll.Addr() ||
		netip.AddrFrom16([16]byte(p.DestinationAddressSlice())) != solicitedNode(hostAddr) || p.HopLimit() != 255 {
		t.Fatalf("solicitation to %x from %v to %v hop limit %d", ns.hdr[:6], p.SourceAddressSlice(), p.DestinationAddressSlice(), p.HopLimit())
	}
	f.rx <- ndFrame(header.ICMPv6NeighborAdvert, hostAddr, ll.Addr(), naBody(hostAddr, true, true, hostMAC), 255)
	rel := waitSent(t, f, 1)[0]
	if ndisc.MAC(rel.hdr[:6]) != hostMAC || ndisc.MAC(rel.hdr[6:12]) != routerMAC {
		t.Fatalf("the waiting packet went to %x from %x", rel.hdr[:6], rel.hdr[6:12])
	}
	if st, _ := e.neigh.State(hostAddr); st != ndisc.Reachable {
		t.Fatalf("after a solicited advertisement: %v", st)
	}
	if _, err := e.WriteBatch(0, [][]byte{pkt}, []netip.Addr{hostAddr}); err != nil {
		t.Fatal(err)
	}
	if got := f.take(); len(got) != 1 || ndisc.MAC(got[0].hdr[:6]) != hostMAC {
		t.Fatalf("a packet to a reachable neighbour: %v", got)
	}

	// multicast solicitation with the host's address: solicited, override,
	// router, the target's link-layer address; a unicast one (a NUD
	// probe): solicited and router only
	own := netip.MustParseAddr("2001:db8:91::1")
	for _, c := range []struct {
		dst           netip.Addr
		override, tll bool
	}{{solicitedNode(own), true, true}, {own, false, false}} {
		f.rx <- ndFrame(header.ICMPv6NeighborSolicit, hostAddr, c.dst, nsBody(own, &hostMAC), 255)
		na := waitSent(t, f, 1)[0]
		m := header.ICMPv6(header.IPv6(na.pkt).Payload())
		adv := header.NDPNeighborAdvert(m.MessageBody())
		_, hasTLL := linkOption(adv.Options(), optTargetLL)
		tll, _ := linkOption(adv.Options(), optTargetLL)
		if m.Type() != header.ICMPv6NeighborAdvert || !adv.RouterFlag() || !adv.SolicitedFlag() || adv.OverrideFlag() != c.override ||
			(tll != nil) != c.tll || !hasTLL || ndisc.MAC(na.hdr[:6]) != hostMAC {
			t.Errorf("answer to a solicitation to %v: type %d R %v S %v O %v TLL %x to %x", c.dst, m.Type(),
				adv.RouterFlag(), adv.SolicitedFlag(), adv.OverrideFlag(), tll, na.hdr[:6])
		}
	}
	// one from a node doing DAD for the router's address: to all-nodes
	f.rx <- ndFrame(header.ICMPv6NeighborSolicit, netip.IPv6Unspecified(), solicitedNode(own), nsBody(own, nil), 255)
	na := waitSent(t, f, 1)[0]
	if d := netip.AddrFrom16([16]byte(header.IPv6(na.pkt).DestinationAddressSlice())); d != allNodes {
		t.Errorf("answer to a DAD probe went to %v, want ff02::1", d)
	}
}

// TestEtherMalformed: Neighbour Discovery that RFC 4861 says to discard
// (hop limit below 255, bad checksum, a zero-length option, a solicitation
// from :: with a link-layer option) is counted and changes nothing.
func TestEtherMalformed(t *testing.T) {
	_, e, f := etherLink(t)
	own := netip.MustParseAddr("2001:db8:91::1")
	bad := [][]byte{
		ndFrame(header.ICMPv6NeighborSolicit, hostAddr, own, nsBody(own, &hostMAC), 64),
		ndFrame(header.ICMPv6NeighborSolicit, netip.IPv6Unspecified(), solicitedNode(own), nsBody(own, &hostMAC), 255),
		append(ndFrame(header.ICMPv6NeighborSolicit, hostAddr, own, nsBody(own, nil), 255), 0),
		ndFrame(header.ICMPv6NeighborSolicit, hostAddr, own, append(nsBody(own, nil), 1, 0, 0, 0, 0, 0, 0, 0), 255),
		// a source link-layer option of 14 bytes: no Ethernet address
		ndFrame(header.ICMPv6NeighborSolicit, hostAddr, own, append(nsBody(own, nil), append([]byte{optSourceLL, 2}, make([]byte, 14)...)...), 255),
	}
	sum := ndFrame(header.ICMPv6NeighborSolicit, hostAddr, own, nsBody(own, &hostMAC), 255)
	sum[port.EthHdrLen+ipv6Len+2] ^= 0xff
	bad = append(bad, sum, []byte{1, 2, 3})
	for _, b := range bad {
		if len(b) >= port.EthHdrLen {
			f.rx <- b
		}
	}
	if got := ndSettled(t, f, own); len(got) != 0 {
		t.Errorf("%d answers to malformed messages", len(got))
	}
	if e.neigh.Len() != 0 {
		t.Errorf("a malformed message made a neighbour entry")
	}
	if n := e.stats.NDDropped.Load(); n < 4 {
		t.Errorf("%d malformed messages counted", n)
	}
}

// TestEtherRace writes to neighbours from several goroutines while the
// cache learns and forgets them and the ND goroutine answers: under
// -race, and every frame goes to the MAC the host advertised.
func TestEtherRace(t *testing.T) {
	l, e, f := etherLink(t)
	ll, _ := l.LinkLocal()
	pkt := make([]byte, vnetHdrLen+ipv6Len)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pkts := [][]byte{pkt, pkt, pkt}
			via := []netip.Addr{hostAddr, hostAddr, netip.MustParseAddr("2001:db8:91::3")}
			for {
				select {
				case <-stop:
					return
				default:
				}
				own := make([][]byte, len(pkts))
				for i := range own {
					own[i] = append([]byte(nil), pkt...)
				}
				if _, err := e.WriteBatch(0, own, via); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 300; i++ {
		f.rx <- ndFrame(header.ICMPv6NeighborAdvert, hostAddr, ll.Addr(), naBody(hostAddr, i%2 == 0, true, hostMAC), 255)
		if i%50 == 0 {
			e.neigh.Flush(func(ndisc.Info) bool { return true })
		}
		for _, s := range f.take() {
			if d := ndisc.MAC(s.hdr[:6]); d != hostMAC && d[0] != 0x33 {
				t.Fatalf("a frame went to %v", d)
			}
		}
	}
	close(stop)
	wg.Wait()
}

// BenchmarkEtherWrite frames batches of 64 packets to a reachable
// neighbour: the fast path, 0 allocations.
func BenchmarkEtherWrite(b *testing.B) {
	_, e, f := etherLink(b)
	if err := e.neigh.Set(hostAddr, hostMAC, true, ndisc.Reachable, 0, ndisc.Add); err != nil {
		b.Fatal(err)
	}
	f.mu.Lock()
	f.sent = make([]sentFrame, 0, 1)
	f.mu.Unlock()
	discard := &discardFrames{fakeFrames: f}
	e.io = discard
	pkts := make([][]byte, 64)
	via := make([]netip.Addr, 64)
	for i := range pkts {
		pkts[i] = make([]byte, vnetHdrLen+ipv6Len+64)
		via[i] = hostAddr
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.WriteBatch(0, pkts, via); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/packet")
}

// discardFrames writes nothing: the benchmark measures the framing.
type discardFrames struct{ *fakeFrames }

func (*discardFrames) WriteFrames(_ []port.EthHdr, pkts [][]byte) (int, error) { return len(pkts), nil }
func (*discardFrames) WriteTagged(_ []byte, _ []port.EthHdr, pkts [][]byte) (int, error) {
	return len(pkts), nil
}

// dropsOf is link l's count of drops for reason.
func dropsOf(l *Link, reason DropReason) uint64 {
	for _, d := range l.Stats().Drops {
		if d.Reason == reason.String() {
			return d.Count
		}
	}
	return 0
}

// TestEtherCountsND: Neighbour Discovery in and out is in the link's
// counters, as every other packet (Linux counts it in the interface's
// statistics): 20 solicitations and their 20 advertisements.
func TestEtherCountsND(t *testing.T) {
	l, _, f := etherLink(t)
	own := netip.MustParseAddr("2001:db8:91::1")
	ns := ndFrame(header.ICMPv6NeighborSolicit, hostAddr, solicitedNode(own), nsBody(own, &hostMAC), 255)
	before := l.Stats()
	for i := 0; i < 20; i++ {
		f.rx <- ns
	}
	nas := waitSent(t, f, 20)
	after := l.Stats()
	rx, rxB := after.RxPackets-before.RxPackets, after.RxBytes-before.RxBytes
	tx, txB := after.TxPackets-before.TxPackets, after.TxBytes-before.TxBytes
	if rx != 20 || rxB != 20*uint64(len(ns)-port.EthHdrLen) || tx != 20 || txB != 20*uint64(len(nas[0].pkt)) {
		t.Errorf("20 NS in, 20 NA out: RX %d packets %d bytes, TX %d packets %d bytes; want 20 %d, 20 %d",
			rx, rxB, tx, txB, 20*(len(ns)-port.EthHdrLen), 20*len(nas[0].pkt))
	}
}

// TestEtherRefusesGroupMACs: a link-layer address option no unicast
// neighbour can have (a multicast or broadcast MAC, all zeros) voids the
// message, in a solicitation, an advertisement or a router solicitation:
// no entry is made or changed, nothing is answered, the refusal counted.
func TestEtherRefusesGroupMACs(t *testing.T) {
	l, e, f := etherLink(t)
	own := netip.MustParseAddr("2001:db8:91::1")
	other := netip.MustParseAddr("2001:db8:91::3")
	// the host is known, STALE with its own MAC
	f.rx <- ndFrame(header.ICMPv6NeighborSolicit, hostAddr, solicitedNode(own), nsBody(own, &hostMAC), 255)
	waitSent(t, f, 1)
	rs := func(mac ndisc.MAC) []byte {
		return append(make([]byte, header.NDPRSMinimumSize), append([]byte{optSourceLL, 1}, mac[:]...)...)
	}
	for _, bad := range []ndisc.MAC{{0x33, 0x33, 0, 0, 0, 1}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {}, {0x01, 0x00, 0x5e, 0, 0, 1}} {
		before := dropsOf(l, DropNDInvalid)
		f.rx <- ndFrame(header.ICMPv6NeighborSolicit, other, solicitedNode(own), nsBody(own, &bad), 255)
		f.rx <- ndFrame(header.ICMPv6NeighborSolicit, hostAddr, solicitedNode(own), nsBody(own, &bad), 255)
		f.rx <- ndFrame(header.ICMPv6NeighborAdvert, hostAddr, own, naBody(hostAddr, false, true, bad), 255)
		f.rx <- ndFrame(header.ICMPv6RouterSolicit, hostAddr, netip.MustParseAddr("ff02::2"), rs(bad), 255)
		waitFor(t, "the refusals", func() bool { return dropsOf(l, DropNDInvalid) == before+4 })
		if st, mac := e.neigh.State(hostAddr); st != ndisc.Stale || mac != hostMAC {
			t.Errorf("%v: the host's entry became %v %v", bad, st, mac)
		}
		if st, _ := e.neigh.State(other); st != ndisc.None {
			t.Errorf("%v: a solicitation made an entry %v", bad, st)
		}
		if got := f.take(); len(got) != 0 {
			t.Errorf("%v: %d answers", bad, len(got))
		}
	}
	// of two source link-layer options, the first is the one (as Linux)
	two := append(nsBody(own, &hostMAC), append([]byte{optSourceLL, 1}, 2, 0, 0, 0, 9, 9)...)
	f.rx <- ndFrame(header.ICMPv6NeighborSolicit, other, solicitedNode(own), two, 255)
	waitSent(t, f, 1)
	if _, mac := e.neigh.State(other); mac != hostMAC {
		t.Errorf("of two source link-layer options: %v, want the first, %v", mac, hostMAC)
	}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
