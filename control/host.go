package control

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"urouter/control/statefile"
	"urouter/control/wire"
	"urouter/dataplane"
	"urouter/router"
)

// NewSession returns a session that runs commands with options opt on
// router r, prints to out and reports its errors to errOut.
func NewSession(r *router.Router, opt wire.Options, out *bufio.Writer, errOut func(string)) *Session {
	return &Session{r: r, opt: opt, out: out, errOut: errOut}
}

// Daemon is what a daemon gives its sessions beside the router: its
// feeds and its start, which they print (fpm show, mirror show, status),
// and its state file, where they record their changes (nil: none).
type Daemon struct {
	Feeds   *Feeds
	State   *statefile.State
	Startup *Startup
	// Paper makes a router on paper as the daemon makes its own (its
	// flags' knobs): apply's trials (nil: router.NewPaper)
	Paper func() *router.Router
	// Applying is held by an apply while it plans and runs (nil: none)
	Applying *sync.Mutex
}

// AheadConn is a client's connection, which a long batch's reader
// goroutine reads ahead of its session (see runAhead).
type AheadConn interface {
	// ReadAhead tells the connection that the reader reads it from now
	// on, which holds nothing: each of its reads that finds nothing to
	// read and waits on the client is marked in w.
	ReadAhead(w *ReadWaits)
}

// ReadWaits marks the reads of a client's connection that wait on the
// client, so that a session can tell a client gone idle from a reader
// that was only slow (see waitIdle): Begin as such a read begins to
// wait, End as it ends.
type ReadWaits struct {
	n atomic.Uint64 // two a read: odd while one waits
}

// Begin marks a read that found nothing to read and now waits.
func (w *ReadWaits) Begin() { w.n.Add(1) }

// End marks the end of the read Begin marked.
func (w *ReadWaits) End() { w.n.Add(1) }

// idleSince reports whether one read has waited all along since the look
// that returned seen, and returns this look's.
func (w *ReadWaits) idleSince(seen uint64) (now uint64, idle bool) {
	now = w.n.Load()
	return now, now%2 == 1 && now == seen
}

// Attach makes s a session of daemon d, whose client's connection is c:
// its changes are recorded in d's state file, and a batch's lines yield
// to the data plane once they run (see takePace).
func (s *Session) Attach(d Daemon, c AheadConn) {
	s.feeds, s.state, s.startup, s.conn, s.paper, s.applying = d.Feeds, d.State, d.Startup, c, d.Paper, d.Applying
	if d.State != nil {
		s.rec = d.State.Recorder()
	}
	if s.opt.Batch && s.r.DP != nil {
		s.paceBy = s.r.DP
	}
}

// IdleCommit is how long a session waits on its client, in either
// direction, before it publishes the transaction it holds and lets the
// table go, and gives back the thread its pacer holds. A client streaming
// a batch so gets one publish per pause, not one per socket read (a read
// often returns a few KB, and a publish ends the transaction's in-place
// copies); a client that stops sending sees its routes within this time;
// a client that stops reading its answers holds no lock while the daemon
// waits for it; other writers of the table wait at most this long for
// it; and a thousand batches that wait on their clients cost no thread.
const IdleCommit = time.Millisecond

// Holding reports whether s holds a transaction open, which Commit
// publishes.
func (s *Session) Holding() bool { return s.txn != nil || s.rtxn != nil }

// Commit publishes the transactions s holds.
func (s *Session) Commit() { s.commit() }

// Pacer is the pacer of the batch s runs, nil before its first line.
func (s *Session) Pacer() *dataplane.Pacer { return s.pace }

// SealDue reports whether s holds changes its state file has not sealed,
// and if so how often, while s waits on its client, it is to look
// whether to seal them (SealIdle).
func (s *Session) SealDue() (every time.Duration, unsealed bool) {
	if s.rec == nil || !s.rec.Holding() {
		return 0, false
	}
	return s.rec.SealEvery(), true
}

// Finish ends a run whose exit status is status: it seals the session's
// changes, which fails the run if they could not be, and sends what it
// printed. The pacing ends with EndPace.
func (s *Session) Finish(status int) int {
	if s.rec != nil {
		if err := s.rec.Seal(); err != nil {
			s.ReportError("Error: " + err.Error())
			status = 1
		}
	}
	s.flush()
	return status
}

// Monitor is what the monitor command the session ran asks to hear (nil:
// it ran none): the caller streams it (see EventPrinter).
func (s *Session) Monitor() *MonitorRequest { return s.monitor }

// Capture is the capture the session's command asks for (nil: none): the
// caller streams it.
func (s *Session) Capture() *CaptureRequest { return s.capture }

// Out is where the session prints.
func (s *Session) Out() *bufio.Writer { return s.out }

// ReportError sends what s printed, then error message m (the exit
// status is the caller's).
func (s *Session) ReportError(m string) {
	s.flush()
	s.errOut(m)
}

// RunConfig runs a configuration read from in, named name, of size bytes
// (0: unknown), as a batch: it stops at the first error and returns it,
// and how many lines it read. What its show commands print goes to show.
// A configuration that begins as save's output is restored as saved.
func RunConfig(r *router.Router, name string, in io.Reader, size int64, show io.Writer) (int, error) {
	var msgs []string
	out := bufio.NewWriter(show)
	s := NewSession(r, wire.Options{Batch: true, BatchName: name, Size: size}, out,
		func(m string) { msgs = append(msgs, m) })
	le := &wire.LineEnder{R: in}
	buf := bufio.NewReaderSize(le, ReadBuf)
	if head, _ := buf.Peek(len(saveHeader)); string(head) == saveHeader {
		s.restoring = true
	}
	status := s.Run(buf)
	if err := le.Failed(); err != nil {
		return s.line, fmt.Errorf("reading %s: %w", name, err)
	}
	// what a config's show commands print is for a console, if any: a
	// daemon started without one still starts
	_ = out.Flush()
	if status != 0 {
		return s.line, errors.New(strings.Join(msgs, "\n"))
	}
	return s.line, nil
}
