package control

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"urouter/dataplane"
)

// idleCommit is how long a session waits on its client, in either
// direction, before it publishes the transaction it holds and lets the
// table go, and gives back the thread its pacer holds. A client streaming
// a batch so gets one publish per pause, not one per socket read (a read
// often returns a few KB, and a publish ends the transaction's in-place
// copies); a client that stops sending sees its routes within this time;
// a client that stops reading its answers holds no lock while the daemon
// waits for it; other writers of the table wait at most this long for
// it; and a thousand batches that wait on their clients cost no thread.
const idleCommit = time.Millisecond

// pausingConn is a client's connection as its session uses it: while the
// session holds a transaction (holding), a read or a write that waits
// longer than idleCommit calls pause (which publishes it), then waits
// without limit. The thread a batch's pacer holds is given back (parked)
// for that wait too, and for any read that waits while nothing is held:
// a batch that waits on its client costs no thread.
type pausingConn struct {
	net.Conn
	holding func() bool
	pause   func()
	pacer   func() *dataplane.Pacer // the session's, if it has one yet
	// ahead: the session's input is read by its reader goroutine (see
	// runAhead), which holds nothing and parks its own thread; the
	// session itself publishes when it waits for that reader
	ahead bool
	// aheadWaits counts the reader's reads that found nothing to read,
	// twice each: odd while one waits on the client (readAhead.waits)
	aheadWaits atomic.Uint64
	// sealing: the session holds changes it has not sealed; waiting on
	// its client, it then calls seal every sealAfter (session.sealIdle)
	sealing   func() bool
	seal      func()
	sealAfter time.Duration
}

// waits reports whether a read or a write has something to let go of if
// it waits: a transaction, a pacer's thread.
func (p *pausingConn) waits() (holding bool, pace *dataplane.Pacer) {
	if p.holding != nil {
		holding = p.holding()
	}
	if p.pacer != nil {
		pace = p.pacer()
	}
	return holding, pace
}

// idle lets go of what a read or a write waiting longer than idleCommit
// holds; the pacer is to be resumed after the wait.
func (p *pausingConn) idle(holding bool, pace *dataplane.Pacer) {
	if holding {
		p.pause()
	}
	pace.Park()
}

func (p *pausingConn) Read(b []byte) (int, error) {
	if p.ahead {
		if n, done, err := p.tryRead(b); done {
			return n, err
		}
		p.aheadWaits.Add(1)
		defer p.aheadWaits.Add(1)
		return p.Conn.Read(b)
	}
	holding, pace := p.waits()
	if !holding && pace == nil {
		return p.readIdle(b)
	}
	if !holding {
		// nothing to publish: the thread goes as soon as the read waits
		if n, done, err := p.tryRead(b); done {
			return n, err
		}
		pace.Park()
		defer pace.Resume()
		return p.readIdle(b)
	}
	// a deadline fails only on a closed connection, which the call then reports
	_ = p.SetReadDeadline(time.Now().Add(idleCommit))
	n, err := p.Conn.Read(b)
	_ = p.SetReadDeadline(time.Time{})
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		return n, err
	}
	p.idle(holding, pace)
	defer pace.Resume()
	return p.readIdle(b)
}

// readIdle reads without limit, but for a session holding changes not
// sealed, which is woken every sealAfter to look whether to seal them.
func (p *pausingConn) readIdle(b []byte) (int, error) {
	for p.sealing != nil && p.sealing() {
		_ = p.SetReadDeadline(time.Now().Add(p.sealAfter)) // as in Read
		n, err := p.Conn.Read(b)
		_ = p.SetReadDeadline(time.Time{})
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		p.seal()
	}
	return p.Conn.Read(b)
}

// tryRead reads what the connection holds without waiting for more; done
// is false when it holds nothing yet (or the read is to be made again,
// to report what happened).
func (p *pausingConn) tryRead(b []byte) (n int, done bool, err error) {
	sc, isSys := p.Conn.(syscall.Conn)
	if !isSys {
		return 0, false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	var rerr error
	if rc.Read(func(fd uintptr) bool {
		n, rerr = syscall.Read(int(fd), b)
		return true // one try: no wait
	}) != nil {
		return 0, false, nil
	}
	switch {
	case rerr == syscall.EAGAIN || rerr == syscall.EINTR:
		return 0, false, nil
	case rerr != nil:
		return 0, true, rerr // its error is taken: reading again would not report it
	case n == 0:
		return 0, true, io.EOF
	}
	return n, true, nil
}

func (p *pausingConn) Write(b []byte) (int, error) {
	holding, pace := p.waits()
	if !holding && pace == nil {
		return p.writeIdle(b)
	}
	// as in Read
	_ = p.SetWriteDeadline(time.Now().Add(idleCommit))
	n, err := p.Conn.Write(b)
	_ = p.SetWriteDeadline(time.Time{})
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		return n, err
	}
	p.idle(holding, pace)
	defer pace.Resume()
	m, err := p.writeIdle(b[n:])
	return n + m, err
}

// writeIdle is readIdle's writing side: a client that does not read its
// answers holds no compaction off either.
func (p *pausingConn) writeIdle(b []byte) (int, error) {
	n := 0
	for p.sealing != nil && p.sealing() {
		_ = p.SetWriteDeadline(time.Now().Add(p.sealAfter)) // as in Read
		m, err := p.Conn.Write(b[n:])
		_ = p.SetWriteDeadline(time.Time{})
		n += m
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		p.seal()
	}
	m, err := p.Conn.Write(b[n:])
	return n + m, err
}
