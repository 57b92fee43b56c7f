package integration

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threads is process pid's thread count.
func threads(pid int) int64 {
	return statusField("/proc/"+strconv.Itoa(pid)+"/status", "Threads")
}

// raiseNofile lets the test process hold n descriptors (Go raises the
// soft limit to the hard one at start; root may raise the hard one).
func raiseNofile(t *testing.T, n uint64) {
	t.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	lim.Cur, lim.Max = n, max(lim.Max, n)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("RLIMIT_NOFILE to %d: %v", n, err)
	}
}

// eintr makes a blocking call again while a signal interrupts it (the
// runtime's preemption; a socket with a timeout is not restarted).
func eintr(call func() error) error {
	for {
		if err := call(); err != unix.EINTR {
			return err
		}
	}
}

// writeAll writes b whole to socket fd.
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if n > 0 {
			b = b[n:]
		}
		if err != nil && err != unix.EINTR {
			return err
		}
	}
	return nil
}

// frame is one frame of the daemon's answer: kind 'o', 'e' or 'x'.
func frame(kind byte, payload string) []byte {
	b := []byte{kind, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	return append(b, payload...)
}

// TestHeldBatchSessions: 12,000 clients each send a batch's header and
// wait. The daemon
// serves the first 4,096 (its default bound) at no thread each, tells
// the others `Error: 4096 sessions run already.` with exit status 1, and
// forwards throughout; a hundred of the held batches run a line and
// twenty a batch read ahead, and wait again, and still cost no thread; once the clients are gone the daemon
// answers the next one. Each batch session used to lock a thread as it
// connected: past 10,000 the runtime ended the daemon (thread
// exhaustion), and the forwarding with it.
func TestHeldBatchSessions(t *testing.T) {
	measures(t)
	l := newLab(t)
	pid := l.d.cmd.Process.Pid // ip netns exec execs the daemon
	before := threads(pid)
	ping := startIn(t, l.h1, "ping", "-6", "-i", "0.05", "2001:db8:2::2")

	const clients, bound, running, longRunning = 12000, 4096, 100, 20
	raiseNofile(t, clients+1000)
	h := &heldClients{t: t, d: l.d}
	defer h.close()
	h.connect(clients)
	s := h.waitServed(bound)
	idle := threads(pid)
	if idle >= before+20 {
		t.Errorf("the daemon runs %d threads with %d batch sessions held (%d before)", idle, bound, before)
	}
	shortRan, held := h.runSome(s, pid, running, longRunning)
	if shortRan >= before+20 || held >= shortRan+10 {
		t.Errorf("the daemon runs %d threads once %d of %d held batches ran a line, %d once %d more ran a batch read ahead (%d before)",
			shortRan, running, bound, held, longRunning, before)
	}
	if out, errs, st := l.in(l.h1, "ping", "-6", "-c", "3", "-i", "0.1", "-W", "2", "2001:db8:2::2"); st != 0 {
		t.Fatalf("ping6 through the daemon holding %d sessions: %s %s", bound, out, errs)
	}

	h.close()
	for deadline := time.Now().Add(20 * time.Second); ; {
		out, errs, st := l.d.run("status")
		if st == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status after the clients left: %d %s %s", st, out, errs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(ping.cmd.Process.Pid, syscall.SIGINT) // ping's summary is printed on SIGINT
	_ = ping.cmd.Wait()
	sent, recv := pingCounts(ping.out.String())
	t.Logf("daemon threads: %d before, %d with %d batch sessions held, %d once %d of them ran a line, %d once %d more ran a batch read ahead, %d after; ping6 throughout: %d of %d answered",
		before, idle, bound, shortRan, running, held, longRunning, threads(pid), recv, sent)
	// none lost before the last answered; what ping sent in its last half
	// second may be in flight as it is stopped (4,096 sessions ending at
	// once; a race-built daemon on a loaded machine answered in 185 ms)
	if lost := pingLost(ping.out.String()); sent < 10 || lost > 0 || recv < sent-10 {
		t.Errorf("ping6 throughout: %d of %d answered, %d lost among them:\n%s", recv, sent, lost, ping.out)
	}
}

// heldClients are TestHeldBatchSessions' clients: sockets that sent a
// batch's header and wait, and what each was told.
type heldClients struct {
	t   *testing.T
	d   *daemon
	fds []int
	got [][]byte
}

// close closes every client's socket, which ends its session, if it has one.
func (h *heldClients) close() {
	for _, fd := range h.fds {
		_ = unix.Close(fd)
	}
	h.fds = nil
}

// connect connects n clients, each sending a batch's header.
func (h *heldClients) connect(n int) {
	t := h.t
	h.fds, h.got = make([]int, 0, n), make([][]byte, n)
	header := []byte("urouter/1 b -\n")
	for i := 0; i < n; i++ {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("socket %d: %v", i, err)
		}
		h.fds = append(h.fds, fd)
		// a blocking connect waits while the listener's backlog is full;
		// the reads below wait for an answer: neither without end
		tv := unix.Timeval{Sec: 10}
		if err := errors.Join(unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv),
			unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)); err != nil {
			t.Fatal(err)
		}
		if err := eintr(func() error { return unix.Connect(fd, &unix.SockaddrUnix{Name: h.d.sock}) }); err != nil {
			t.Fatalf("client %d: connect: %v\n%s", i, err, h.d.log)
		}
		if err := writeAll(fd, header); err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
	}
}

// waitServed waits until the refused are told at once and the served
// (bound of them) hear nothing yet, and returns the served.
func (h *heldClients) waitServed(bound int) []int {
	t, clients := h.t, len(h.fds)
	refusal := append(frame('e', "Error: 4096 sessions run already.\n"), frame('x', "\x01")...)
	// served: those that have heard nothing; told: those told all a
	// refusal is long
	served := func() (s []int, told int) {
		for i, fd := range h.fds {
			var buf [256]byte
			n, _, err := unix.Recvfrom(fd, buf[:], unix.MSG_DONTWAIT)
			if n > 0 {
				h.got[i] = append(h.got[i], buf[:n]...)
			}
			switch {
			case len(h.got[i]) == 0 && errors.Is(err, unix.EAGAIN):
				s = append(s, i)
			case len(h.got[i]) >= len(refusal):
				told++
			}
		}
		return s, told
	}
	var s []int
	for deadline := time.Now().Add(20 * time.Second); ; {
		var told int
		if s, told = served(); len(s) == bound && told == clients-bound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d clients have heard nothing, want %d (the bound); %d told all\n%s", len(s), clients, bound, told, h.d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, g := range h.got {
		if g != nil && !bytes.Equal(g, refusal) {
			t.Fatalf("client %d was told %q, want %q", i, g, refusal)
		}
	}
	return s
}

// runSome has running of the served run a line each, one after another,
// and wait for the next: a thread each, if they kept one; longRunning
// more run a batch long enough to be read ahead (96 KiB of empty lines),
// then wait: two threads each, the reader's and the session's. It returns
// the daemon's threads once the short ones ran, and once all had.
func (h *heldClients) runSome(s []int, pid, running, longRunning int) (shortRan, held int64) {
	short, long := []byte("status\n"), append(bytes.Repeat([]byte{'\n'}, 96<<10), "status\n"...)
	for k, i := range s[:running+longRunning] {
		line := short
		if k >= running {
			line = long
		}
		if k == running {
			shortRan = threads(pid)
		}
		if err := writeAll(h.fds[i], line); err != nil {
			h.t.Fatal(err)
		}
		var buf [256]byte
		var n int
		err := eintr(func() (err error) { n, err = unix.Read(h.fds[i], buf[:]); return err })
		if n < 5 || buf[0] != 'o' {
			h.t.Fatalf("client %d: status answered %q (%v)", i, buf[:max(n, 0)], err)
		}
	}
	return shortRan, threads(pid)
}

// pingLost is how many of ping's requests went unanswered before its last
// answered one.
func pingLost(out string) int {
	seen, last := map[int]bool{}, 0
	for _, m := range regexp.MustCompile(`icmp_seq=(\d+)`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		seen[n], last = true, max(last, n)
	}
	lost := 0
	for n := 1; n < last; n++ {
		if !seen[n] {
			lost++
		}
	}
	return lost
}

// TestLongHeader: a client that sends 1 GB without a newline as its
// header is told the header is bad and let go once the daemon has read a
// few KB, and the daemon's memory does not grow (it grew by 2 GB: the
// header was read whole).
func TestLongHeader(t *testing.T) {
	measures(t)
	// plain: a race-built daemon's memory holds the detector's
	d := startBinary(t, plain, "", filepath.Join(t.TempDir(), "urouter.sock"), nil)
	pid := d.cmd.Process.Pid
	status := "/proc/" + strconv.Itoa(pid) + "/status"
	hwm := statusField(status, "VmHWM")
	c, err := net.Dial("unix", d.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	// the daemon may read on without end (it did)
	_ = c.SetWriteDeadline(time.Now().Add(60 * time.Second))
	chunk := bytes.Repeat([]byte{'a'}, 1<<20)
	sent := 0
	for sent < 1<<30 {
		n, err := c.Write(chunk)
		sent += n
		if err != nil {
			break
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("reading the answer: %v", err)
	}
	grew := statusField(status, "VmHWM") - hwm
	t.Logf("the daemon took %d MB of the header; its peak RSS grew by %d kB", sent>>20, grew)
	want := append(frame('e', "Error: bad header: longer than 4224 bytes.\n"), frame('x', "\x01")...)
	if !bytes.Equal(answer, want) {
		t.Errorf("the answer to a 1 GB header: %q, want %q", answer, want)
	}
	if sent >= 1<<30 {
		t.Errorf("the daemon read all of a 1 GB header")
	}
	if grew > 16<<10 {
		t.Errorf("the daemon's peak RSS grew by %d kB for a 1 GB header", grew)
	}
	if _, errs, st := d.run("status"); st != 0 {
		t.Errorf("status after a long header: %s", errs)
	}
}

// TestMaxSessions: with --max-sessions 2 and two clients holding their
// sessions, the client is refused with the error and exit status 1; once
// one of them leaves, it is served.
func TestMaxSessions(t *testing.T) {
	parallel(t)
	d := startDaemonFlags(t, "", []string{"--max-sessions", "2"}, "link add d0 type dummy")
	var held []net.Conn
	defer func() {
		for _, c := range held {
			_ = c.Close() // ends its session
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); len(held) < 2; {
		c, err := net.Dial("unix", d.sock)
		if err != nil {
			t.Fatal(err)
		}
		// served: a line runs, and the session waits for the next
		if _, err := c.Write([]byte("urouter/1 - -\nlink show d0\n")); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(deadline)
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil {
			t.Fatalf("a client holding a session: %v", err)
		}
		if b[0] != 'o' {
			// refused: the start's probe had not yet left
			_ = c.Close()
			time.Sleep(10 * time.Millisecond)
			continue
		}
		held = append(held, c)
	}
	out, errs, st := d.run("link", "show", "d0")
	if st != 1 || errs != "Error: 2 sessions run already.\n" || out != "" {
		t.Errorf("a third client: exit %d, %q %q; want 1 and the error", st, out, errs)
	}
	_ = held[0].Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		out, errs, st := d.run("link", "show", "d0")
		if st == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a client after one of the two left: %d %s%s", st, out, errs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
