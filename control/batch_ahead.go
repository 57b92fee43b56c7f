package control

import (
	"bufio"
	"bytes"
	"net/netip"
	"slices"
	"sync"
	"time"

	"urouter/dataplane"
)

// A long batch is read and parsed ahead of its session, in a goroutine of
// its own, while the session applies the lines before: on two cores the
// words of a full table's 160,000 lines (split, keywords, prefixes and
// gateways parsed) cost as much as putting their routes into the table,
// and need nothing of the router. The reader hands the session chunks of
// whole lines in their order, each line split and classified, a route
// command's arguments parsed (routeReq, or its error); the session runs
// them as it runs any line (exec), in order, taking what was parsed for
// what it would parse itself. So a batch fails at the same line with the
// same error as before, and changes nothing after it: parsing has no
// effects, and what it found is only acted on in the session, in order.

// aheadChunk is a run of whole lines read from the input, parsed.
type aheadChunk struct {
	data  []byte // the lines; then the start of a line cut off, not theirs
	lines []aheadLine
	args  [][]byte // the lines' words, back to back
	legs  []leg    // their multipath routes' paths, back to back
	// the destinations and lines of its runs (see aheadLine.tmpl)
	dsts  []netip.Prefix
	texts [][]byte
}

// aheadLine is one line of a chunk.
type aheadLine struct {
	line     []byte
	args     [][]byte
	splitErr error
	cw       cmdWords
	// route: a route command's arguments were parsed, into req (or perr)
	route   bool
	req     routeReq
	perr    *cmdErr
	tooLong bool // the line is over maxLine: the batch ends here
	// tmpl, if not 0, makes this a run of lines shaped after line tmpl - 1
	// of the chunk: their destinations and lines are the chunk's
	// dsts[from:to] and texts[from:to], and the fields above are not set
	// (see lineShape)
	tmpl     int
	from, to int
}

// aheadChunks is how many chunks are in flight at most (the reader's,
// the session's and two waiting), and aheadRead what the reader reads
// into one: ~1,400 lines of a full table's batch, so that the session has
// lines to run soon, and wakes the reader (waiting for a free chunk: it
// parses faster than the session applies) ~110 times a table, not more
// (a wake is a futex call, ~20 us on this machine).
const (
	aheadChunks = 4
	aheadRead   = 128 << 10
)

// chunkPool keeps chunks from one batch to the next: a chunk's parsed
// lines (a route request each) are big, and a session's first chunks
// would otherwise grow them from nothing every time.
var chunkPool = sync.Pool{New: func() any { return &aheadChunk{} }}

type readAhead struct {
	in    *bufio.Reader
	out   chan *aheadChunk // parsed, in order; closed at the input's end
	free  chan *aheadChunk // chunks the session is done with
	done  chan struct{}    // closed when the session stops reading
	ended chan struct{}    // closed when the reader has stopped
	carry []byte           // the line cut off at the end of the last read
	words memo             // the object word last seen
	cmd   memo             // the route command word last seen
	pm    parseMemo
	shape lineShape // the last line parsed in full
	timer *time.Timer
	pace  *dataplane.Pacer // the session's, charged with the reader's CPU
	// waits marks the reads of a client's connection that wait on the
	// client (AheadConn); nil for an input that never waits on a client
	// (a config file), whose batch is never published for being idle
	waits *ReadWaits
}

func startReadAhead(in *bufio.Reader, pace *dataplane.Pacer, waits *ReadWaits) *readAhead {
	ra := &readAhead{in: in, out: make(chan *aheadChunk, aheadChunks), free: make(chan *aheadChunk, aheadChunks),
		done: make(chan struct{}), ended: make(chan struct{}), pace: pace, waits: waits}
	for i := 0; i < aheadChunks; i++ {
		ra.free <- chunkPool.Get().(*aheadChunk)
	}
	go ra.run()
	return ra
}

func (ra *readAhead) run() {
	defer close(ra.ended)
	defer close(ra.out)
	// the parsing is the batch's work: a batch that yields to the data
	// plane yields for it too (see dataplane.Pacer)
	m := ra.pace.Meter()
	defer m.Done()
	for {
		var c *aheadChunk
		select {
		case c = <-ra.free:
		default:
			// the session is behind, or waits on its client's reading
			m.Park()
			select {
			case c = <-ra.free:
			case <-ra.done:
			}
			m.Resume()
		}
		if c == nil {
			return // the session reads no more
		}
		more := ra.fill(c, aheadRead, m)
		m.Charge()
		select {
		case ra.out <- c:
		case <-ra.done:
			return
		}
		if !more {
			return
		}
	}
}

// fill reads into c until it holds a whole line, the input ends or a
// line is too long, and parses the whole lines; false when nothing
// follows c. m is the reader's meter, whose thread is given back while a
// read waits.
func (ra *readAhead) fill(c *aheadChunk, size int, m *dataplane.Meter) bool {
	c.data = append(c.data[:0], ra.carry...)
	c.lines, c.args, c.legs, c.dsts, c.texts = c.lines[:0], c.args[:0], c.legs[:0], c.dsts[:0], c.texts[:0]
	ra.shape.tmpl = 0 // a template is the chunk's own
	start := 0        // of the line being read
	for {
		c.data = slices.Grow(c.data, size)
		if ra.in.Buffered() == 0 {
			m.Park() // the read waits on the client, or may
		}
		n, err := ra.in.Read(c.data[len(c.data) : len(c.data)+size])
		m.Resume()
		from := len(c.data)
		c.data = c.data[:from+n]
		select {
		case <-ra.done:
			return false // nobody reads what follows
		default:
		}
		if i := bytes.LastIndexByte(c.data[from:], '\n'); i >= 0 {
			start = from + i + 1
		}
		if len(c.data)-start > maxLine {
			// a line too long, cut off: no more is read (the session
			// stops at it)
			ra.parse(c, c.data[:start])
			c.lines = append(c.lines, aheadLine{tooLong: true})
			return false
		}
		if err != nil || start > 0 {
			ra.parse(c, c.data[:start])
			// a line without its '\n' at the end is a command cut short:
			// dropped (see run)
			ra.carry = append(ra.carry[:0], c.data[start:]...)
			return err == nil
		}
	}
}

// parse splits the whole lines b into c's lines, each line's words, and
// the arguments of route commands.
func (ra *readAhead) parse(c *aheadChunk, b []byte) {
	var scratch [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		line := b[:i+1]
		b = b[i+1:]
		if len(line) > maxLine {
			c.lines = append(c.lines, aheadLine{tooLong: true})
			return
		}
		if ra.shape.parse(c, line) {
			continue
		}
		c.lines = append(c.lines, aheadLine{line: line})
		l := &c.lines[len(c.lines)-1]
		scratch, l.splitErr = splitLine(line, scratch)
		if l.splitErr != nil || len(scratch) == 0 {
			continue
		}
		at := len(c.args)
		c.args = append(c.args, scratch...)
		l.args = c.args[at:len(c.args):len(c.args)]
		l.cw = classify(l.args, &ra.words)
		if l.cw.obj != "route" || len(l.cw.rest) == 0 || !modifies(ra.cmd.of(routeCmds(), l.cw.rest[0])) {
			continue
		}
		l.route = true
		cmd := ra.cmd.of(routeCmds(), l.cw.rest[0])
		l.perr = parseRouteModify(&l.req, l.cw.rest[1:], &ra.pm)
		if len(l.req.legs) > 0 {
			// the memo's storage, which the next line reuses
			at := len(c.legs)
			c.legs = append(c.legs, l.req.legs...)
			l.req.legs = c.legs[at:len(c.legs):len(c.legs)]
		}
		ra.shape.remember(c, l, cmd == rcAdd)
	}
}

// modifies: route command cmd takes a ROUTE that parseRouteModify reads.
func modifies(cmd int) bool {
	switch cmd {
	case rcAdd, rcChange, rcReplace, rcPrepend, rcAppend, rcDelete:
		return true
	}
	return false
}

// runAhead is run for the rest of a long batch: its lines read and
// parsed ahead (startReadAhead), run in order here; status is the run's
// so far.
func (s *Session) runAhead(in *bufio.Reader, status int) int {
	var waits *ReadWaits
	if s.conn != nil {
		waits = new(ReadWaits)
		s.conn.ReadAhead(waits)
	}
	ra := startReadAhead(in, s.pace, waits)
	// A connection's reader ends when the connection closes, after the
	// session; any other input (a config file) is the caller's again
	// when Run returns (RunConfig asks it how it ended), so its reader
	// is waited for: it stops after the read it is in.
	defer ra.stop(s.conn == nil)
	for {
		c := s.nextChunk(ra)
		if c == nil {
			return status
		}
		for i := range c.lines {
			l := &c.lines[i]
			if l.tooLong {
				s.errOut("Error: command line too long")
				return 255
			}
			if l.tmpl != 0 {
				if code, stop := s.runShaped(c, l, &status); stop {
					return code
				}
				continue
			}
			s.line++
			e := s.execAhead(l)
			s.step()
			if code, stop := s.outcome(e, &status); stop {
				return code
			}
		}
		ra.free <- c
	}
}

// stop tells the reader the session reads no more: it ends after the
// read it is in (a connection's, when the connection closes), and if
// wait, stop waits for that. The chunks the session is done with go back
// to the pool.
func (ra *readAhead) stop(wait bool) {
	close(ra.done)
	if wait {
		<-ra.ended
	}
	for {
		select {
		case c := <-ra.free:
			c.reset()
			chunkPool.Put(c)
		default:
			return
		}
	}
}

// reset drops what c refers to (a batch's lines), keeping its room.
func (c *aheadChunk) reset() {
	clear(c.lines[:cap(c.lines)])
	clear(c.args[:cap(c.args)])
	clear(c.legs[:cap(c.legs)])
	clear(c.texts[:cap(c.texts)])
	c.data, c.lines, c.args, c.legs, c.dsts, c.texts = c.data[:0], c.lines[:0], c.args[:0], c.legs[:0], c.dsts[:0], c.texts[:0]
}

// execAhead is exec of a line parsed ahead.
func (s *Session) execAhead(l *aheadLine) *cmdErr {
	if l.splitErr != nil {
		return &cmdErr{msg: l.splitErr.Error(), code: 1}
	}
	if len(l.args) == 0 {
		return nil
	}
	if l.route {
		s.ahead = l
	}
	e := s.execWords(l.line, l.args, l.cw)
	s.ahead = nil
	return e
}

// nextChunk waits for the reader's next chunk; nil at the input's end.
// Waiting, the session does what it does when its input is drained: it
// sends what it printed, and publishes its transaction once it has waited
// IdleCommit on the client (as control/server's pausingConn does for a
// session that reads itself). A wait on the reader's parsing is not one: the client has sent
// what follows, and a full table loaded into an empty one stays one
// transaction, which builds the trie bottom-up (see fib6's bulk load).
func (s *Session) nextChunk(ra *readAhead) *aheadChunk {
	select {
	case c := <-ra.out:
		return c
	default:
	}
	s.flush()
	if s.Holding() {
		if c, idle := s.waitIdle(ra); !idle {
			return c
		}
		s.commit()
	}
	// the client's next lines, or the reader's parse of them: the
	// session's thread is given back meanwhile
	s.pace.Park()
	defer s.pace.Resume()
	return s.awaitChunk(ra)
}

// awaitChunk waits for the reader's next chunk, with no transaction open;
// a session holding changes not sealed looks as often as SealDue says
// whether to seal them (as control/server's connection does while the
// session reads it).
func (s *Session) awaitChunk(ra *readAhead) *aheadChunk {
	every, due := s.SealDue()
	if !due {
		return <-ra.out
	}
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case c := <-ra.out:
			return c
		case <-t.C:
		}
		if s.SealIdle(); !s.rec.Holding() {
			return <-ra.out
		}
		t.Reset(every)
	}
}

// waitIdle waits for the reader's next chunk (nil at the input's end)
// while the client sends; idle once one read of the reader's has waited
// on the client a whole IdleCommit. A reader descheduled on a loaded
// machine is not a client gone idle: only a read that found nothing to
// read counts (ReadWaits).
func (s *Session) waitIdle(ra *readAhead) (c *aheadChunk, idle bool) {
	if ra.waits == nil {
		return <-ra.out, false
	}
	if ra.timer == nil {
		ra.timer = time.NewTimer(IdleCommit)
	} else {
		ra.timer.Reset(IdleCommit)
	}
	for seen := uint64(0); ; {
		select {
		case c := <-ra.out:
			ra.timer.Stop()
			return c, false
		case <-ra.timer.C:
		}
		// one read of the reader's lasting a whole IdleCommit is a
		// client that has sent nothing meanwhile
		var idle bool
		if seen, idle = ra.waits.idleSince(seen); idle {
			return nil, true
		}
		ra.timer.Reset(IdleCommit)
	}
}
