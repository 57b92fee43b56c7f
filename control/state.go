package control

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"urouter/feed"
	"urouter/router"
)

// State is a daemon's state file (`urouter daemon --state FILE`): the
// configuration it had, kept across a kill -9. The file is a snapshot (what
// `save` writes, and what zebra had given, kept for its sweep) and the
// changes since, each session's lines that changed something sealed as
// one record (journal.go) and on disk before the session is told its
// status: a batch is there whole or not at all.
//
// Sessions that have changed something and not yet sealed it hold gate
// shared; a compaction takes it only when none does (TryLock), so it never
// waits on a client, and its snapshot holds no half of a batch.
type State struct {
	path  string
	r     *router.Router
	feeds *Feeds
	fpm   *feed.Applier // the FPM feed's, whose routes the snapshot keeps
	j     *journal
	gate  sync.RWMutex
	busy  atomic.Bool // a compaction is under way
	// snapped is when the last snapshot began (Unix ns)
	snapped atomic.Int64
	stop    chan struct{} // ends keepFeed
	// Loaded is what the start applied from the file.
	Loaded StateReport
	// Log receives what the daemon should log (a torn record dropped, a
	// line that failed); nil: stderr.
	Log func(string)
}

// StateReport is what a start applied from the state file.
type StateReport struct {
	Records, Lines, Errors int
	Torn                   string // the torn tail dropped, if any
	Snapshot               bool   // the file held a whole configuration
}

// compactAt is how large the changes since the snapshot grow before a
// compaction, at least: a full table's snapshot is some 10 MB, so a
// record or two of routes do not rewrite it each time.
var compactAt int64 = 8 << 20

// feedMark begins the part of a snapshot that a feed installed: what follows
// is applied as the feed's, for its next session to sweep.
var feedMark = []byte("# urouter state: what zebra gave over FPM, its own again until it has said it all\n")

// LoadedState is what ReadState read, for Apply.
type LoadedState = loadedState

// ReadState reads the state file at path (missing: empty) without applying
// it: a file that does not load stops the start here, with its line.
func ReadState(r *router.Router, path string) (*State, *loadedState, error) {
	ld, err := loadState(path)
	if err != nil {
		return nil, nil, err
	}
	st := &State{path: path, r: r}
	st.Loaded.Records, st.Loaded.Torn = len(ld.records), ld.torn
	st.Loaded.Snapshot = len(ld.records) > 0 && ld.records[0].snapshot
	return st, ld, nil
}

// HasSnapshot reports whether the file held a whole configuration, which
// then stands for the start-up config's (that config made it, or was
// replaced since).
func (st *State) HasSnapshot() bool { return st.Loaded.Snapshot }

func (st *State) log(m string) {
	if st.Log != nil {
		st.Log(m)
		return
	}
	fmt.Fprintln(os.Stderr, "urouter daemon:", m)
}

// Apply replays what the file held, then opens it for the changes to come
// (writing a snapshot first if it held none, or only a plain config). fpm, if not nil, is the FPM
// feed's applier, given back the routes it owned. A line that does not
// parse stops it with the file and line; one the router refuses (a host
// interface gone, say) is logged, counted, and passed over. Its errors
// begin with the file's name, as ReadState's do.
func (st *State) Apply(ld *loadedState, fpm *feed.Applier) error {
	st.fpm = fpm
	if ld.torn != "" {
		st.log(fmt.Sprintf("state %s: %s", st.path, ld.torn))
	}
	for i := range ld.records {
		if err := st.replay(&ld.records[i]); err != nil {
			return err
		}
	}
	j, err := openJournal(st.path, ld)
	if err != nil {
		return fmt.Errorf("%s: %w", st.path, err)
	}
	st.j = j
	// A plain config's snapshot is what it made, as save writes it (as
	// --config with a new state file gets): its own words would leave
	// to the router at each start again what it chose, a MAC, an index.
	if len(ld.records) == 0 || ld.plain {
		if err := st.compact(); err != nil {
			return fmt.Errorf("%s: %w", st.path, err)
		}
	} else {
		st.snapped.Store(ld.records[0].time)
	}
	return nil
}

// Run starts keeping the feeds' routes out of the snapshot (they come back
// from their daemons) but for the FPM feed's, which it snapshots when they
// change. Call it once the feeds run, before the socket is served.
func (st *State) Run(feeds *Feeds) {
	st.feeds = feeds
	if st.fpm != nil {
		st.stop = make(chan struct{})
		go st.keepFeed(st.stop)
	}
}

// replay applies one record as a forced batch, dated when it was written
// (a route's expires counts from then).
func (st *State) replay(rec *journalRecord) error {
	s := &session{r: st.r, feeds: st.feeds, opt: options{batch: true, force: true, batchName: st.path},
		out: bufio.NewWriter(io.Discard)}
	if rec.time != 0 {
		s.clock = time.Unix(0, rec.time)
	}
	defer s.commit()
	s.line = rec.line - 1
	text := rec.text
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i+1], text[i+1:]
		} else {
			text = nil
		}
		s.line++
		if bytes.Equal(line, feedMark) {
			s.commit()
			if st.fpm != nil {
				s.adopt = st.fpm
			}
			continue
		}
		if len(line) > maxLine {
			return fmt.Errorf("%s:%d: command line too long", st.path, s.line)
		}
		st.Loaded.Lines++
		e := s.exec(line)
		if e == nil {
			continue
		}
		if e.exits || e.code == 255 || bytes.HasPrefix([]byte(e.msg), []byte("Object \"")) {
			return fmt.Errorf("%s:%d: %s", st.path, s.line, e.msg)
		}
		st.Loaded.Errors++
		st.log(fmt.Sprintf("state %s:%d: %s", st.path, s.line, e.msg))
	}
	return nil
}

// enter is called before a session's first change: it holds the gate until
// the session's changes are sealed.
func (st *State) enter(s *session) {
	if !s.entered {
		st.gate.RLock()
		s.entered = true
	}
}

// leave seals what session s changed, on disk before it is told its status.
func (st *State) leave(s *session) error {
	if !s.entered {
		return nil
	}
	err := st.j.append(s.pending...)
	s.pending, s.entered = nil, false
	st.gate.RUnlock()
	if err != nil {
		return fmt.Errorf("state %s: %w", st.path, err)
	}
	if n := st.j.sinceSnapshot(); n > compactAt && n > 2*st.j.snapshotSize() && st.busy.CompareAndSwap(false, true) {
		go st.tryCompact()
	}
	return nil
}

// tryCompact compacts unless a session has changes to seal (the next
// session's leave, or the feed's keeper, tries again); busy is held.
func (st *State) tryCompact() {
	defer st.busy.Store(false)
	if !st.gate.TryLock() {
		return
	}
	defer st.gate.Unlock()
	if err := st.compact(); err != nil {
		st.log(fmt.Sprintf("state %s: %v", st.path, err))
	}
}

// feedQuiet and feedStale say when the FPM feed's routes are written again:
// once it has been quiet this long since it changed, or, through a feed
// that never rests, when the snapshot is this old.
var feedQuiet, feedStale = time.Second, 30 * time.Second

// keepFeed writes a snapshot when what the FPM feed installed has changed
// since the last one: zebra's routes are not journaled (they come at a
// feed's rate), but a restart finds them as of the last snapshot and keeps
// them until zebra has said them again.
func (st *State) keepFeed(stop <-chan struct{}) {
	t := time.NewTicker(feedQuiet / 2)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		changed := st.fpm.Updated()
		snap := time.Unix(0, st.snapped.Load())
		if !changed.After(snap) || time.Since(changed) < feedQuiet && time.Since(snap) < feedStale {
			continue
		}
		if st.busy.CompareAndSwap(false, true) {
			st.tryCompact()
		}
	}
}

// compact writes the configuration as the file's snapshot; the gate is
// held (or nobody else has the state yet).
func (st *State) compact() error {
	now := time.Now() // what the feed changes from now on is for the next one
	var buf bytes.Buffer
	buf.Grow(int(st.j.snapshotSize()))
	s := &session{r: st.r, feeds: st.feeds}
	s.save(false, func(_ string, line []byte) { buf.Write(line) })
	if st.fpm != nil {
		buf.Write(feedMark)
		sv := saver{s: s, emit: func(_ string, line []byte) { buf.Write(line) }, only: st.fpm}
		sv.nexthops()
		sv.routes()
	}
	if err := st.j.compact(buf.Bytes()); err != nil {
		return fmt.Errorf("compaction: %w", err)
	}
	st.snapped.Store(now.UnixNano())
	return nil
}

// Close closes the file once a compaction under way is done. It does not
// wait for sessions (one may never end): a change sealed after it fails,
// and its client is told.
func (st *State) Close() error {
	if st.j == nil {
		return nil
	}
	if st.stop != nil {
		close(st.stop)
		st.stop = nil
	}
	for !st.busy.CompareAndSwap(false, true) {
		time.Sleep(time.Millisecond)
	}
	return st.j.close()
}

// record keeps line, which changed something, for the session's record:
// as the session ran it (-6 if it had it; what the router chose, a
// nexthop's id or a link's index and MAC, said after the command word, so
// that a replay makes the same), without its comment. The lines go into
// chunks of whole lines, so that a batch of a full table is not copied as
// it grows.
func (s *session) record(line []byte, args [][]byte) {
	line = bytes.TrimSpace(cut(line, '#'))
	need := len(line) + len(s.made) + 4 // -6, '\n'
	if n := len(s.pending); n == 0 || cap(s.pending[n-1])-len(s.pending[n-1]) < need {
		s.pending = append(s.pending, make([]byte, 0, max(pendingChunk, need)))
	}
	c := &s.pending[len(s.pending)-1]
	cmd := 1 // args[cmd] is the command word: OBJECT COMMAND, or -6 OBJECT COMMAND
	if len(args) > 1 && is(args[0], "-6") {
		cmd = 2
	} else if s.opt.inet6 {
		*c = append(*c, "-6 "...)
	}
	if len(s.made) > 0 {
		// `nexthop add ...` -> `nexthop add id N ...`
		if i := wordEnd(line, args, cmd); i >= 0 {
			*c = append(append(*c, line[:i]...), s.made...)
			line = line[i:]
		}
	}
	*c = append(append(*c, line...), '\n')
}

// pendingChunk is the size of a session's chunks of lines to seal.
const pendingChunk = 256 << 10

// changes reports whether command `obj args` may change the configuration
// (what is only shown is not journaled; a word that may be either is).
func changes(obj string, args [][]byte) bool {
	switch obj {
	case "", "monitor", "fpm", "mirror", "save", "status", "help":
		return false
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

// adopter is a feed that takes back the routes and nexthops a state file
// kept for it.
type adopter interface {
	Adopt(table uint32, dst, src netip.Prefix, metric uint32)
	AdoptNexthop(id uint32)
}
