package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
)

// captureProc is `urouter capture ...` running in the background, its
// stdout (-w -) into a file or a pipe.
type captureProc struct {
	cmd    *exec.Cmd
	errs   *logBuffer
	done   chan struct{}
	status int
}

func startCapture(t *testing.T, d *daemon, stdout *os.File, args ...string) *captureProc {
	t.Helper()
	c := &captureProc{cmd: exec.Command(plain, append([]string{"--socket", d.sock, "capture"}, args...)...),
		errs: new(logBuffer), done: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = stdout, c.errs
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := c.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			c.status = ee.ExitCode()
		} else if err != nil {
			c.status = -1
		}
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill() // ended already, or now
		<-c.done
	})
	waitCaptures(t, d, 1)
	return c
}

// waitCaptures waits until the daemon runs n captures.
func waitCaptures(t *testing.T, d *daemon, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _, _ := d.run("status")
		if strings.Contains(out, "captures "+strconv.Itoa(n)+"\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon does not run %d captures:\n%s", n, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *captureProc) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-c.done:
		if c.status != 0 {
			t.Fatalf("capture exited %d: %s", c.status, c.errs)
		}
	case <-time.After(d):
		t.Fatalf("capture did not end within %v: %s", d, c.errs)
	}
}

// tcpdumpRead is `tcpdump -r FILE -n [FILTER]`'s lines.
func tcpdumpRead(t *testing.T, file string, filter ...string) []string {
	t.Helper()
	out, errs, st := runCmd("tcpdump", append([]string{"-r", file, "-n", "-tt"}, filter...)...)
	if st != 0 {
		t.Fatalf("tcpdump -r %s: %d %s", file, st, errs)
	}
	return strings.Split(strings.TrimSpace(out), "\n")
}

// tshark's words for pcapng's directions
const (
	dirIn  = "0x00000001"
	dirOut = "0x00000002"
)

// tsharkFields is `tshark -r FILE -T fields -e ...`'s rows.
func tsharkFields(t *testing.T, file string, fields ...string) [][]string {
	t.Helper()
	args := []string{"-r", file, "-T", "fields", "-E", "separator=|"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out, errs, st := runCmd("tshark", args...)
	if st != 0 {
		t.Fatalf("tshark -r %s: %d %s", file, st, errs)
	}
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Split(l, "|"))
	}
	return rows
}

func tempFile(t *testing.T, name string) (*os.File, string) {
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f, p
}

// TestCaptureTUN: pings through TUN links, captured on both, read back by
// tcpdump (the packets, their count, both directions) and tshark (the
// links' names and the directions); a filter takes only what it names;
// count ends the capture; a capture of drops has the hop-limit-exceeded
// and no-route packets with their reasons.
func TestCaptureTUN(t *testing.T) {
	parallel(t)
	l := newLab(t)
	captureBothLinks(t, l)
	captureFiltered(t, l)
	captureDrops(t, l)
	captureSuperPackets(t, l)
	capturePrinted(t, l)
}

// captureBothLinks: pings captured on ta and tb, read back by tcpdump
// and tshark: the packets, links, directions and stamps in nanoseconds.
func captureBothLinks(t *testing.T, l *lab) {
	_, file := tempFile(t, "tun.pcapng")
	// the pings' only: the kernel's own packets on the links (an MLD
	// report, a router solicitation) come at any time
	c := startCapture(t, l.d, nil, "dev", "ta", "dev", "tb", "count", "16", "-w", file, "host", "2001:db8:2::2")
	if _, errs, st := l.in(l.h1, "ping", "-6", "-c", "4", "-i", "0.05", "2001:db8:2::2"); st != 0 {
		t.Fatalf("ping: %s", errs)
	}
	c.wait(t, 10*time.Second)
	waitCaptures(t, l.d, 0)
	lines := tcpdumpRead(t, file)
	if len(lines) != 16 {
		t.Fatalf("tcpdump read %d packets, want 16 (4 requests and 4 replies, each in and out):\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if n := len(tcpdumpRead(t, file, "icmp6 and ip6[40] == 128 and src 2001:db8:1::2")); n != 8 {
		t.Errorf("tcpdump found %d echo requests, want 8", n)
	}
	rows := tsharkFields(t, file, "frame.interface_name", "frame.packet_flags_direction", "icmpv6.type", "ipv6.hlim", "frame.time_epoch")
	count := map[string]int{}
	ns := false // stamps in nanoseconds: some not whole microseconds
	for _, r := range rows {
		count[strings.Join(r[:4], " ")]++
		if _, frac, _ := strings.Cut(r[4], "."); len(frac) != 9 {
			t.Errorf("tshark's time %s has no nanoseconds", r[4])
		} else if !strings.HasSuffix(frac, "000") {
			ns = true
		}
	}
	if !ns {
		t.Errorf("every stamp is a whole microsecond: %v", rows)
	}
	// requests come in by ta at 64 and leave by tb at 63; replies the other way
	want := map[string]int{"ta " + dirIn + " 128 64": 4, "tb " + dirOut + " 128 63": 4, "tb " + dirIn + " 129 64": 4, "ta " + dirOut + " 129 63": 4}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("tshark: %d packets of %q (link, direction, type, hop limit), want %d; all: %v", count[k], k, n, count)
		}
	}
}

// captureFiltered: a filter takes only the replies that leave by ta;
// count ends it at 2.
func captureFiltered(t *testing.T, l *lab) {
	_, file := tempFile(t, "filtered.pcapng")
	c := startCapture(t, l.d, nil, "dev", "ta", "count", "2", "-w", file, "icmp6", "and", "ip6[40]", "==", "129")
	l.in(l.h1, "ping", "-6", "-c", "3", "-i", "0.05", "2001:db8:2::2")
	c.wait(t, 10*time.Second)
	rows := tsharkFields(t, file, "frame.interface_name", "frame.packet_flags_direction", "icmpv6.type")
	if len(rows) != 2 || strings.Join(rows[0], " ") != "ta "+dirOut+" 129" || strings.Join(rows[1], " ") != "ta "+dirOut+" 129" {
		t.Errorf("a capture of replies out of ta gave %v", rows)
	}
}

// captureDrops: drops, with their reasons in the packets' comments. The
// echo requests' only: the kernel's own packets (a router solicitation
// to ff02::2, dropped as local) come at any time.
func captureDrops(t *testing.T, l *lab) {
	_, file := tempFile(t, "drops.pcapng")
	c := startCapture(t, l.d, nil, "drops", "count", "2", "-w", file, "icmp6", "and", "ip6[40]", "==", "128")
	l.in(l.h1, "ping", "-6", "-c", "1", "-t", "1", "-W", "1", "2001:db8:2::2")
	l.in(l.h1, "ping", "-6", "-c", "1", "-W", "1", "2001:db8:66::1")
	c.wait(t, 10*time.Second)
	rows := tsharkFields(t, file, "frame.interface_name", "frame.comment", "ipv6.dst")
	if len(rows) != 2 || strings.Join(rows[0], " ") != "ta drop: hop_limit 2001:db8:2::2" ||
		strings.Join(rows[1], " ") != "ta drop: no_route 2001:db8:66::1" {
		t.Errorf("a capture of drops gave %v", rows)
	}
	if n := len(tcpdumpRead(t, file)); n != 2 {
		t.Errorf("tcpdump read %d drops, want 2", n)
	}
}

// captureSuperPackets: super-packets are written whole, their
// segmentation in a comment.
func captureSuperPackets(t *testing.T, l *lab) {
	_, file := tempFile(t, "gso.pcapng")
	// 50 packets: a race-built daemon beside other labs forwarded fewer
	// than 200 of them in iperf3's second
	c := startCapture(t, l.d, nil, "dev", "ta", "in", "count", "50", "-w", file, "tcp", "dst", "port", "5299")
	l.in(l.h2, "iperf3", "-s", "-1", "-D", "-p", "5299")
	time.Sleep(300 * time.Millisecond)
	if out, errs, st := l.in(l.h1, "iperf3", "-6", "-c", "2001:db8:2::2", "-p", "5299", "-t", "2"); st != 0 {
		t.Fatalf("iperf3: %s %s", out, errs)
	}
	c.wait(t, 10*time.Second)
	super := 0
	for _, r := range tsharkFields(t, file, "frame.len", "frame.comment") {
		if n, _ := strconv.Atoi(r[0]); n > 1500 && strings.HasPrefix(r[1], "gso tcpv6 gso_size ") {
			super++
		}
	}
	if super == 0 {
		t.Errorf("no super-packet with its gso comment among 50 TCP packets in")
	}
}

// capturePrinted: without -w the client prints a line a packet. The
// echo requests only: the kernel's own router solicitations on ta come
// at any time.
func capturePrinted(t *testing.T, l *lab) {
	p := exec.Command(plain, "--socket", l.d.sock, "capture", "dev", "ta", "in", "count", "2", "icmp6", "and", "ip6[40]", "==", "128")
	var shown bytes.Buffer
	p.Stdout = &shown
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	waitCaptures(t, l.d, 1)
	l.in(l.h1, "ping", "-6", "-c", "2", "-i", "0.05", "2001:db8:2::2")
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	printed := strings.Split(strings.TrimSpace(shown.String()), "\n")
	if len(printed) != 2 || !strings.Contains(printed[0], " ta In  IP6 2001:db8:1::2 > 2001:db8:2::2: ICMP6, EchoRequest") {
		t.Errorf("capture printed:\n%s", shown.String())
	}
}

// TestCaptureEthernet: pings between hosts on a veth (AF_PACKET) link and
// a TAP link, captured on both as raw IPv6, with Neighbour Discovery,
// which the packet path never sees, captured too.
func TestCaptureEthernet(t *testing.T) {
	parallel(t)
	l := newEtherLab(t, nil)
	_, file := tempFile(t, "ether.pcapng")
	c := startCapture(t, l.d, nil, "dev", "lan1", "dev", "lan3", "-w", file, "icmp6")
	mustRun(t, "ip", "-n", l.e1, "neigh", "flush", "dev", "eth0")
	if _, errs, st := l.in(l.e1, "ping", "-6", "-c", "3", "-i", "0.1", "2001:db8:a3::2"); st != 0 {
		t.Fatalf("ping: %s", errs)
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT) // Ctrl-C: the stream ends whole
	c.wait(t, 10*time.Second)
	count := map[string]int{}
	for _, r := range tsharkFields(t, file, "frame.interface_name", "frame.packet_flags_direction", "icmpv6.type") {
		count[strings.Join(r, " ")]++
	}
	for k, n := range map[string]int{"lan1 " + dirIn + " 128": 3, "lan3 " + dirOut + " 128": 3, "lan3 " + dirIn + " 129": 3, "lan1 " + dirOut + " 129": 3} {
		if count[k] != n {
			t.Errorf("%d packets of %q (link, direction, type), want %d; all: %v", count[k], k, n, count)
		}
	}
	if count["lan1 "+dirIn+" 135"]+count["lan1 "+dirOut+" 136"]+count["lan1 "+dirOut+" 135"]+count["lan1 "+dirIn+" 136"] == 0 {
		t.Errorf("no Neighbour Discovery captured on lan1: %v", count)
	}
}

// TestCaptureSlowReader: a client that stops reading loses packets,
// counted in the statistics block at the end, while forwarding goes on
// at full speed.
func TestCaptureSlowReader(t *testing.T) {
	measures(t)
	l := newLab(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	// only the flood's: the kernel's own on the link (an MLD report, a
	// router solicitation) would come at any time
	c := startCapture(t, l.d, w, "dev", "ta", "-w", "-", "host", "2001:db8:2::2")
	_ = w.Close()
	// nobody reads r while 20,000 pings cross the router
	out, errs, st := l.in(l.h1, "ping", "-6", "-f", "-c", "20000", "-s", "1000", "2001:db8:2::2")
	if st != 0 || !strings.Contains(out, " 0% packet loss") {
		t.Fatalf("the flood lost packets while the capture's client did not read: %s%s", out, errs)
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	var taken, lost uint64
	ng, err := pcapgo.NewNgReader(r, pcapgo.NgReaderOptions{StatisticsCallback: func(_ int, s pcapgo.NgInterfaceStatistics) {
		taken, lost = s.PacketsReceived, s.PacketsDropped
	}})
	if err != nil {
		t.Fatal(err)
	}
	read := uint64(0)
	for {
		if _, _, err := ng.ReadPacketData(); err != nil {
			if err != io.EOF {
				t.Errorf("reading the stream after %d packets: %v", read, err)
			}
			break
		}
		read++
	}
	c.wait(t, 10*time.Second)
	if taken != 40000 || lost == 0 || read+lost != taken {
		t.Errorf("statistics: %d taken, %d lost, %d read; want 40000 taken = read + lost, some lost", taken, lost, read)
	}
	t.Logf("a reader that stopped: %d packets read, %d lost of %d", read, lost, taken)

	// Ctrl-C while packets keep coming: the stream ends at once
	_, file := tempFile(t, "busy.pcapng")
	c = startCapture(t, l.d, nil, "dev", "ta", "-w", file)
	flood := startIn(t, l.h1, "ping", "-6", "-f", "-c", "1000000", "2001:db8:2::2")
	time.Sleep(300 * time.Millisecond)
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	c.wait(t, 5*time.Second)
	flood.stop()
	if n := len(tcpdumpRead(t, file)); n < 100 {
		t.Errorf("a capture of a flood ended with %d packets", n)
	}

	// a reader that goes away (tcpdump quits): the client ends, and the
	// daemon forgets the capture
	r, w, err = os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c = startCapture(t, l.d, w, "dev", "ta", "-w", "-")
	_ = w.Close()
	_ = r.Close()
	l.in(l.h1, "ping", "-6", "-c", "3", "-i", "0.05", "2001:db8:2::2")
	<-c.done
	waitCaptures(t, l.d, 0)
}

// TestTraceDecision: a trace of a flow through a rule, a multipath route
// and a neighbour shows the decision route get -d explains for it, and
// the link the packets really left by.
func TestTraceDecision(t *testing.T) {
	parallel(t)
	l := newEtherLab(t, nil,
		// the flow's hash of addresses and ports, which route get is given
		"sysctl -w net.ipv6.fib_multipath_hash_policy=1",
		"route add 2001:db8:77::/48 table 100 nexthop via 2001:db8:a1::2 dev lan1 nexthop via 2001:db8:a3::2 dev lan3",
		"rule add pref 100 to 2001:db8:77::/48 ipproto udp lookup 100")
	// both neighbours resolved
	l.in(l.e1, "ping", "-6", "-c", "1", "2001:db8:a3::2")
	if _, errs, st := l.d.run("trace", "add", "1", "dev", "lan2", "udp", "and", "dst", "port", "7777"); st != 0 {
		t.Fatalf("trace add: %s", errs)
	}
	_, file := tempFile(t, "left.pcapng")
	c := startCapture(t, l.d, nil, "dev", "lan1", "dev", "lan3", "out", "count", "1", "-w", file, "udp", "port", "7777")
	mustRun(t, "ip", "netns", "exec", l.e2, "bash", "-c", "echo hi > /dev/udp/2001:db8:77::5/7777")
	c.wait(t, 10*time.Second)
	left := tsharkFields(t, file, "frame.interface_name")[0][0]
	var recs []struct {
		Dev   string `json:"dev"`
		Steps []struct {
			Stage    string   `json:"stage"`
			Text     string   `json:"text"`
			Decision []string `json:"decision"`
		} `json:"steps"`
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(recs) == 0 && time.Now().Before(deadline) {
		out, _, _ := l.d.run("-j", "trace", "show")
		if err := json.Unmarshal([]byte(out), &recs); err != nil {
			t.Fatalf("trace show -j: %v\n%s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(recs) != 1 {
		t.Fatalf("%d records, want the one packet", len(recs))
	}
	var decision []string
	var fwd string
	for _, s := range recs[0].Steps {
		switch s.Stage {
		case "decide":
			decision = s.Decision
		case "forward":
			fwd = s.Text
		}
	}
	src, sport := "", ""
	for _, s := range recs[0].Steps {
		if s.Stage == "parse" {
			f := strings.Fields(s.Text) // SRC > DST udp sport N dport N ...
			src = f[0]
			for i := range f {
				if f[i] == "sport" {
					sport = f[i+1]
				}
			}
		}
	}
	out, errs, st := l.d.run("-d", "route", "get", "2001:db8:77::5", "from", src, "iif", "lan2", "ipproto", "udp", "sport", sport, "dport", "7777")
	if st != 0 {
		t.Fatalf("route get -d: %s", errs)
	}
	explained := strings.Split(strings.TrimSpace(out), "\n")
	if len(explained) < len(decision) || strings.Join(explained[:len(decision)], "\n") != strings.Join(decision, "\n") {
		t.Errorf("the trace's decision:\n%s\nroute get -d:\n%s", strings.Join(decision, "\n"), out)
	}
	last := explained[len(explained)-1] // the route get line: ... dev LINK ...
	dev := ""
	if f := strings.Fields(last); len(f) > 0 {
		for i := range f {
			if f[i] == "dev" && i+1 < len(f) {
				dev = f[i+1]
			}
		}
	}
	if !strings.HasPrefix(fwd, "dev "+dev+" ") || dev != left {
		t.Errorf("the trace forwards %q, route get says dev %s, the packet left by %s", fwd, dev, left)
	}
	t.Logf("trace:\n%s", mustRun(t, plain, "--socket", l.d.sock, "trace", "show"))
}

// TestCaptureErrors: what capture and trace refuse, each with its error
// and nothing left running or written.
func TestCaptureErrors(t *testing.T) {
	parallel(t)
	needRoot(t)
	d := startDaemon(t, newNetns(t, "uro-cerr"), "link add d0 type dummy")
	file := filepath.Join(t.TempDir(), "never.pcapng")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"capture", "dev", "nosuch", "-w", file}, `Error: argument "nosuch" is wrong: Device does not exist`},
		{[]string{"capture", "-w", file, "icmp"}, `Error: filter "icmp": 'icmp' (IPv4) never matches here: the router carries IPv6 only`},
		{[]string{"capture", "-w", file, "tcp", "port"}, `Error: filter "tcp port": syntax error in filter expression`},
		{[]string{"capture", "count", "0", "-w", file}, `Error: argument "0" is wrong: a positive number is expected`},
		{[]string{"capture", "-w"}, `Error: argument "-w" is required`},
		{[]string{"trace", "add", "0"}, `Error: argument "0" is wrong: the count is a number from 1 to 10000`},
		{[]string{"trace", "add", "5", "dev", "d0", "ether", "host", "1:2:3:4:5:6"}, `Error: filter "ether host 1:2:3:4:5:6": 'ether' is not available on a link of raw IPv6 packets`},
		{[]string{"trace", "frob"}, `Command "frob" is unknown, try "urouter trace help".`},
	} {
		_, errs, st := d.run(c.args...)
		if st == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want an error %q", c.args, st, errs, c.want)
		}
	}
	if _, err := os.Stat(file); err == nil {
		t.Errorf("a refused capture wrote %s", file)
	}
	batch := filepath.Join(t.TempDir(), "batch")
	if err := os.WriteFile(batch, []byte("capture dev d0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs, st := d.run("-batch", batch); st == 0 || !strings.Contains(errs, "Error: capture cannot run inside a batch.") {
		t.Errorf("capture in a batch: %d %q", st, errs)
	}
	out, _, _ := d.run("status")
	if !strings.Contains(out, "captures 0\n") || !strings.Contains(out, "tracing 0 packets more\n") {
		t.Errorf("status after the refusals:\n%s", out)
	}
}
