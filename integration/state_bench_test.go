package integration

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkStateRestart is a restart with the real table in the state
// file: from the daemon's exec to the first packet it forwards again, to
// an address of the last prefix the table added. Two veth hosts, on
// Ethernet links of the router (AF_PACKET: the kernel's side of the links
// outlives the daemon, as a container's veths do); each round kills the
// daemon (-9), waits until nothing passes, and starts it again with
// --state alone. Reported: s/restart (the bar is 0.5 s).
func BenchmarkStateRestart(b *testing.B) {
	needRoot(b)
	l := newRestartLab(b)
	dir := b.TempDir()
	l.state, l.sock = filepath.Join(dir, "urouter.state"), filepath.Join(dir, "urouter.sock")
	l.load(plain, dir) // the race detector's start-up and memory are not the router's
	arrived := l.flow()

	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// quiet: nothing passes while no daemon runs
		for deadline := time.Now().Add(5 * time.Second); time.Since(time.Unix(0, arrived.Load())) < 100*time.Millisecond; {
			if time.Now().After(deadline) {
				b.Fatal("datagrams pass with no router")
			}
			time.Sleep(10 * time.Millisecond)
		}
		b.StartTimer()
		total += l.restart(plain, arrived)
	}
	b.StopTimer()
	b.ReportMetric(total.Seconds()/float64(b.N), "s/restart")
	b.ReportMetric(0, "ns/op")
}

// restartLab is BenchmarkStateRestart's router netns r, its hosts h1 and
// h2 on veths, and the destination dst on h2, in last, the last prefix of
// the real table.
type restartLab struct {
	b           *testing.B
	r, h1, h2   string
	last        netip.Prefix
	dst         netip.Addr
	state, sock string
}

func newRestartLab(b *testing.B) *restartLab {
	l := &restartLab{b: b, r: newNetns(b, "str-r"), h1: newNetns(b, "str-h1"), h2: newNetns(b, "str-h2")}
	for i, h := range []string{l.h1, l.h2} {
		n := string(rune('1' + i))
		mustRun(b, "ip", "-n", l.r, "link", "add", "e"+n, "type", "veth", "peer", "name", "p"+n, "netns", h)
		mustRun(b, "ip", "-n", l.r, "link", "set", "e"+n, "up")
		mustRun(b, "ip", "netns", "exec", h, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
		mustRun(b, "ip", "-n", h, "link", "set", "p"+n, "up")
		mustRun(b, "ip", "-n", h, "addr", "add", "2001:db8:"+n+"::2/64", "dev", "p"+n, "nodad")
		mustRun(b, "ip", "-n", h, "-6", "route", "add", "default", "via", "2001:db8:"+n+"::1", "dev", "p"+n)
	}
	// h1 knows the router's MAC (its veth's, the same after a restart):
	// what is measured is the router's start, not h1's neighbour probes
	// of a router that was away (a second apart, as Linux retransmits)
	mac := regexp.MustCompile(`link/ether (\S+)`).FindStringSubmatch(mustRun(b, "ip", "-n", l.r, "link", "show", "e1"))
	if mac == nil {
		b.Fatal("no MAC on e1")
	}
	mustRun(b, "ip", "-n", l.h1, "neigh", "replace", "2001:db8:1::1", "lladdr", mac[1], "dev", "p1", "nud", "permanent")
	return l
}

// load makes the state file: the links, and the real table through h2.
func (l *restartLab) load(bin, dir string) {
	b := l.b
	prefixes := realPrefixes(b)
	l.last = netip.MustParsePrefix(prefixes[len(prefixes)-1])
	l.dst = l.last.Addr().Next() // in the last prefix added
	mustRun(b, "ip", "-n", l.h2, "addr", "add", l.dst.String()+"/128", "dev", "p2", "nodad")
	conf := []string{"link add e1 type host dev e1", "link add e2 type host dev e2", "link set e1 up", "link set e2 up",
		"address add 2001:db8:1::1/64 dev e1", "address add 2001:db8:2::1/64 dev e2"}
	d := startBinary(b, bin, l.r, l.sock, []string{"--state", l.state}, conf...)
	var batch strings.Builder
	for _, p := range prefixes {
		batch.WriteString("route add " + p + " via 2001:db8:2::2 dev e2\n")
	}
	batchFile := filepath.Join(dir, "table.batch")
	if err := os.WriteFile(batchFile, []byte(batch.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, errs, st := d.run("-batch", batchFile); st != 0 {
		b.Fatalf("loading the table: %s%s", out, errs)
	}
	d.stop()
}

// flow has h1 send a datagram to dst every 200 µs, and h2 count what
// arrives, until the benchmark ends: the Unix ns of the last datagram.
func (l *restartLab) flow() *atomic.Int64 {
	b := l.b
	var rx net.PacketConn
	var err error
	inNetns(b, l.h2, func() { rx, err = net.ListenPacket("udp6", "[::]:9999") })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rx.Close() })
	var tx net.PacketConn
	inNetns(b, l.h1, func() { tx, err = net.ListenPacket("udp6", "[2001:db8:1::2]:0") })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tx.Close() })
	arrived := new(atomic.Int64)
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := rx.ReadFrom(buf); err != nil {
				return
			}
			arrived.Store(time.Now().UnixNano())
		}
	}()
	stop := make(chan struct{})
	b.Cleanup(func() { close(stop) })
	go func() {
		to := &net.UDPAddr{IP: l.dst.AsSlice(), Port: 9999}
		msg := make([]byte, 16)
		for i := uint64(0); ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
			binary.BigEndian.PutUint64(msg, i)
			_, _ = tx.WriteTo(msg, to) // unreachable while the router is down
		}
	}()
	return arrived
}

// restart starts the daemon with --state alone and returns how long until
// a datagram arrives; then it checks the route and kills the daemon (-9),
// the timer stopped.
func (l *restartLab) restart(bin string, arrived *atomic.Int64) time.Duration {
	b := l.b
	log := new(strings.Builder)
	cmd := exec.Command("ip", "netns", "exec", l.r, bin, "daemon", "--socket", l.sock, "--state", l.state)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	for arrived.Load() < start.UnixNano() {
		if time.Since(start) > 10*time.Second {
			get, _, _ := runCmd(bin, "--socket", l.sock, "route", "get", l.dst.String())
			links, _, _ := runCmd(bin, "--socket", l.sock, "-s", "link", "show")
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			b.Fatalf("nothing forwarded 10 s after the restart:\n%s%s%s", log, get, links)
		}
		time.Sleep(200 * time.Microsecond)
	}
	took := time.Unix(0, arrived.Load()).Sub(start)
	b.StopTimer()
	if out, _, st := runCmd(bin, "--socket", l.sock, "-6", "route", "show", "match", l.dst.String()); st != 0 || !strings.Contains(out, l.last.String()) {
		b.Fatalf("the restarted router lacks %s: %s\n%s", l.last, out, log)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	b.StartTimer()
	return took
}
