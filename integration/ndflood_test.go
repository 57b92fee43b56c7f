package integration

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RFC 6583's Neighbour Discovery exhaustion: a scan of a /64 behind the
// router makes it resolve addresses nobody has. Each scanned address
// costs an INCOMPLETE entry, its held packets and mcast_solicit
// solicitations; a router that gives them the same room as real
// neighbours loses the real ones: a new neighbour meets a full table
// (Linux's "neighbor table overflow"), a known one's re-resolution too.

const (
	floodRate = 20000 // datagrams a second, to as many addresses
	floodFor  = 8 * time.Second
	floodTail = 3 * time.Second // the last addresses' retransmitted solicitations
	ndThresh3 = 1024            // gc_thresh3, set and read back
	ndPingGap = 20 * time.Millisecond
	ndCAfter  = 3 * time.Second // C is first pinged this far into the flood
	ndCGap    = time.Second     // and then every second, as ping does
	ndCWithin = time.Second     // its first ping answered: the second goes after this
	// from many sources C's first ping may meet a solicitation budget the
	// scan's entries spent (no source or kind tells them apart): its later
	// ones are asked for again, 200 ms apart
	ndCGapSpoofed, ndCWithinSpoofed = 200 * time.Millisecond, 3 * time.Second
	ndRSSBound                      = 32 << 20
)

var (
	ndFloodNet             = netip.MustParsePrefix("2001:db8:f2::/64")
	ndHostB, ndHostC       = "2001:db8:f2::2", "2001:db8:f2::3"
	ndGateway1, ndGateway2 = "2001:db8:f1::1", "2001:db8:f2::1"
)

// ndLab is a router between a host and a flooded LAN behind a switch
// (the container layout: the router on veths, `type host` links):
//
//	A 2001:db8:f1::2 ==veth eth0/r1== [router in r] ==veth r2/p0== [br0 in s] ==p1/eth0== B 2001:db8:f2::2
//	                                                                       \==p2/eth0== C 2001:db8:f2::3
//
// The router is urouter (lan1 on r1, lan2 on r2) or, for reference,
// Linux itself.
type ndLab struct {
	r, a, s, b, c string
	d             *daemon // urouter in r; nil when Linux routes
	// spoofed: the scan comes from a new random address of A's /64 each
	// datagram, not from A's own
	spoofed bool
}

// newNDLab builds the lab; bin is the urouter binary to run, "" for
// Linux as the router.
func newNDLab(t testing.TB, bin string) *ndLab {
	linux := bin == ""
	t.Helper()
	needRoot(t)
	l := &ndLab{r: newNetns(t, "nd-r"), a: newNetns(t, "nd-a"), s: newNetns(t, "nd-s"), b: newNetns(t, "nd-b"), c: newNetns(t, "nd-c")}
	mustRun(t, "ip", "-n", l.r, "link", "add", "r1", "type", "veth", "peer", "name", "eth0", "netns", l.a)
	mustRun(t, "ip", "-n", l.r, "link", "add", "r2", "type", "veth", "peer", "name", "p0", "netns", l.s)
	// the switch: no IPv6 of its own, and no MLD snooping, so that every
	// solicitation reaches every host as on a plain LAN
	mustRun(t, "ip", "netns", "exec", l.s, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	mustRun(t, "ip", "-n", l.s, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0")
	mustRun(t, "ip", "-n", l.s, "link", "set", "br0", "up")
	mustRun(t, "ip", "-n", l.s, "link", "set", "p0", "master", "br0", "up")
	for i, h := range []string{l.b, l.c} {
		port := "p" + strconv.Itoa(i+1)
		mustRun(t, "ip", "-n", l.s, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", h)
		mustRun(t, "ip", "-n", l.s, "link", "set", port, "master", "br0", "up")
	}
	for _, h := range []struct{ ns, addr, gw string }{
		{l.a, "2001:db8:f1::2/64", ndGateway1}, {l.b, ndHostB + "/64", ndGateway2}, {l.c, ndHostC + "/64", ndGateway2},
	} {
		mustRun(t, "ip", "netns", "exec", h.ns, "sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0")
		mustRun(t, "ip", "-n", h.ns, "addr", "add", h.addr, "dev", "eth0", "nodad")
		mustRun(t, "ip", "-n", h.ns, "link", "set", "eth0", "up")
		mustRun(t, "ip", "-n", h.ns, "-6", "route", "add", "default", "via", h.gw)
	}
	if linux {
		mustRun(t, "ip", "netns", "exec", l.r, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1",
			"net.ipv6.conf.r1.accept_dad=0", "net.ipv6.conf.r2.accept_dad=0")
		mustRun(t, "ip", "-n", l.r, "addr", "add", ndGateway1+"/64", "dev", "r1", "nodad")
		mustRun(t, "ip", "-n", l.r, "addr", "add", ndGateway2+"/64", "dev", "r2", "nodad")
		mustRun(t, "ip", "-n", l.r, "link", "set", "r1", "up")
		mustRun(t, "ip", "-n", l.r, "link", "set", "r2", "up")
	} else {
		l.d = startBinary(t, bin, l.r, filepath.Join(t.TempDir(), "urouter.sock"), []string{"--metrics", ndMetrics},
			"link add lan1 type host dev r1", "link add lan2 type host dev r2",
			"link set lan1 up", "link set lan2 up",
			"address add "+ndGateway1+"/64 dev lan1", "address add "+ndGateway2+"/64 dev lan2",
			"ntable change name ndisc_cache dev lan2 thresh3 "+strconv.Itoa(ndThresh3))
	}
	// B only: C must stay a host the router has never heard of
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, _, st := runCmd("ip", "netns", "exec", l.a, "ping", "-6", "-c", "3", "-i", "0.1", "-W", "1", ndHostB)
		if st == 0 && strings.Contains(out, " 3 received") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A cannot reach B through the router:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return l
}

// ndMetrics is where urouter serves /metrics, in its namespace.
const ndMetrics = "127.0.0.1:9108"

// goSys is go_memstats_sys_bytes of urouter.
func (l *ndLab) goSys(t testing.TB) float64 {
	v, _ := metricValue(scrape(t, l.r, ndMetrics), "go_memstats_sys_bytes", nil)
	return v
}

// name says which router this is.
func (l *ndLab) name() string {
	if l.d == nil {
		return "linux"
	}
	return "urouter"
}

// pid is the router's process (0 for the kernel): `ip netns exec` execs
// urouter in place, so the daemon's command is it.
func (l *ndLab) pid() int {
	if l.d == nil {
		return 0
	}
	return l.d.cmd.Process.Pid
}

// entries counts the router's neighbour entries on the flooded link, in
// every state.
func (l *ndLab) entries() int {
	if l.d != nil {
		out, _, _ := l.d.run("ntable", "show", "dev", "lan2")
		if m := regexp.MustCompile(`entries (\d+) `).FindStringSubmatch(out); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
		return -1
	}
	out, _, _ := runCmd("ip", "-n", l.r, "-6", "neigh", "show", "nud", "all", "dev", "r2")
	return strings.Count(out, "\n")
}

// thresh3 reads back the flooded link's gc_thresh3 (Linux's is the
// table's, for every namespace: left at its default).
func (l *ndLab) thresh3(t testing.TB) int {
	var out string
	if l.d != nil {
		out, _, _ = l.d.run("ntable", "show", "dev", "lan2")
	} else {
		out = mustRun(t, "ip", "-n", l.r, "ntable", "show", "name", "ndisc_cache")
	}
	m := regexp.MustCompile(`thresh3 (\d+) `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no thresh3 in ntable show:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// neighState is the router's state for addr on the flooded link.
func (l *ndLab) neighState(addr string) string {
	var out string
	if l.d != nil {
		out, _, _ = l.d.run("neigh", "show", addr, "dev", "lan2")
	} else {
		out, _, _ = runCmd("ip", "-n", l.r, "-6", "neigh", "show", addr, "dev", "r2")
	}
	return strings.TrimSpace(out)
}

// ndFigures are what one flood measured.
type ndFigures struct {
	sent        int           // datagrams the flood sent
	took        time.Duration // how long it sent
	bSent, bGot int           // B's pings during the flood
	cAnswer     time.Duration // from C's first ping to its first reply; 0: none
	thresh3     int
	peakEntries int
	rssBefore   int64 // kB; the router's process (urouter only)
	rssPeak     int64
	// the Go runtime's memory from the OS (go_memstats_sys_bytes, which
	// only grows, so after is the peak): what RSS is without the race
	// detector's own
	goSysBefore, goSysAfter float64
	cpu                     time.Duration // the router's process's CPU during flood and tail
	slabGrowth              int64         // kB, the whole machine's slab (Linux's entries live there)

	ns         int         // solicitations C saw, flood and tail
	nsPer      map[int]int // flooded addresses by how many solicitations each had
	nsMax      int
	afterB     bool
	afterC     bool
	afterUnrch string // what a ping to a new address of lan2 got
}

func (f *ndFigures) rate() float64 { return float64(f.sent) / f.took.Seconds() }

func (f *ndFigures) String() string {
	targets := 0
	for _, n := range f.nsPer {
		targets += n
	}
	c := "no answer"
	if f.cAnswer > 0 {
		c = f.cAnswer.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("flood %d datagrams in %v (%.0f/s, %d/s asked); B %d/%d pings (%.1f%%); C's first answer %s; "+
		"table peak %d entries (thresh3 %d); RSS %d -> %d kB (+%.1f MB); Go runtime's +%.1f MB; CPU %v (%.0f%% of a core); slab +%d kB (machine-wide); "+
		"NS %d (%.0f/s) for %d flooded addresses (%.1f%% of those sent), at most %d per address, by count %v; "+
		"after: A->B %v, A->C %v, a new address: %s",
		f.sent, f.took.Round(time.Millisecond), f.rate(), floodRate, f.bGot, f.bSent, 100*float64(f.bGot)/float64(max(f.bSent, 1)), c,
		f.peakEntries, f.thresh3, f.rssBefore, f.rssPeak, float64(f.rssPeak-f.rssBefore)/1024, (f.goSysAfter-f.goSysBefore)/(1<<20), f.cpu.Round(10*time.Millisecond),
		100*f.cpu.Seconds()/(floodFor+floodTail).Seconds(), f.slabGrowth,
		f.ns, float64(f.ns)/(floodFor+floodTail).Seconds(), targets, 100*float64(targets)/float64(max(f.sent, 1)), f.nsMax, f.nsPer,
		f.afterB, f.afterC, f.afterUnrch)
}

// ndFlood floods l's LAN as RFC 6583 describes, from A, and measures
// while it lasts what the router owes its real neighbours, then what
// works after.
func ndFlood(t testing.TB, l *ndLab) *ndFigures {
	t.Helper()
	f := &ndFigures{thresh3: l.thresh3(t), nsPer: map[int]int{}}
	t.Logf("%s: B before the flood: %s", l.name(), l.neighState(ndHostB))
	if st := l.neighState(ndHostC); st != "" {
		t.Fatalf("the router knows C before anyone talked to it: %s", st)
	}

	// every multicast solicitation the router sends onto lan2 (the switch
	// floods them to C; a bridge port's own packet socket would see none:
	// the bridge takes its frames first), counted per target as it comes
	// in, kept in no list: there may be a few hundred thousand
	perTarget := map[netip.Addr]int{}
	solicitations := capture(t, l.c, "eth0", func(p []byte) bool {
		if len(p) >= 64 && p[6] == 58 && p[40] == 135 {
			f.ns++
			perTarget[netip.AddrFrom16([16]byte(p[48:64]))]++
		}
		return false
	})
	send := floodSender(t, l.a, l.spoofed)
	pingC := firstReply(t, l.a, ndHostC)

	// the same rate to B first, so that what the scan is measured against
	// is a router already forwarding it: the packet path's own memory (a
	// race-built daemon's grows some 40 MB from the Go runtime alone: the
	// race detector's sync.Pool drops what is put back) is not the cache's
	send(floodRate, 3*time.Second, false)
	pid := l.pid()
	f.rssBefore = vmRSS(pid)
	var cpuBefore int
	if pid != 0 {
		cpuBefore = cpuTicks(t, pid)
		f.goSysBefore = l.goSys(t)
	}
	slabBefore := meminfo("Slab")
	stopSampling := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Go(func() { // peaks, every 200 ms: a client is a process, and the machine has 2 cores
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			f.peakEntries = max(f.peakEntries, l.entries())
			f.rssPeak = max(f.rssPeak, vmRSS(pid))
			f.slabGrowth = max(f.slabGrowth, meminfo("Slab")-slabBefore)
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	})

	var flooded sync.WaitGroup
	flooded.Go(func() { f.sent, f.took = send(floodRate, floodFor, true) })
	pingB := startIn(t, l.a, "ping", "-6", "-i", fmt.Sprintf("%.3f", ndPingGap.Seconds()),
		"-c", strconv.Itoa(int(floodFor/ndPingGap)), "-W", "1", ndHostB)
	var pingedC sync.WaitGroup
	pingedC.Go(func() {
		// how long C, new to the router, takes to answer: a ping every
		// second from its first until its first reply, up to the flood's end
		time.Sleep(ndCAfter)
		f.cAnswer = pingC(map[bool]time.Duration{false: ndCGap, true: ndCGapSpoofed}[l.spoofed], floodFor-ndCAfter)
	})
	solicitations(1<<31-1, floodFor+floodTail) // this goroutine reads the capture until the tail's end
	flooded.Wait()
	pingedC.Wait()
	_ = pingB.cmd.Wait() // ping's exit status says what its output says
	close(stopSampling)
	sampled.Wait()
	if pid != 0 {
		f.cpu = time.Duration(cpuTicks(t, pid)-cpuBefore) * time.Second / 100 // USER_HZ
		f.goSysAfter = l.goSys(t)
	}
	f.bSent, f.bGot = pingCounts(pingB.out.String())

	for a, n := range perTarget {
		if ndFloodNet.Contains(a) && a.String() != ndHostB && a.String() != ndHostC && a.String() != ndGateway2 {
			f.nsPer[n]++
			f.nsMax = max(f.nsMax, n)
		}
	}

	l.after(f)
	t.Logf("%s: %s", l.name(), f)
	return f
}

// after checks what forwards once the flood is over: A to B and to C,
// and a new address of lan2, which must earn Address Unreachable.
func (l *ndLab) after(f *ndFigures) {
	ping := func(dst string, wait string) (string, int) {
		out, _, st := runCmd("ip", "netns", "exec", l.a, "ping", "-6", "-c", "3", "-i", "0.2", "-W", wait, dst)
		return out, st
	}
	_, st := ping(ndHostB, "2")
	f.afterB = st == 0
	_, st = ping(ndHostC, "2")
	f.afterC = st == 0
	out, _ := ping("2001:db8:f2::99", "5")
	switch {
	case strings.Contains(out, "Address unreachable"):
		f.afterUnrch = "Address Unreachable"
	case strings.Contains(out, "100% packet loss"):
		f.afterUnrch = "silence"
	default:
		f.afterUnrch = strings.Join(strings.Fields(out), " ")
	}
}

// TestNDExhaustion: urouter under RFC 6583's scan of a /64 behind it
// (20,000 new addresses a second for 8 s, from one source, then each
// from a new address of the source's /64) keeps a REACHABLE neighbour,
// resolves a new real one (from one source at the flooder's first ping to
// it, pinged every second; from many within 3 s), keeps its cache within gc_thresh3
// and (from one source: the flood) its memory within 32 MB,
// solicits each scanned address at most mcast_solicit times, and
// forwards after as before.
func TestNDExhaustion(t *testing.T) {
	measures(t)
	for _, spoofed := range []bool{false, true} {
		t.Run(map[bool]string{false: "one source", true: "many sources"}[spoofed], func(t *testing.T) {
			testNDExhaustion(t, spoofed)
		})
	}
}

func testNDExhaustion(t testing.TB, spoofed bool) {
	// The daemon is built without the race detector, as users run it:
	// under a flood of each datagram a new entry the race-built one spends
	// a core on that alone and drops B's pings with the rest, and its
	// memory holds the detector's shadow of every heap address touched
	// (checkNDMemory's bound would measure that). The path's races are
	// ndisc's TestUnresStress's and TestFastPathRace's, under -race.
	l := newNDLab(t, plain)
	l.spoofed = spoofed
	f := ndFlood(t, l)
	stats, _, _ := l.d.run("-s", "link", "show")
	t.Logf("urouter's counters after the flood:\n%s", stats)
	l.d.stop()
	logs := strings.Split(strings.TrimSpace(l.d.log.String()), "\n")
	t.Logf("urouter logged %d lines; the first: %q", len(logs), logs[:min(len(logs), 5)])

	// the bar is urouter's; the flood's is the lab's: one much below the
	// rate asked would prove little
	if f.rate() < floodRate/4 {
		t.Errorf("the flood reached %.0f datagrams/s of %d: too weak to judge", f.rate(), floodRate)
	}
	if f.bSent == 0 || float64(f.bGot) < 0.98*float64(f.bSent) {
		t.Errorf("REACHABLE B answered %d of %d pings during the flood; want >= 98%%", f.bGot, f.bSent)
	}
	if within := map[bool]time.Duration{false: ndCWithin, true: ndCWithinSpoofed}[spoofed]; f.cAnswer == 0 || f.cAnswer > within {
		t.Errorf("C, new to the router, first answered after %v (0: never); want within %v", f.cAnswer, within)
	}
	if f.peakEntries > f.thresh3 || f.thresh3 != ndThresh3 {
		t.Errorf("lan2's cache peaked at %d entries; thresh3 is %d (set %d)", f.peakEntries, f.thresh3, ndThresh3)
	}
	if spoofed {
		// every datagram a new source: each is a new entry that gives way
		// to the next, some 1 KB of garbage a datagram, and the heap grows
		// to what GOGC=400 allows over the live one (the workers' buffers,
		// some 14 MB): the Go runtime's, not the cache's, which holds at
		// most unres_max entries and unres_total_bytes
		t.Logf("many sources: RSS %+.1f MB, Go runtime %+.1f MB", float64(f.rssPeak-f.rssBefore)/1024, (f.goSysAfter-f.goSysBefore)/(1<<20))
	} else {
		checkNDMemory(t, f)
	}
	if f.nsMax > 3 {
		t.Errorf("a scanned address was solicited %d times; mcast_solicit is 3 (by count: %v)", f.nsMax, f.nsPer)
	}
	if !f.afterB || !f.afterC {
		t.Errorf("after the flood: A->B %v, A->C %v", f.afterB, f.afterC)
	}
	if f.afterUnrch != "Address Unreachable" {
		t.Errorf("a ping to a new address of lan2 after the flood got %s, want Address Unreachable", f.afterUnrch)
	}
}

// checkNDMemory: the router's memory grows < 32 MB under the flood,
// measured from a router already forwarding the same rate to B (see
// ndFlood): what grows is the scan's.
func checkNDMemory(t testing.TB, f *ndFigures) {
	t.Helper()
	if grew := (f.rssPeak - f.rssBefore) << 10; grew >= ndRSSBound {
		t.Errorf("urouter's RSS grew %.1f MB (%d -> %d kB); want < 32 MB", float64(grew)/(1<<20), f.rssBefore, f.rssPeak)
	}
	if grew := f.goSysAfter - f.goSysBefore; grew >= ndRSSBound {
		t.Errorf("urouter's Go runtime took %.1f MB more from the OS; want < 32 MB", grew/(1<<20))
	}
}

// BenchmarkNDExhaustionLinux is the reference, a figure and no bar: the
// same flood with Linux as the router (Linux is expected to miss
// urouter's bar; bench/README.md keeps its figures). Linux's neighbour
// table is the machine's, shared by every namespace: for 8 s it is full,
// for anything beside this too. One flood whatever b.N: run it with
// -benchtime 1x.
func BenchmarkNDExhaustionLinux(b *testing.B) {
	l := newNDLab(b, "")
	overflows := func() int {
		out, _, _ := runCmd("dmesg")
		return strings.Count(out, "neighbor table overflow")
	}
	before := overflows()
	f := ndFlood(b, l)
	b.ReportMetric(float64(f.peakEntries), "peak-entries")
	b.ReportMetric(float64(f.cAnswer.Milliseconds()), "C-first-answer-ms")
	b.ReportMetric(100*float64(f.bGot)/float64(max(f.bSent, 1)), "B-answered-%")
	b.Logf("linux: the kernel logged \"neighbor table overflow\" %d times (rate-limited)", overflows()-before)
}
