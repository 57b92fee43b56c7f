package statefile

import (
	"bytes"
	"cmp"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"urouter/feed"
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
	path string
	lang Language
	fpm  *feed.Applier // the FPM feed's, whose routes the snapshot keeps
	j    *journal
	gate sync.RWMutex
	// busy: a compaction is under way; idle is signalled when it ends,
	// and when a session's changes are sealed (see repair, Close)
	busy  bool
	mu    sync.Mutex // guards busy
	idle  *sync.Cond
	clock func() time.Time
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
	Loaded Report
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
	// Recorder.SealIdle); 0 is DefaultSealAfter.
	SealAfter time.Duration
	// CompactAt is how large the changes since the snapshot grow before
	// a compaction, at least; 0 is DefaultCompactAt.
	CompactAt int64
	// FeedQuiet and FeedStale say when the FPM feed's routes are written
	// again: once it has been quiet this long since it changed, or,
	// through a feed that never rests, when the snapshot is this old; 0
	// is DefaultFeedQuiet, DefaultFeedStale.
	FeedQuiet, FeedStale time.Duration
	// RepairWait is how long a change whose record failed waits for the
	// sessions holding changes to seal theirs, for the snapshot that
	// writes it; 0 is DefaultRepairWait.
	RepairWait time.Duration
}

// DefaultSealAfter is State.SealAfter's default.
const DefaultSealAfter = time.Second

// SealEvery is State.SealAfter, or its default.
func (st *State) SealEvery() time.Duration { return cmp.Or(st.SealAfter, DefaultSealAfter) }

// The defaults of State's knobs. DefaultCompactAt: a full table's snapshot
// is some 10 MB, so a record or two of routes do not rewrite it each time.
const (
	DefaultCompactAt  int64 = 8 << 20
	DefaultFeedQuiet        = time.Second
	DefaultFeedStale        = 30 * time.Second
	DefaultRepairWait       = time.Second
)

// heldLine is a line of the state file the router refused at the start.
type heldLine struct {
	text []byte // the line, '\n' included
	why  string // FILE:LINE: the router's error
}

// heldMark begins the part of a snapshot that holds the lines the start
// could not apply: written for the reader, they are replayed as any line.
var heldMark = []byte("# urouter state: lines that failed at the start (see status), kept until they apply\n")

// FailedWhy is status's word on the lines that failed at the start.
func (st *State) FailedWhy() string {
	m := fmt.Sprintf("state %s: %d of its lines failed (see the daemon's log)", st.path, st.Loaded.Errors)
	if n := len(st.held); n > 0 {
		m += fmt.Sprintf("; %d kept in the file until they apply, the first %s", n, st.held[0].why)
	}
	return m
}

// Report is what a start applied from the state file.
type Report struct {
	Records, Lines, Errors int
	Torn                   string // the torn tail dropped, if any
	Snapshot               bool   // the file held a whole configuration
}

// feedMark begins the part of a snapshot that a feed installed: what follows
// is applied as the feed's, for its next session to sweep.
var feedMark = []byte("# urouter state: what zebra gave over FPM, its own again until it has said it all\n")

// Language is the command language as a state file uses it: to replay
// its lines at the start, and to write its snapshots.
type Language interface {
	// Replayer runs the lines of the state file at path, as a forced
	// batch of a saved configuration.
	Replayer(path string) Replayer
	// Save writes the configuration as `save` does, a line at a time.
	Save(emit func(line []byte))
	// SaveFeed writes what feed installed (its routes and nexthops).
	SaveFeed(feed *feed.Applier, emit func(line []byte))
}

// Replayer runs a state file's lines.
type Replayer interface {
	// Run applies line, line n of the file, written at t (zero: now): a
	// route's expires counts from then. Its error, if the line does not
	// apply, says why; one that says Refused() is the router's refusal
	// (a host interface not there), which the start logs and holds, and
	// any other stops the start.
	Run(line []byte, n int, t time.Time) error
	// Adopt gives what the lines after add to feed a (nil: nobody's).
	Adopt(a Adopter)
	// Commit publishes what the lines so far changed.
	Commit()
}

// Adopter is a feed that takes back the routes and nexthops a state file
// kept for it.
type Adopter interface {
	Adopt(table uint32, dst, src netip.Prefix, metric uint32)
	AdoptNexthop(id uint32)
}

// refused is an error of Replayer.Run's that the router refused.
type refused interface{ Refused() bool }

// Loaded is what Read read, for Apply.
type Loaded = loadedState

// Read reads the state file at path (missing: empty) without applying
// it: a file that does not load stops the start here, with its line.
// lang replays it and writes its snapshots.
func Read(path string, lang Language) (*State, *Loaded, error) {
	ld, err := loadState(path)
	if err != nil {
		return nil, nil, err
	}
	st := &State{path: path, lang: lang, clock: time.Now}
	st.idle = sync.NewCond(&st.mu)
	st.Loaded.Records, st.Loaded.Torn = len(ld.records), ld.torn
	st.Loaded.Snapshot = len(ld.records) > 0 && ld.records[0].snapshot
	return st, ld, nil
}

// Path is the file's name.
func (st *State) Path() string { return st.path }

// HasSnapshot reports whether the file held a whole configuration, which
// then stands for the start-up config's (that config made it, or was
// replaced since).
func (st *State) HasSnapshot() bool { return st.Loaded.Snapshot }

// Held is how many lines the start could not apply, which the file keeps.
func (st *State) Held() int { return len(st.held) }

// Unsaved says why a change that runs is not in the file, until a
// snapshot writes it: "" when every change is.
func (st *State) Unsaved() string {
	if !st.dirty.Load() {
		return ""
	}
	m, _ := st.failed.Load().(string)
	return m
}

func (st *State) log(m string) {
	if st.Log != nil {
		st.Log(m)
		return
	}
	fmt.Fprintln(os.Stderr, "urouter daemon:", m)
}

// Apply replays what the file held, then opens it for the changes to come
// (writing a snapshot first if it held none, or only a plain config). fpm,
// if not nil, is the FPM feed's applier, given back the routes it owned. A
// line that does not parse stops it with the file and line; one the
// router refuses (a host interface gone, say) is logged, counted, and
// held: every snapshot keeps it, and status says so. Its errors begin with
// the file's name, as Read's do.
func (st *State) Apply(ld *Loaded, fpm *feed.Applier) error {
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

// Run starts writing the FPM feed's routes into a snapshot when they
// change (the other feeds' come back from their daemons). Call it once
// the feeds run, before the socket is served.
func (st *State) Run() {
	if st.fpm != nil {
		st.stop = make(chan struct{})
		go st.keepFeed(st.stop)
	}
}

// due reports whether the changes since the snapshot have grown to call
// for a compaction.
func (st *State) due() bool {
	n := st.j.sinceSnapshot()
	return n > cmp.Or(st.CompactAt, DefaultCompactAt) && n > 2*st.j.snapshotSize()
}

// take makes st busy with a compaction, unless it is already.
func (st *State) take() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.busy {
		return false
	}
	st.busy = true
	return true
}

// release ends a compaction, and wakes who waits for one to end.
func (st *State) release() {
	st.mu.Lock()
	st.busy = false
	st.mu.Unlock()
	st.idle.Broadcast()
}

// sealed is told that a session's changes are sealed (the gate may be
// free): a repair waiting for it looks again.
func (st *State) sealed() {
	st.mu.Lock() // a repair is in Wait, or has yet to look at the gate
	st.idle.Broadcast()
	st.mu.Unlock()
}

// repair writes a snapshot of what runs once no session holds changes to
// seal (it waits RepairWait for that at most, holding nothing): the file
// then has every change again.
func (st *State) repair() error {
	expired := false // guarded by mu
	timer := time.AfterFunc(cmp.Or(st.RepairWait, DefaultRepairWait), func() {
		st.mu.Lock()
		expired = true
		st.idle.Broadcast()
		st.mu.Unlock()
	})
	defer timer.Stop()
	st.mu.Lock()
	for {
		if !st.busy && st.gate.TryLock() {
			st.busy = true
			st.mu.Unlock()
			err := st.compact()
			st.gate.Unlock()
			st.release()
			if err != nil {
				st.failed.Store(err.Error())
				return fmt.Errorf("state %s: the change is made, not saved: %w", st.path, err)
			}
			st.dirty.Store(false)
			return nil
		}
		if expired {
			st.mu.Unlock()
			return fmt.Errorf("state %s: the change is made, not saved yet: %s (other sessions hold changes to seal)", st.path, st.failed.Load())
		}
		st.idle.Wait()
	}
}

// tryCompact compacts unless a session has changes to seal (the next
// session's seal, or the feed's keeper, tries again); busy is held.
func (st *State) tryCompact() {
	defer st.release()
	if !st.gate.TryLock() {
		return
	}
	defer st.gate.Unlock()
	if err := st.compact(); err != nil {
		st.log(fmt.Sprintf("state %s: %v", st.path, err))
	}
}

// keepFeed writes a snapshot when what the FPM feed installed has changed
// since the last one: zebra's routes are not journaled (they come at a
// feed's rate), but a restart finds them as of the last snapshot and keeps
// them until zebra has said them again.
func (st *State) keepFeed(stop <-chan struct{}) {
	quiet, stale := cmp.Or(st.FeedQuiet, DefaultFeedQuiet), cmp.Or(st.FeedStale, DefaultFeedStale)
	t := time.NewTicker(quiet / 2)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		changed, now := st.fpm.Updated(), st.clock()
		snap := time.Unix(0, st.snapped.Load())
		if !changed.After(snap) || now.Sub(changed) < quiet && now.Sub(snap) < stale {
			continue
		}
		if st.take() {
			st.tryCompact()
		}
	}
}

// compact writes the configuration as the file's snapshot; the gate is
// held (or nobody else has the state yet).
func (st *State) compact() error {
	now := st.clock() // what the feed changes from now on is for the next one
	var buf bytes.Buffer
	buf.Grow(int(st.j.snapshotSize()))
	emit := func(line []byte) { buf.Write(line) }
	st.lang.Save(emit)
	if len(st.held) > 0 {
		buf.Write(heldMark)
		for _, h := range st.held {
			buf.Write(h.text)
		}
	}
	if st.fpm != nil {
		buf.Write(feedMark)
		st.lang.SaveFeed(st.fpm, emit)
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
	st.await(true) // busy for good: no compaction after
	return st.j.close()
}

// Compact writes a snapshot now, once no session holds changes to seal
// and no compaction is under way.
func (st *State) Compact() error {
	st.await(true)
	defer st.release()
	st.gate.Lock()
	defer st.gate.Unlock()
	return st.compact()
}

// Settle waits until no compaction is under way (for the tests).
func (st *State) Settle() { st.await(false) }

// await waits until no compaction is under way, then takes busy if take.
func (st *State) await(take bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for st.busy {
		st.idle.Wait()
	}
	st.busy = take
}

// SnapshotSize is the size of the file's snapshot record (for the tests).
func (st *State) SnapshotSize() int64 { return st.j.snapshotSize() }

// Fail leaves the file as a failed write does (a full disk): it no longer
// vouches for what runs, and the next change is sealed by a snapshot. For
// the tests of that path.
func (st *State) Fail(err error) {
	st.j.mu.Lock()
	st.j.err = err
	st.j.mu.Unlock()
}
