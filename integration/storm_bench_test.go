package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRouteStorm is forwarding through a route storm, urouter and the
// Linux kernel side by side in the same run. Each router holds the real
// table; a writer deletes 100,000 of its prefixes and adds them back, in
// chunks of 1,000, replacing the route the traffic uses between chunks
// (`-batch` files, again and again, as a BGP convergence storm would). Meanwhile
// iperf3 TCP crosses the router h1 -> h2 and h1 pings h2 every 10 ms.
//
//	h1 (2001:db8:1::2) --ta-- router --tb-- h2 (2001:db8:2::2, 2001:db8:22::2)
//
// urouter's links are TUNs (the demo lab's), the kernel's veths. Each
// round measures iperf3 idle and under the storm, in alternating order;
// reported per router: storm/idle (medians), changes/s, Gbit/s idle, pings
// lost. STORM_SECONDS (5) is each iperf3 run, STORM_ROUNDS (3) the rounds;
// STORM_FLAGS adds flags to urouter's daemon (--control-share 10, say).
func BenchmarkRouteStorm(b *testing.B) {
	needRoot(b)
	secs, rounds := envInt(b, "STORM_SECONDS", 5), envInt(b, "STORM_ROUNDS", 3)
	prefixes := realPrefixes(b)
	const inUse = "2001:db8:22::/64"
	dir := b.TempDir()
	load := filepath.Join(dir, "load.batch")
	storm := filepath.Join(dir, "storm.batch")
	var lb strings.Builder
	for _, p := range prefixes {
		lb.WriteString("route add " + p + " via 2001:db8:2::2 dev tb\n")
	}
	lb.WriteString("route add " + inUse + " via 2001:db8:2::2 dev tb\n")
	changes := writeStorm(b, storm, prefixes[:100000], inUse)
	if err := os.WriteFile(load, []byte(lb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, impl := range []string{"urouter", "kernel"} {
		b.Run(impl, func(b *testing.B) {
			l := &stormLab{b: b, h1: newNetns(b, "stm-h1"), h2: newNetns(b, "stm-h2"), secs: secs}
			r := newNetns(b, "stm-r")
			for _, h := range []string{l.h1, l.h2} {
				mustRun(b, "ip", "netns", "exec", h, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
			}
			if impl == "urouter" {
				l.urouter(plain, r, filepath.Join(dir, "urouter.sock"), load, storm, changes) // the race detector's costs are not the router's
			} else {
				l.kernel(r, load, storm, changes)
			}
			l.listen()
			var idle, stormy, rates []float64
			sent, got := 0, 0
			for i := 0; i < b.N*rounds; i++ {
				for _, under := range [][]bool{{false, true}, {true, false}}[i%2] {
					if !under {
						idle = append(idle, l.iperf(false))
						continue
					}
					bps, rate, s, g := l.underStorm()
					stormy, rates = append(stormy, bps), append(rates, rate)
					sent, got = sent+s, got+g
				}
			}
			ratio := median(stormy) / median(idle)
			b.ReportMetric(ratio, "storm/idle")
			b.ReportMetric(median(rates), "changes/s")
			b.ReportMetric(median(idle)/1e9, "Gbit/s-idle")
			b.ReportMetric(float64(sent-got), "pings-lost")
			b.Logf("%s: iperf3 idle %.2f Gbit/s, under the storm %.2f (%.3fx), %.0f changes/s, pings %d sent %d lost; CPUs busy %.0f%% idle, %.0f%% under the storm",
				impl, median(idle)/1e9, median(stormy)/1e9, ratio, median(rates), sent, sent-got, median(l.idleCPU)*100, median(l.stormCPU)*100)
		})
	}
}

// stormLab is one router of BenchmarkRouteStorm between its hosts h1 and
// h2, with write, one storm batch that returns the changes it made.
type stormLab struct {
	b                 *testing.B
	h1, h2            string
	secs              int
	write             func() (int, error)
	idleCPU, stormCPU []float64 // the machine's busy share during iperf3
}

// urouter is the router urouter, in netns r, on TUNs to the hosts.
func (l *stormLab) urouter(bin, r, sock, load, storm string, changes int) {
	b := l.b
	d := startBinary(b, bin, r, sock, strings.Fields(os.Getenv("STORM_FLAGS")),
		"link add ta type tun netns "+l.h1, "link add tb type tun netns "+l.h2,
		"link set ta up", "link set tb up",
		"address add 2001:db8:1::1/64 dev ta", "address add 2001:db8:2::1/64 dev tb")
	for i, h := range []string{l.h1, l.h2} {
		dev, n := []string{"ta", "tb"}[i], strconv.Itoa(i+1)
		mustRun(b, "ip", "-n", h, "link", "set", dev, "up")
		mustRun(b, "ip", "-n", h, "addr", "add", "2001:db8:"+n+"::2/64", "dev", dev, "nodad")
		mustRun(b, "ip", "-n", h, "-6", "route", "add", "default", "dev", dev)
	}
	if out, errs, st := d.run("-batch", load); st != 0 {
		b.Fatalf("loading the table: %s%s", out, errs)
	}
	l.write = func() (int, error) {
		if out, errs, st := d.run("-batch", storm); st != 0 {
			return 0, fmt.Errorf("storm batch: %s%s", out, errs)
		}
		return changes, nil
	}
}

// kernel is the router Linux, in netns r, on veths to the hosts.
func (l *stormLab) kernel(r, load, storm string, changes int) {
	b := l.b
	mustRun(b, "ip", "netns", "exec", r, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
	for i, h := range []string{l.h1, l.h2} {
		dev, n := []string{"ta", "tb"}[i], strconv.Itoa(i+1)
		mustRun(b, "ip", "-n", r, "link", "add", dev, "type", "veth", "peer", "name", dev, "netns", h)
		mustRun(b, "ip", "-n", r, "link", "set", dev, "up")
		mustRun(b, "ip", "-n", r, "addr", "add", "2001:db8:"+n+"::1/64", "dev", dev, "nodad")
		mustRun(b, "ip", "-n", h, "link", "set", dev, "up")
		mustRun(b, "ip", "-n", h, "addr", "add", "2001:db8:"+n+"::2/64", "dev", dev, "nodad")
		mustRun(b, "ip", "-n", h, "-6", "route", "add", "default", "via", "2001:db8:"+n+"::1", "dev", dev)
	}
	mustRun(b, "ip", "-n", r, "-batch", load)
	l.write = func() (int, error) {
		if out, errs, st := runCmd("ip", "-n", r, "-batch", storm); st != 0 {
			return 0, fmt.Errorf("storm batch: %s%s", out, errs)
		}
		return changes, nil
	}
}

// listen starts iperf3's server on h2's in-use address, and waits until
// h1 reaches it.
func (l *stormLab) listen() {
	mustRun(l.b, "ip", "-n", l.h2, "addr", "add", "2001:db8:22::2/128", "dev", "lo")
	startIn(l.b, l.h2, "iperf3", "-s", "-p", "5201")
	waitUntil(l.b, "iperf3 to listen", func() bool {
		_, _, st := runCmd("ip", "netns", "exec", l.h1, "ping", "-6", "-c", "1", "-W", "1", "2001:db8:22::2")
		out, _, _ := runCmd("ip", "netns", "exec", l.h2, "ss", "-ltnH", "sport = :5201")
		return st == 0 && out != ""
	})
}

// iperf runs iperf3 from h1 to h2 and returns what h2 received, bit/s;
// it notes the machine's busy share as idle or under the storm.
func (l *stormLab) iperf(under bool) float64 {
	b0, t0 := machineCPU()
	defer func() {
		b1, t1 := machineCPU()
		share := float64(b1-b0) / float64(max(t1-t0, 1))
		if under {
			l.stormCPU = append(l.stormCPU, share)
		} else {
			l.idleCPU = append(l.idleCPU, share)
		}
	}()
	out, errs, st := runCmd("ip", "netns", "exec", l.h1, "iperf3", "-6", "-c", "2001:db8:22::2", "-p", "5201", "-t", strconv.Itoa(l.secs), "-J")
	bps, ok := iperfReceived(out)
	if st != 0 || !ok {
		l.b.Fatalf("iperf3: %s%s", out, errs)
	}
	return bps
}

// underStorm runs iperf3 and a 10 ms ping while a writer storms the
// table: it returns iperf3's bit/s, the changes made a second, and the
// pings sent and answered.
func (l *stormLab) underStorm() (bps, rate float64, sent, got int) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	var made int
	var werr error
	start := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			n, err := l.write()
			if err != nil {
				werr = err
				return
			}
			made += n
		}
	}()
	ping := startIn(l.b, l.h1, "ping", "-6", "-q", "-i", "0.01", "-w", strconv.Itoa(l.secs), "2001:db8:22::2")
	bps = l.iperf(true)
	stop.Store(true)
	wg.Wait()
	if werr != nil {
		l.b.Fatal(werr)
	}
	rate = float64(made) / time.Since(start).Seconds()
	_ = ping.cmd.Wait() // -w ends it
	sent, got = pingCounts(ping.out.String())
	return bps, rate, sent, got
}

// writeStorm writes the storm batch: the prefixes deleted and added back,
// chunk by chunk, the in-use route replaced after each half chunk.
// It returns the number of changes in it.
func writeStorm(tb testing.TB, file string, ps []string, inUse string) int {
	const chunk = 1000
	var s strings.Builder
	n := 0
	replace := "route replace " + inUse + " via 2001:db8:2::2 dev tb\n"
	for i := 0; i < len(ps); i += chunk {
		part := ps[i:min(i+chunk, len(ps))]
		for _, verb := range []string{"route del ", "route add "} {
			for _, p := range part {
				s.WriteString(verb + p + " via 2001:db8:2::2 dev tb\n")
			}
			s.WriteString(replace)
			n += len(part) + 1
		}
	}
	if err := os.WriteFile(file, []byte(s.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return n
}

// machineCPU reads /proc/stat's first line: the jiffies all CPUs were busy
// (not idle or waiting on I/O), and all of them.
func machineCPU() (busy, total uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fs := strings.Fields(line)[1:]
	for i, f := range fs[:min(len(fs), 8)] { // guest time is in user time already
		v, _ := strconv.ParseUint(f, 10, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total
}
