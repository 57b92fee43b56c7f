package control

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"urouter/control/statefile"
	"urouter/control/wire"
	"urouter/feed"
	"urouter/router"
)

// What the command language gives the state file (package statefile): the
// lines that changed something, with what the router chose for them, and
// a replay of them at the start.

// effect is what a command did that its words do not say, for the state
// file's record: what the router chose (a nexthop's id, a link's index and
// MAC), which a replay must make the same, and, for a command that failed,
// what it changed all the same, as a command of its own (a sysctl's names
// written).
type effect struct {
	nexthopID uint32
	linkIndex int32
	linkMAC   net.HardwareAddr
	partial   []byte
	words     []byte // made's buffer
}

// made says what the router chose as the words that follow the command
// word: " id N", " index N address MAC".
func (e *effect) made() []byte {
	w := e.words[:0]
	if e.nexthopID != 0 {
		w = strconv.AppendUint(append(w, " id "...), uint64(e.nexthopID), 10)
	}
	if e.linkIndex != 0 {
		w = strconv.AppendInt(append(w, " index "...), int64(e.linkIndex), 10)
	}
	if e.linkMAC != nil {
		w = append(append(w, " address "...), e.linkMAC.String()...)
	}
	e.words = w
	return w
}

func (e *effect) reset() {
	*e = effect{words: e.words[:0], partial: e.partial[:0]}
}

// changes reports whether command `obj args` may change the configuration
// (what is only shown is not journaled; a word that may be either is).
func changes(obj string, args [][]byte) bool {
	switch obj {
	case "", "monitor", "fpm", "mirror", "save", "status", "help", "capture", "trace", "vrf":
		return false
	case "sr":
		return len(args) > 1 && matches(args[0], "tunsrc") && matches(args[1], "set")
	case "sysctl":
		for _, a := range args {
			if is(a, "-w") || bytes.IndexByte(a, '=') >= 0 {
				return true
			}
		}
		return false
	}
	if len(args) == 0 {
		return false // OBJECT alone shows
	}
	switch str(args[0]) {
	case "show", "sh", "list", "lst", "ls", "get", "save", "showdump", "help", "bucket":
		return false
	}
	return true
}

var inet6Word = []byte("-6 ")

// record gives the state file line, which changed something, as the
// session ran it: -6 if it had it, and what the router chose said after
// the command word (`nexthop add ...` -> `nexthop add id N ...`), without
// its comment.
func (s *Session) record(line []byte, args [][]byte) {
	line = bytes.TrimSpace(cut(line, '#'))
	var six []byte
	cmd := 1 // args[cmd] is the command word: OBJECT COMMAND, or -6 OBJECT COMMAND
	if len(args) > 1 && is(args[0], "-6") {
		cmd = 2
	} else if s.opt.Inet6 {
		six = inet6Word
	}
	if made := s.did.made(); len(made) > 0 {
		if i := wordEnd(line, args, cmd); i >= 0 {
			s.rec.Record(six, line[:i], made, line[i:])
			return
		}
	}
	s.rec.Record(six, line)
}

// SealIdle seals what the session has changed so far when it waits on
// its client with no transaction open (see statefile.Recorder.SealIdle).
func (s *Session) SealIdle() {
	if s.rec != nil && !s.Holding() {
		s.rec.SealIdle()
	}
}

// StateLanguage is the command language as a state file uses it (see
// statefile.Language): a router's configuration saved and replayed.
type StateLanguage struct {
	r     *router.Router
	feeds atomic.Pointer[Feeds]
}

// NewStateLanguage is r's.
func NewStateLanguage(r *router.Router) *StateLanguage { return &StateLanguage{r: r} }

// SetFeeds gives the feeds whose routes a snapshot leaves out (they come
// back from their daemons); call it before the socket is served.
func (l *StateLanguage) SetFeeds(f *Feeds) { l.feeds.Store(f) }

func (l *StateLanguage) session() *Session { return &Session{r: l.r, feeds: l.feeds.Load()} }

// Save writes the configuration as save does.
func (l *StateLanguage) Save(emit func(line []byte)) {
	l.session().save(false, func(_ string, line []byte) { emit(line) })
}

// SaveFeed writes the routes and nexthops fpm installed.
func (l *StateLanguage) SaveFeed(fpm *feed.Applier, emit func(line []byte)) {
	sv := saver{s: l.session(), emit: func(_ string, line []byte) { emit(line) }, only: fpm}
	sv.chunkLines("route", sv.routesAndNexthops()) // the rules are written already
}

// Replayer runs the lines of the state file at path as a forced batch.
func (l *StateLanguage) Replayer(path string) statefile.Replayer {
	s := l.session()
	s.opt = wire.Options{Batch: true, Force: true, BatchName: path}
	s.out, s.restoring = bufio.NewWriter(io.Discard), true
	return &replay{s: s}
}

// replay is a session replaying a state file.
type replay struct{ s *Session }

var errLong = errors.New("command line too long")

func (rp *replay) Run(line []byte, n int, t time.Time) error {
	if len(line) > maxLine {
		return errLong
	}
	s := rp.s
	s.line, s.clock = n, t
	if e := s.exec(line); e != nil {
		return e
	}
	return nil // not e: a nil *cmdErr is a non-nil error
}

func (rp *replay) Adopt(a statefile.Adopter) { rp.s.adopt = a }

func (rp *replay) Commit() { rp.s.commit() }
