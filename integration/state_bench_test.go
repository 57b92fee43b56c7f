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
	bin, err := plainBuild() // the race detector's start-up and memory are not the router's
	if err != nil {
		b.Fatal(err)
	}
	r, h1, h2 := newNetns(b, "str-r"), newNetns(b, "str-h1"), newNetns(b, "str-h2")
	for i, h := range []string{h1, h2} {
		n := string(rune('1' + i))
		mustRun(b, "ip", "-n", r, "link", "add", "e"+n, "type", "veth", "peer", "name", "p"+n, "netns", h)
		mustRun(b, "ip", "-n", r, "link", "set", "e"+n, "up")
		mustRun(b, "ip", "netns", "exec", h, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
		mustRun(b, "ip", "-n", h, "link", "set", "p"+n, "up")
		mustRun(b, "ip", "-n", h, "addr", "add", "2001:db8:"+n+"::2/64", "dev", "p"+n, "nodad")
		mustRun(b, "ip", "-n", h, "-6", "route", "add", "default", "via", "2001:db8:"+n+"::1", "dev", "p"+n)
	}
	// h1 knows the router's MAC (its veth's, the same after a restart):
	// what is measured is the router's start, not h1's neighbour probes
	// of a router that was away (a second apart, as Linux retransmits)
	mac := regexp.MustCompile(`link/ether (\S+)`).FindStringSubmatch(mustRun(b, "ip", "-n", r, "link", "show", "e1"))
	if mac == nil {
		b.Fatal("no MAC on e1")
	}
	mustRun(b, "ip", "-n", h1, "neigh", "replace", "2001:db8:1::1", "lladdr", mac[1], "dev", "p1", "nud", "permanent")
	prefixes := realPrefixes(b)
	last := netip.MustParsePrefix(prefixes[len(prefixes)-1])
	dst := last.Addr().Next() // in the last prefix added
	mustRun(b, "ip", "-n", h2, "addr", "add", dst.String()+"/128", "dev", "p2", "nodad")

	dir := b.TempDir()
	state, sock := filepath.Join(dir, "urouter.state"), filepath.Join(dir, "urouter.sock")
	conf := []string{"link add e1 type host dev e1", "link add e2 type host dev e2", "link set e1 up", "link set e2 up",
		"address add 2001:db8:1::1/64 dev e1", "address add 2001:db8:2::1/64 dev e2"}
	d := startBinary(b, bin, r, sock, []string{"--state", state}, conf...)
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

	// h2 counts what arrives; h1 sends a datagram every 200 µs
	var rx net.PacketConn
	inNetns(b, h2, func() { rx, err = net.ListenPacket("udp6", "[::]:9999") })
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = rx.Close() }()
	var tx net.PacketConn
	inNetns(b, h1, func() { tx, err = net.ListenPacket("udp6", "[2001:db8:1::2]:0") })
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Close() }()
	var arrived atomic.Int64 // Unix ns of the last datagram
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
	defer close(stop)
	go func() {
		to := &net.UDPAddr{IP: dst.AsSlice(), Port: 9999}
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

	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var cmd *exec.Cmd
		log := new(strings.Builder)
		cmd = exec.Command("ip", "netns", "exec", r, bin, "daemon", "--socket", sock, "--state", state)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// quiet: nothing passes while no daemon runs
		for deadline := time.Now().Add(5 * time.Second); time.Since(time.Unix(0, arrived.Load())) < 100*time.Millisecond; {
			if time.Now().After(deadline) {
				b.Fatal("datagrams pass with no router")
			}
			time.Sleep(10 * time.Millisecond)
		}
		b.StartTimer()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		for arrived.Load() < start.UnixNano() {
			if time.Since(start) > 10*time.Second {
				get, _, _ := runCmd(bin, "--socket", sock, "route", "get", dst.String())
				links, _, _ := runCmd(bin, "--socket", sock, "-s", "link", "show")
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				_ = cmd.Wait()
				b.Fatalf("nothing forwarded 10 s after the restart:\n%s%s%s", log, get, links)
			}
			time.Sleep(200 * time.Microsecond)
		}
		took := time.Unix(0, arrived.Load()).Sub(start)
		total += took
		b.StopTimer()
		if out, _, st := runCmd(bin, "--socket", sock, "-6", "route", "show", "match", dst.String()); st != 0 || !strings.Contains(out, last.String()) {
			b.Fatalf("the restarted router lacks %s: %s\n%s", last, out, log)
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(total.Seconds()/float64(b.N), "s/restart")
	b.ReportMetric(0, "ns/op")
}
