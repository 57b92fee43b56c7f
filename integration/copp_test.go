package integration

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCoPP: a LAN host floods the router's address on lan1, the link of
// a BGP peer, with echo requests and with TCP SYNs (to 179 and to random
// ports), while bgpd's sessions (hold time 9 s) run through the mirrors
// and iperf3 TCP crosses the router from lan3 to lan2. First paced
// (coppPaced of each a second): the transit keeps at least coppTransit of
// its rate measured just before. Then as fast as the host sends,
// for longer than the hold time (on this machine the flooding host shares
// the router's two CPUs, so transit is not asked of it): the sessions
// stay up. The floods are policed in their classes (echo and other) and
// routing loses nothing.
//
// The daemon is built without the race detector, as users run it: a
// race-built one spends five to ten times the CPU on a packet, and on a
// machine of two cores shared with the flooding host and iperf3 its
// transit would measure the detector. A race-built daemon is flooded so
// by TestBFD, TestCoPPLLDPFlood and TestCoPPPeerFlood, and the buckets'
// races are dataplane's tests', under -race.
func TestCoPP(t *testing.T) {
	measures(t)
	const n = 200
	timers := " neighbor 2001:db8:d1::2 timers 3 9\n neighbor 2001:db8:d2::2 timers 3 9\n"
	start := time.Now()
	l := newFRRLabOf(t, plain, n, false, timers)
	l.converge(n, start, 30*time.Second)
	before := l.bgpPeers()
	for p, s := range before {
		if s.State != "Established" {
			t.Fatalf("BGP peer %s: %s before the flood\n%s", p, s.State, l.state())
		}
	}
	if hold := l.holdTime("2001:db8:d1::2"); hold != 9000 {
		t.Fatalf("hold time %d ms, want the 9 s configured", hold)
	}
	// the flood comes from an address of peer 1's host that has no session
	const flooder = "2001:db8:d1::66"
	mustRun(t, "ip", "-n", l.p[0], "addr", "add", flooder+"/64", "dev", "eth0", "nodad")
	// the transit goes to peer 2's host, on lan2, from the host on lan3
	mustRun(t, "ip", "-n", l.p[1], "addr", "add", transitDst+"/128", "dev", "lo")
	srv := startIn(t, l.p[1], "iperf3", "-s", "-B", transitDst, "-p", "5301")
	defer srv.stop()
	waitUntil(t, "iperf3 to listen", func() bool {
		o, _, _ := runCmd("ip", "netns", "exec", l.p[1], "ss", "-Htln", "sport", "= :5301")
		return strings.Contains(o, "5301")
	})
	// idle and flooded in turns, five times, so that what else the
	// machine does weighs on both alike
	stats0 := coppStats(t, l.d, "lan1")
	var idle, busy float64
	const rounds = 5
	for round := 0; round < rounds; round++ {
		idle += l.transit(t)
		f := l.startFlood(t, flooder, coppPaced)
		if round == 0 {
			t.Logf("the daemon's CPU under the paced flood: %.2f", l.d.idleCPU(t))
		} else {
			time.Sleep(200 * time.Millisecond)
		}
		busy += l.transit(t)
		f.stop(t, "paced")
	}
	t.Logf("transit TCP lan3 -> lan2: idle %.2f Gbit/s, under the paced flood %.2f Gbit/s (%.2f)", idle/rounds/1e9, busy/rounds/1e9, busy/idle)
	if busy < coppTransit*idle {
		t.Errorf("transit under the paced flood %.2f Gbit/s, below %.1f of its idle %.2f", busy/rounds/1e9, coppTransit, idle/rounds/1e9)
	}
	l.checkPeers(t, before, "the paced flood")
	stats1 := coppStats(t, l.d, "lan1")
	logCoPP(t, "paced", stats0, stats1)

	f := l.startFlood(t, flooder, 0) // as fast as the host sends
	time.Sleep(12 * time.Second)     // longer than the hold time: a starved session would drop
	f.stop(t, "full")
	l.checkPeers(t, before, "the full flood")
	stats2 := coppStats(t, l.d, "lan1")
	logCoPP(t, "full", stats1, stats2)
	if stats1["echo"].Dropped == stats0["echo"].Dropped || stats1["other"].Dropped == stats0["other"].Dropped ||
		stats1["routing"].Passed == stats0["routing"].Passed {
		t.Errorf("lan1's CoPP counters after the paced flood: %+v, before %+v", stats1, stats0)
	}
	if stats2["echo"].Dropped == stats1["echo"].Dropped || stats2["other"].Dropped == stats1["other"].Dropped ||
		stats2["routing"].Dropped != 0 || stats2["routing"].Passed == stats1["routing"].Passed {
		t.Errorf("lan1's CoPP counters after the full flood: %+v, before %+v", stats2, stats1)
	}
	if o, _, _ := l.d.run("-s", "link", "show", "lan1"); !strings.Contains(o, "    copp echo passed ") || !strings.Contains(o, "    drop policed ") {
		t.Errorf("link show -s lan1:\n%s", o)
	}
}

// TestCoPP's paced flood, echo requests and SYNs a second of each (ten
// times echo's limit, five times other's), and the share of its idle rate
// the transit keeps under it.
const (
	coppPaced   = 10_000
	coppTransit = 0.8
)

func logCoPP(t *testing.T, what string, from, to map[string]coppCount) {
	for _, c := range []string{"nd", "routing", "echo", "other"} {
		t.Logf("%s flood: lan1 copp %s passed %d dropped %d", what, c, to[c].Passed-from[c].Passed, to[c].Dropped-from[c].Dropped)
	}
}

// checkPeers: both BGP sessions are still the ones established before.
func (l *frrLab) checkPeers(t *testing.T, before map[string]bgpPeer, during string) {
	t.Helper()
	after := l.bgpPeers()
	for p, b := range before {
		a := after[p]
		if a.State != "Established" || a.ConnectionsDropped != b.ConnectionsDropped || a.ConnectionsEstablished != b.ConnectionsEstablished {
			o, _, _ := runCmd("ip", "netns", "exec", l.r, "vtysh", "--vty_socket", l.dir, "-c", "show bgp neighbors "+p)
			t.Errorf("after %s BGP peer %s: %s, established %d dropped %d; before %s, %d and %d\n%s\n%s", during,
				p, a.State, a.ConnectionsEstablished, a.ConnectionsDropped, b.State, b.ConnectionsEstablished, b.ConnectionsDropped, o, l.state())
		}
	}
}

// bgpPeer is what `show bgp summary json` says of a peer.
type bgpPeer struct {
	State                  string `json:"state"`
	ConnectionsEstablished int    `json:"connectionsEstablished"`
	ConnectionsDropped     int    `json:"connectionsDropped"`
}

// bgpPeers is bgpd's peers, by address.
func (l *frrLab) bgpPeers() map[string]bgpPeer {
	o := mustRun(l.t, "ip", "netns", "exec", l.r, "vtysh", "--vty_socket", l.dir, "-c", "show bgp ipv6 unicast summary json")
	var sum struct {
		Peers map[string]bgpPeer `json:"peers"`
	}
	if err := json.Unmarshal([]byte(o), &sum); err != nil || len(sum.Peers) != 2 {
		l.t.Fatalf("show bgp summary json: %v\n%s", err, o)
	}
	return sum.Peers
}

// holdTime is the hold time negotiated with peer, in ms.
func (l *frrLab) holdTime(peer string) int {
	o := mustRun(l.t, "ip", "netns", "exec", l.r, "vtysh", "--vty_socket", l.dir, "-c", "show bgp neighbors "+peer+" json")
	var nb map[string]struct {
		Hold int `json:"bgpTimerHoldTimeMsecs"`
	}
	if err := json.Unmarshal([]byte(o), &nb); err != nil {
		l.t.Fatalf("show bgp neighbors json: %v\n%s", err, o)
	}
	return nb[peer].Hold
}

// transitDst is in a prefix peer 2 alone announces (of 200).
const transitDst = "2001:db8:a000:aa::1"

// transit is iperf3's TCP from the host on lan3 to peer 2's transitDst,
// across the router, in bit/s.
func (l *frrLab) transit(t *testing.T) float64 {
	t.Helper()
	o, e, st := runCmd("ip", "netns", "exec", l.h, "iperf3", "-c", transitDst, "-p", "5301", "-t", "2", "-J")
	bps, ok := iperfReceived(o)
	if st != 0 || !ok || bps == 0 {
		t.Fatalf("iperf3 across the router: %s%s", o, e)
	}
	return bps
}

// flood is a running flood of echo requests and of TCP SYNs.
type flood struct {
	done         chan struct{}
	wg           sync.WaitGroup
	echoes, syns atomic.Uint64
	start        time.Time
}

// startFlood floods the router's address on lan1 from src on peer 1's
// host with echo requests and with SYNs, rate of each a second (0: as
// fast as a raw socket takes them).
func (l *frrLab) startFlood(t *testing.T, src string, rate int) *flood {
	return startFloodIn(t, l.p[0], src, "2001:db8:d1::1", rate)
}

// startFloodIn floods dst from src in namespace ns, as startFlood.
func startFloodIn(t *testing.T, ns, src, dst string, rate int) *flood {
	f := &flood{done: make(chan struct{}), start: time.Now()}
	f.send(t, ns, src, dst, unix.IPPROTO_ICMPV6, rate, &f.echoes)
	f.send(t, ns, src, dst, unix.IPPROTO_TCP, rate, &f.syns)
	return f
}

func (f *flood) stop(t *testing.T, what string) {
	close(f.done)
	f.wg.Wait()
	secs := time.Since(f.start).Seconds()
	t.Logf("%s flood for %.1f s: %.0f echo requests/s, %.0f SYNs/s", what, secs, float64(f.echoes.Load())/secs, float64(f.syns.Load())/secs)
}

// send sends, from src in namespace ns, echo requests (ICMPv6) or TCP
// SYNs (half to 179, half to random ports) to dst, rate a second or as
// fast as it can, until f is stopped, counting them in sent.
func (f *flood) send(t *testing.T, ns, src, dst string, proto, rate int, sent *atomic.Uint64) {
	var fd int
	inNetns(t, ns, func() {
		var err error
		if fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_RAW, proto); err != nil {
			t.Fatal(err)
		}
		if proto == unix.IPPROTO_TCP { // the kernel fills in the checksum (ICMPv6's it always does)
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_CHECKSUM, 16); err != nil {
				t.Fatal(err)
			}
		}
		if err := unix.Bind(fd, &unix.SockaddrInet6{Addr: netip.MustParseAddr(src).As16()}); err != nil {
			t.Fatal(err)
		}
	})
	to := &unix.SockaddrInet6{Addr: netip.MustParseAddr(dst).As16()}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer func() { _ = unix.Close(fd) }()
		b := make([]byte, 20)
		for i := 0; ; i++ {
			if i%64 == 0 {
				select {
				case <-f.done:
					return
				default:
				}
			}
			if rate > 0 && float64(i) > time.Since(f.start).Seconds()*float64(rate) {
				time.Sleep(200 * time.Microsecond)
				i--
				continue
			}
			if proto == unix.IPPROTO_TCP {
				synTo(b, i)
			} else {
				b = append(b[:0], 128, 0, 0, 0, 0x0c, 0x0b, byte(i>>8), byte(i))
			}
			if err := unix.Sendto(fd, b, unix.MSG_DONTWAIT, to); err == nil {
				sent.Add(1)
			}
		}
	}()
}

// synTo makes b (20 bytes) the i'th SYN of the flood: from a random port,
// every other one to 179, the rest to random ports.
func synTo(b []byte, i int) {
	clear(b)
	dport := uint16(179)
	if i%2 == 1 {
		dport = uint16(1024 + rand.IntN(60000))
	}
	binary.BigEndian.PutUint16(b[0:], uint16(1024+rand.IntN(60000)))
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint32(b[4:], rand.Uint32())
	b[12], b[13] = 5<<4, 0x02 // data offset 5 words; SYN
	binary.BigEndian.PutUint16(b[14:], 64240)
}

// coppCount is a class's counters in `link show -s -j`.
type coppCount struct {
	Passed  uint64 `json:"passed"`
	Dropped uint64 `json:"dropped"`
}

func coppStats(t *testing.T, d *daemon, link string) map[string]coppCount {
	t.Helper()
	return linkStats64(t, d, link).CoPP
}
