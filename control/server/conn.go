package server

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"urouter/control"
	"urouter/dataplane"
)

// pausingConn is a client's connection as its session uses it: while the
// session holds a transaction (Session.Holding), a read or a write that
// waits longer than control.IdleCommit publishes it, then waits without
// limit. The thread a batch's pacer holds is given back (parked) for that
// wait too, and for any read that waits while nothing is held: a batch
// that waits on its client costs no thread.
type pausingConn struct {
	net.Conn
	s *control.Session
	// ahead: the session's input is read by its reader goroutine (see
	// ReadAhead), which holds nothing and parks its own thread, its
	// waiting reads marked here; the session itself publishes when it
	// waits for that reader
	ahead atomic.Pointer[control.ReadWaits]
}

// ReadAhead is control.AheadConn's.
func (p *pausingConn) ReadAhead(w *control.ReadWaits) { p.ahead.Store(w) }

// waits reports whether a read or a write has something to let go of if
// it waits: a transaction, a pacer's thread (nothing before the session
// is made, while its header is read).
func (p *pausingConn) waits() (holding bool, pace *dataplane.Pacer) {
	if p.s == nil {
		return false, nil
	}
	return p.s.Holding(), p.s.Pacer()
}

// sealDue is the session's Session.SealDue (none before the session is
// made).
func (p *pausingConn) sealDue() (every time.Duration, unsealed bool) {
	if p.s == nil {
		return 0, false
	}
	return p.s.SealDue()
}

// idle lets go of what a read or a write waiting longer than
// control.IdleCommit holds; the pacer is to be resumed after the wait.
func (p *pausingConn) idle(holding bool, pace *dataplane.Pacer) {
	if holding {
		p.s.Commit()
	}
	pace.Park()
}

func (p *pausingConn) Read(b []byte) (int, error) {
	if w := p.ahead.Load(); w != nil {
		if n, done, err := p.tryRead(b); done {
			return n, err
		}
		w.Begin()
		defer w.End()
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
	_ = p.SetReadDeadline(time.Now().Add(control.IdleCommit))
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
// sealed, which is woken as often as SealDue says to look whether to
// seal them.
func (p *pausingConn) readIdle(b []byte) (int, error) {
	for every, due := p.sealDue(); due; every, due = p.sealDue() {
		_ = p.SetReadDeadline(time.Now().Add(every)) // as in Read
		n, err := p.Conn.Read(b)
		_ = p.SetReadDeadline(time.Time{})
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		p.s.SealIdle()
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
	_ = p.SetWriteDeadline(time.Now().Add(control.IdleCommit))
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
	for every, due := p.sealDue(); due; every, due = p.sealDue() {
		_ = p.SetWriteDeadline(time.Now().Add(every)) // as in Read
		m, err := p.Conn.Write(b[n:])
		_ = p.SetWriteDeadline(time.Time{})
		n += m
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		p.s.SealIdle()
	}
	m, err := p.Conn.Write(b[n:])
	return n + m, err
}
