package control

import (
	"bytes"
	"cmp"
	"fmt"
	"net/netip"
	"os"
	"strconv"
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
	// seq numbers the changing lines of all sessions as they run
	seq atomic.Uint64
	// dirty: a record failed, so the file lacks a change that runs, until
	// a snapshot; failed is why
	dirty  atomic.Bool
	failed atomic.Value // string
	// snapped is when the last snapshot began (Unix ns)
	snapped atomic.Int64
	stop    chan struct{} // ends keepFeed
	// Loaded is what the start applied from the file.
	Loaded StateReport
	// held are the lines the router refused at the start (a host
	// interface not there): every snapshot keeps them, so that no
	// compaction drops what the file said, and the next start tries
	// them again. Set by Apply only.
	held []heldLine
	// Log receives what the daemon should log (a torn record dropped, a
	// line that failed); nil: stderr.
	Log func(string)
	// SealAfter is how long a session holding changes not sealed waits
	// on its client before it looks whether to seal them (see
	// session.sealIdle); 0 is DefaultSealAfter.
	SealAfter time.Duration
}

// DefaultSealAfter is State.SealAfter's default.
const DefaultSealAfter = time.Second

func (st *State) sealAfter() time.Duration { return cmp.Or(st.SealAfter, DefaultSealAfter) }

// heldLine is a line of the state file the router refused at the start.
type heldLine struct {
	text []byte // the line, '\n' included
	why  string // FILE:LINE: the router's error
}

// heldMark begins the part of a snapshot that holds the lines the start
// could not apply: written for the reader, they are replayed as any line.
var heldMark = []byte("# urouter state: lines that failed at the start (see status), kept until they apply\n")

// failedWhy is status's word on the lines that failed at the start.
func (st *State) failedWhy() string {
	m := fmt.Sprintf("state %s: %d of its lines failed (see the daemon's log)", st.path, st.Loaded.Errors)
	if n := len(st.held); n > 0 {
		m += fmt.Sprintf("; %d kept in the file until they apply, the first %s", n, st.held[0].why)
	}
	return m
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
// interface gone, say) is logged, counted, and held: every snapshot
// keeps it, and status says so. Its errors begin with the file's name,
// as ReadState's do.
func (st *State) Apply(ld *loadedState, fpm *feed.Applier) error {
	st.fpm = fpm
	if ld.torn != "" {
		st.log(fmt.Sprintf("state %s: %s", st.path, ld.torn))
	}
	recs := ld.records
	if len(recs) > 0 && recs[0].snapshot {
		if err := st.replay(&recs[0]); err != nil {
			return err
		}
		recs = recs[1:]
	}
	if err := st.replayChanges(recs); err != nil {
		return err
	}
	if n := len(st.held); n > 0 {
		st.log(fmt.Sprintf("state %s: %d lines failed: the file keeps them, and the next start tries them again", st.path, n))
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
	var err error
	if !st.dirty.Load() {
		err = st.j.append(s.pending...)
	}
	s.pending, s.entered = nil, false
	st.gate.RUnlock()
	if err != nil {
		st.failed.Store(err.Error())
		st.dirty.Store(true)
	}
	if st.dirty.Load() {
		// The file lacks a change that runs (a record failed): what
		// follows is not appended after it but sealed by a snapshot of
		// what runs, the missing change with it.
		return st.repair()
	}
	if st.due() && st.busy.CompareAndSwap(false, true) {
		go st.tryCompact()
	}
	return nil
}

// due reports whether the changes since the snapshot have grown to call
// for a compaction.
func (st *State) due() bool {
	n := st.j.sinceSnapshot()
	return n > compactAt && n > 2*st.j.snapshotSize()
}

// sealIdle seals what session s has changed so far, when it waits on its
// client with no transaction open and a compaction is due: a session
// that holds changes and waits (a batch typed by hand, a client that
// stopped) holds every compaction off, and the file would grow with the
// other sessions' changes without bound (25.7 MB while one held a single
// change). Its lines after are its next record: its batch is in the file
// in the parts it ran in, which is how the router has it.
func (s *session) sealIdle() {
	if s.state == nil || !s.entered || s.txn != nil || s.rtxn != nil || !s.state.due() {
		return
	}
	if err := s.state.leave(s); err != nil && s.sealErr == nil {
		s.sealErr = err
	}
}

// repair writes a snapshot of what runs once no session holds changes to
// seal (it waits a second for that at most, holding nothing): the file
// then has every change again.
func (st *State) repair() error {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		if st.busy.CompareAndSwap(false, true) {
			if st.gate.TryLock() {
				err := st.compact()
				st.gate.Unlock()
				st.busy.Store(false)
				if err != nil {
					st.failed.Store(err.Error())
					return fmt.Errorf("state %s: the change is made, not saved: %w", st.path, err)
				}
				st.dirty.Store(false)
				return nil
			}
			st.busy.Store(false)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("state %s: the change is made, not saved yet: %s (other sessions hold changes to seal)", st.path, st.failed.Load())
		}
	}
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
	if len(st.held) > 0 {
		buf.Write(heldMark)
		for _, h := range st.held {
			buf.Write(h.text)
		}
	}
	if st.fpm != nil {
		buf.Write(feedMark)
		sv := saver{s: s, emit: func(_ string, line []byte) { buf.Write(line) }, only: st.fpm}
		sv.lines("route", sv.routesAndNexthops()) // the rules are written already
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
	need := len(line) + len(s.made) + len(seqWord) + 32 // a #@seq mark, -6, '\n'
	if n := len(s.pending); n == 0 || cap(s.pending[n-1])-len(s.pending[n-1]) < need {
		s.pending = append(s.pending, make([]byte, 0, max(pendingChunk, need)))
	}
	c := &s.pending[len(s.pending)-1]
	// the line's number in the run, said when another session's came
	// between: a replay applies them as they ran
	seq := s.state.seq.Add(1)
	if s.lastSeq == 0 || seq != s.lastSeq+1 {
		*c = strconv.AppendUint(append(*c, seqWord...), seq, 10)
		*c = append(*c, '\n')
	}
	s.lastSeq = seq
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
	case "", "monitor", "fpm", "mirror", "save", "status", "help", "capture", "trace":
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
