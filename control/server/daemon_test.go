package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cli "urouter/control/client"
	"urouter/control/wire"
	"urouter/router"
)

// startServer runs a daemon's socket for r in a temp dir.
func startServer(t *testing.T, r *router.Router) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "urouter.sock")
	srv, err := Listen(path, r)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve() }() // it ends when the test closes it
	t.Cleanup(srv.Close)
	servers.Store(path, srv)
	t.Cleanup(func() { servers.Delete(path) })
	return path
}

// servers are startServer's, by socket.
var servers sync.Map

// subscribed waits until n monitors listen on the daemon at sock.
func subscribed(t *testing.T, sock string, n int) {
	t.Helper()
	srv, _ := servers.Load(sock)
	waitFor(t, fmt.Sprintf("%d monitors to listen", n), func() bool { return srv.(*Server).hub.listening() == n })
}

// dial opens a raw connection to the socket and sends o's header; the
// test writes the command lines itself.
func dial(t *testing.T, sock string, o wire.Options) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() }) // closed by some tests already
	put(t, c, "%s", o.Header())
	return c
}

// client runs one client request against the socket.
func client(sock string, o wire.Options, input string) (string, string, int) {
	var out, errs bytes.Buffer
	st := cli.Talk(sock, o, strings.NewReader(input), false, &out, &errs)
	return out.String(), errs.String(), st
}

func TestSocket(t *testing.T) {
	r := newTestRouter(t)
	sock := startServer(t, r)
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v %v", fi.Mode(), err)
	}
	if _, err := Listen(sock, router.New()); err == nil || !strings.Contains(err.Error(), "another daemon") {
		t.Fatalf("a second daemon on the same socket: %v", err)
	}
	out, e, st := client(sock, wire.Options{}, "route add 2001:db8:1::/48 via 2001:db8:91::2 dev d0\n")
	if st != 0 || e != "" || out != "" {
		t.Fatalf("add: %q %q %d", out, e, st)
	}
	out, _, _ = client(sock, wire.Options{JSON: true}, "route show 2001:db8:1::/48\n")
	if out != `[{"dst":"2001:db8:1::/48","gateway":"2001:db8:91::2","dev":"d0","metric":1024,"flags":[],"pref":"medium"}]`+"\n" {
		t.Fatalf("show over the socket: %q", out)
	}
	_, e, st = client(sock, wire.Options{}, "route add 2001:db8:1::/48 dev d0\n")
	if st != 2 || e != "RTNETLINK answers: File exists\n" {
		t.Fatalf("error over the socket: %q %d", e, st)
	}
	_, e, st = client(sock, wire.Options{Batch: true, BatchName: "x.batch"}, "route add 2001:db8:2::/48 dev d0\nroute add 2001:db8:2::/48 dev d0\n")
	if st != 1 || e != "RTNETLINK answers: File exists\nCommand failed x.batch:2\n" {
		t.Fatalf("batch over the socket: %q %d", e, st)
	}
}

// TestStaleSocket: a socket left by a daemon that died is taken over.
func TestStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	if err := ln.Close(); err != nil { // the file stays, nobody listens
		t.Fatal(err)
	}
	srv, err := Listen(path, router.New())
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	srv.Close()
}

// TestDisconnectMidBatch: the lines a client sent whole are applied, the
// line it was cut off in is not, and the transaction is published.
func TestDisconnectMidBatch(t *testing.T) {
	r := newTestRouter(t)
	sock := startServer(t, r)
	c := dial(t, sock, wire.Options{Batch: true, BatchName: "-"})
	for i := 0; i < 100; i++ {
		put(t, c, "route add 2001:db8:%x::/48 dev d0\n", i)
	}
	put(t, c, "route add 2001:db8:ffff::/48 de") // cut short
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _, _ := run(r, wire.Options{}, "route show root 2001:db8::/32")
		n := strings.Count(out, "\n") - 1 // less the connected /64? it is in 2001:db8:91::/64
		if n == 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the disconnect %d routes, want 100:\n%s", n, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out, _, _ := run(r, wire.Options{}, "route show 2001:db8:ffff::/48"); out != "" {
		t.Fatalf("a line cut short was applied: %q", out)
	}
}

// TestPausedClientPublishes: a client that streams a batch and pauses
// (its connection still open) has its routes published within control.IdleCommit,
// and does not hold the table's lock from other clients meanwhile.
func TestPausedClientPublishes(t *testing.T) {
	r := newTestRouter(t)
	sock := startServer(t, r)
	c := dial(t, sock, wire.Options{Batch: true, BatchName: "-"})
	put(t, c, "route add 2001:db8:1::/48 dev d0\nroute add 2001:db8:2::/48 dev d0\n")
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _, _ := client(sock, wire.Options{}, "route show root 2001:db8::/32\n")
		if strings.Contains(out, "2001:db8:1::/48") && strings.Contains(out, "2001:db8:2::/48") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("routes of a paused batch not published: %q", out)
		}
		time.Sleep(time.Millisecond)
	}
	// the table is free for another client while the first one waits
	if _, e, st := client(sock, wire.Options{}, "route add 2001:db8:3::/48 dev d0\n"); st != 0 {
		t.Fatalf("another client's add: %q %d", e, st)
	}
}

// TestParallelClients: clients on different tables, and a link going
// down while routes through it are being added (run with -race). After
// the link is down no route through it may remain.
func TestParallelClients(t *testing.T) {
	r := newTestRouter(t)
	sock := startServer(t, r)
	run(r, wire.Options{Batch: true}, "link add d1 type dummy", "link set d1 up")
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var b strings.Builder
			for i := 0; i < 2000; i++ {
				fmt.Fprintf(&b, "route add 2001:db8:%x:%x::/64 dev d0 table %d\n", c, i, 100+c)
				fmt.Fprintf(&b, "route add 2001:db9:%x:%x::/64 dev d1 table %d\n", c, i, 100+c)
			}
			client(sock, wire.Options{Batch: true, Force: true, BatchName: "-"}, b.String())
		}(c)
	}
	time.Sleep(5 * time.Millisecond)
	if _, e, st := client(sock, wire.Options{}, "link set d1 down\n"); st != 0 {
		t.Fatal(e)
	}
	wg.Wait()
	for c := 0; c < 4; c++ {
		out, _, _ := run(r, wire.Options{}, fmt.Sprintf("route show table %d", 100+c))
		if got := strings.Count(out, "dev d0"); got != 2000 {
			t.Errorf("table %d: %d routes via d0, want 2000", 100+c, got)
		}
		if strings.Contains(out, "dev d1") {
			t.Errorf("table %d keeps routes via d1, which is down", 100+c)
		}
	}
}

func TestMonitor(t *testing.T) {
	r := newTestRouter(t)
	sock := startServer(t, r)
	c := dial(t, sock, wire.Options{})
	put(t, c, "monitor route\n")
	subscribed(t, sock, 1)
	client(sock, wire.Options{}, "route add 2001:db8:7::/48 dev d0 table 9\n")
	client(sock, wire.Options{}, "route del 2001:db8:7::/48 table 9\n")
	got := readMonitor(t, c, "Deleted")
	want := "2001:db8:7::/48 dev d0 table 9 metric 1024 pref medium\nDeleted 2001:db8:7::/48 dev d0 table 9 metric 1024 pref medium\n"
	if got != want {
		t.Fatalf("monitor printed %q, want %q", got, want)
	}
}

// TestMonitorSkipNotify: with net.ipv6.route.skip_notify_on_dev_down the
// routes a link going down takes with it are not told to monitors; by
// default they are.
func TestMonitorSkipNotify(t *testing.T) {
	for _, skip := range []bool{false, true} {
		r := newTestRouter(t)
		sock := startServer(t, r)
		c := dial(t, sock, wire.Options{})
		put(t, c, "monitor route\n")
		subscribed(t, sock, 1)
		if skip {
			client(sock, wire.Options{}, "sysctl -q -w net.ipv6.route.skip_notify_on_dev_down=1\n")
		}
		client(sock, wire.Options{}, "route add 2001:db8:7::/48 dev d0 table 9\n")
		client(sock, wire.Options{}, "link set d0 down\n")
		client(sock, wire.Options{}, "route add blackhole 2001:db8:8::/48 table 9\n")
		got := readMonitor(t, c, "2001:db8:8::/48")
		if told := strings.Contains(got, "Deleted 2001:db8:7::/48"); told == skip {
			t.Errorf("skip_notify_on_dev_down %v: monitor printed %q", skip, got)
		}
		_ = c.Close() // done with it
	}
}

// readMonitor reads a monitor's frames until what it printed has until.
func readMonitor(t *testing.T, c net.Conn, until string) string {
	t.Helper()
	br := bufio.NewReader(c)
	var got string
	for !strings.Contains(got, until) {
		var hdr [5]byte
		if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := br.Read(hdr[:1]); err != nil {
			t.Fatalf("monitor: %v (got %q)", err, got)
		}
		if _, err := ioReadFull(br, hdr[1:]); err != nil {
			t.Fatal(err)
		}
		n := int(hdr[1])<<24 | int(hdr[2])<<16 | int(hdr[3])<<8 | int(hdr[4])
		buf := make([]byte, n)
		if _, err := ioReadFull(br, buf); err != nil {
			t.Fatal(err)
		}
		got += string(buf)
	}
	return got
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// TestClientThatDoesNotRead: a client streams a forced batch whose lines
// fail inside the main table's transaction, and never reads the errors
// (`urouter -force -batch F | sleep 30`). The daemon publishes before it
// waits on that client, so another client's route add on the same table
// waits a few milliseconds at most, the table's lock is free, and routes
// with an expiry in other tables still expire on time.
func TestClientThatDoesNotRead(t *testing.T) {
	r := newTestRouter(t)
	r.Start()
	defer r.Close()
	sock := startServer(t, r)
	if _, e, st := run(r, wire.Options{}, "route add 2001:db8:e::/48 dev d0 table 100 expires 1"); st != 0 {
		t.Fatal(e)
	}
	added := time.Now()
	base := slowest(t, sock, wire.Options{}, 50, func(i int) string { return fmt.Sprintf("route add 2001:db8:7:%x::/64 dev d0", i) })
	c := dial(t, sock, wire.Options{Batch: true, Force: true, BatchName: "F"})
	go func() {
		w := bufio.NewWriter(c)
		fmt.Fprint(w, "route add 2001:db8:5::/48 dev d0\n")
		for i := 0; i < 200000; i++ {
			fmt.Fprint(w, "route add 2001:db8:5::/48 dev d0\n") // File exists, inside the transaction
		}
		_ = w.Flush() // the test may be over and the connection closed: what counts is asserted below
	}()
	time.Sleep(300 * time.Millisecond) // the errors fill the socket: the daemon waits on the client
	if x, ok := r.Tables.Main().TryBegin(); !ok {
		t.Error("the main table's lock is held while the daemon waits on a client that does not read")
	} else {
		x.Commit()
	}
	worst := slowest(t, sock, wire.Options{}, 50, func(i int) string { return fmt.Sprintf("route add 2001:db8:6:%x::/64 dev d0", i) })
	t.Logf("the slowest of 50 route adds by another client took %v, %v before", worst, base)
	if delayed(worst, base) {
		t.Errorf("another client's route add waited %v, %v before", worst, base)
	}
	for r.Tables.Get(100).Len() != 0 {
		if time.Since(added) > 2500*time.Millisecond {
			t.Fatal("the route in table 100 did not expire on time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// delayed tells a command slowed by a client that does not read from
// the machine's load: against the same test's baseline (the slowest of as
// many commands before that client came), with room for a loaded
// machine's scheduling (a CI run with fib6's race-built tests beside saw
// 138 ms against 4 ms before); a lock held on that client would hold the
// command until slowest gives up, 5 s.
func delayed(worst, base time.Duration) bool {
	return worst > 2*base+time.Second
}

// slowest runs n commands (cmd(i)) as another client, one after another,
// and returns the longest any took; one that fails or waits 5 s fails t.
func slowest(t *testing.T, sock string, o wire.Options, n int, cmd func(i int) string) time.Duration {
	t.Helper()
	var worst time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		done := make(chan string, 1)
		go func() {
			_, e, _ := client(sock, o, cmd(i)+"\n")
			done <- e
		}()
		select {
		case e := <-done:
			if e != "" {
				t.Fatalf("another client's %s: %q", cmd(i), e)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("another client's %s still waits after 5 s", cmd(i))
		}
		worst = max(worst, time.Since(start))
	}
	return worst
}

// put writes to a test's connection; a write that fails fails the test
// (it may run in a goroutine of the test: Error, not Fatal).
func put(t testing.TB, w io.Writer, format string, a ...any) {
	t.Helper()
	if _, err := fmt.Fprintf(w, format, a...); err != nil {
		t.Error(err)
	}
}
