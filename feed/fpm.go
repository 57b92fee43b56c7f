package feed

import (
	"encoding/binary"
	"errors"
	"io"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"urouter/dataplane"
)

// FPM frames, as FRR's dplane_fpm_nl sends them: a 4-byte header (version
// 1, type 1 for netlink, the frame's length with the header in network
// order), then whole netlink messages.
const (
	fpmVersion   = 1
	fpmNetlink   = 1
	fpmHeaderLen = 4
)

// What the last session installed and a new one has not said again is
// swept once the new session has been quiet for DefaultSettle and has
// either said as many routes as the last one had or lasted DefaultHold.
// zebra marks no end of its replay, and after a restart its table fills
// as its protocols converge: the hold is a graceful-restart time, within
// which the old routes go on forwarding.
const (
	DefaultSettle = 3 * time.Second
	DefaultHold   = 30 * time.Second
)

// FPM is the listener zebra connects to. One session at a time: a new
// connection replaces the one before (a zebra that restarted while its
// old connection lingers, as dplane_fpm_nl reconnects), once the one
// before has ended. The connections that come meanwhile wait in the
// listen backlog: a peer that connects and goes again thousands of times
// a second costs one goroutine, one read buffer and, while it says
// routes, one thread, and a few log lines (connLog).
type FPM struct {
	Applier *Applier
	timers  Timers

	ln       net.Listener
	mu       sync.Mutex
	conn     net.Conn
	peer     string
	since    time.Time
	settled  bool
	closed   bool
	ended    chan struct{} // closed when the last session has ended
	sessions sync.WaitGroup
	buf      []byte // the session's read buffer (one session at a time)
	connLog  logLimit

	Connects atomic.Uint64
	Frames   atomic.Uint64
	Bytes    atomic.Uint64
	// Connections the daemon closed: replaced by a newer one, or lost to a
	// read error. One closed after a malformed frame is the applier's
	// Stats.Malformed: every malformed frame closes its connection.
	Replaced, Lost atomic.Uint64
}

// Timers are a listener's sweep timers (see DefaultSettle); zero fields
// take the defaults.
type Timers struct {
	Settle, Hold time.Duration
	// clock is what they run by: nil, the wall clock (a test steps its own)
	clock clock
}

// A clock is what a listener's sweep timers run by: now, and a timer
// that calls f after d.
type clock interface {
	now() time.Time
	afterFunc(d time.Duration, f func()) timer
}

// A timer is a *time.Timer's Reset and Stop.
type timer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

type wallClock struct{}

func (wallClock) now() time.Time                            { return time.Now() }
func (wallClock) afterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }

// ListenFPM listens for zebra on addr (host:port) and applies what it
// sends through ap.
func ListenFPM(addr string, ap *Applier, t Timers) (*FPM, error) {
	if t.Settle == 0 {
		t.Settle = DefaultSettle
	}
	if t.Hold == 0 {
		t.Hold = DefaultHold
	}
	if t.clock == nil {
		t.clock = wallClock{}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	f := &FPM{Applier: ap, timers: t, ln: ln,
		connLog: logLimit{what: "FPM connection events", every: connLogEvery}}
	go f.accept()
	return f, nil
}

// Addr is the address it listens on.
func (f *FPM) Addr() net.Addr { return f.ln.Addr() }

// Close stops listening and ends the session; what was installed stays.
func (f *FPM) Close() {
	f.mu.Lock()
	f.closed = true
	if f.conn != nil {
		_ = f.conn.Close() // ends the session's read, which reports how it ended
	}
	f.mu.Unlock()
	_ = f.ln.Close() // ends accept's loop; a listener has nothing to flush
	f.sessions.Wait()
}

func (f *FPM) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		if f.conn != nil && !f.closed {
			f.connLog.printf("fpm %s: replaced by %s: closing the connection", f.peer, c.RemoteAddr())
			f.Replaced.Add(1)
			_ = f.conn.Close() // its session ends on the read this cuts short
		}
		ended := f.ended
		f.mu.Unlock()
		if ended != nil {
			<-ended // one session at a time: its thread and buffer are the next one's
		}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			_ = c.Close() // a connection that came after Close: never read
			return
		}
		f.conn, f.peer, f.since, f.settled = c, c.RemoteAddr().String(), f.timers.clock.now(), false
		ended = make(chan struct{})
		f.ended = ended
		f.sessions.Add(1)
		f.mu.Unlock()
		// The session begins here, in the order the connections came: begun
		// in its goroutine, an older connection's Begin could come after
		// the newer's and make the newer one's messages stale. Not under
		// f.mu: Begin walks what the feed installed, and Status waits on f.mu.
		sess := f.Applier.Begin()
		f.Connects.Add(1)
		go f.session(c, sess, ended)
	}
}

// connLogEvery is how often the listener logs its connections' ends: one
// line, then a count of those that followed, per interval.
const connLogEvery = 10 * time.Second

// Status is what `fpm show` prints.
type Status struct {
	Listen    string
	Connected bool
	Peer      string
	Since     time.Time
	Settled   bool // the session's replay has settled and been swept against
}

// Status reports the listener's state.
func (f *FPM) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Status{Listen: f.ln.Addr().String(), Connected: f.conn != nil, Peer: f.peer, Since: f.since, Settled: f.settled}
}

func (f *FPM) session(c net.Conn, sess Session, ended chan struct{}) {
	defer f.sessions.Done()
	defer close(ended) // last: the buffer and the thread are free
	ap := f.Applier
	var settle timer
	settle = f.timers.clock.afterFunc(time.Hour, func() { f.sweep(c, sess, settle) })
	settle.Stop()
	defer func() {
		settle.Stop()
		_ = c.Close() // the session is over, however it ended; nothing is written to zebra
		f.mu.Lock()
		if f.conn == c {
			f.conn = nil
		}
		f.mu.Unlock()
	}()
	if f.buf == nil {
		f.buf = make([]byte, 1<<20)
	}
	buf := f.buf
	var msgs []Msg
	have := 0
	// A storm from zebra yields to the traffic as a batch does. The pacer
	// locks the session to its thread: it is made once the session says
	// something, so that a connection that says nothing costs no thread.
	var pace *dataplane.Pacer
	paced := false
	defer func() {
		if pace != nil {
			pace.Done()
		}
	}()
	for {
		n, err := c.Read(buf[have:])
		have += n
		f.Bytes.Add(uint64(n))
		var off, frames int
		var bad error
		msgs, off, frames, bad = DecodeFrames(buf[:have], msgs[:0])
		f.Frames.Add(uint64(frames))
		if len(msgs) > 0 {
			if !paced && ap.r.DP != nil {
				pace, paced = ap.r.DP.NewPacer(), true // nil if nothing is limited
			}
			if !ap.ApplyIn(sess, msgs) { // the whole frames before a bad one
				return // a newer connection took over
			}
			settle.Reset(f.timers.Settle)
			if pace != nil {
				pace.Step(nil) // ApplyIn published all it did
			}
		}
		if bad != nil {
			ap.Stats.Malformed.Add(1)
			f.connLog.printf("fpm %s: %v: closing the connection", c.RemoteAddr(), bad)
			return
		}
		have = copy(buf, buf[off:have])
		switch {
		case err == nil:
			continue
		case errors.Is(err, io.EOF):
			f.connLog.printf("fpm %s: closed by the peer", c.RemoteAddr())
		case !errors.Is(err, net.ErrClosed): // else closed here, and said why
			f.Lost.Add(1)
			f.connLog.printf("fpm %s: %v: closing the connection", c.RemoteAddr(), err)
		}
		return // what was installed stays until the next session sweeps it
	}
}

// sweep runs once session sess on c has been quiet for Settle (its timer
// is t): it sweeps if the replay looks complete or Hold has passed, else
// comes back when Hold has.
func (f *FPM) sweep(c net.Conn, sess Session, t timer) {
	f.mu.Lock()
	current, since := f.conn == c && !f.settled, f.since
	f.mu.Unlock()
	if !current {
		return
	}
	if wait := f.timers.Hold - f.timers.clock.now().Sub(since); wait > 0 && !f.Applier.Replayed() {
		t.Reset(wait)
		return
	}
	if n := f.Applier.SweepIn(sess); n > 0 {
		log.Printf("fpm %s: swept %d routes and nexthops the last session left", c.RemoteAddr(), n)
	}
	f.mu.Lock()
	if f.conn == c {
		f.settled = true
	}
	f.mu.Unlock()
}

// DecodeFrames decodes the whole FPM frames at the start of b into msgs.
// It returns how many bytes they took and how many frames they were, and
// stops at a frame that is not whole yet, or at a bad one (err: nothing
// of it is in msgs).
func DecodeFrames(b []byte, msgs []Msg) (_ []Msg, used, frames int, err error) {
	for len(b)-used >= fpmHeaderLen {
		h := b[used : used+fpmHeaderLen]
		size := int(binary.BigEndian.Uint16(h[2:]))
		if h[0] != fpmVersion || h[1] != fpmNetlink || size < fpmHeaderLen {
			return msgs, used, frames, malformed("FPM header version %d type %d length %d", h[0], h[1], size)
		}
		if len(b)-used < size {
			break
		}
		if msgs, err = Decode(b[used+fpmHeaderLen:used+size], msgs); err != nil {
			return msgs, used, frames, err
		}
		used += size
		frames++
	}
	return msgs, used, frames, nil
}
