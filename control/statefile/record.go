package statefile

import (
	"strconv"
	"time"
)

// Recorder is one session's part of the state file: the lines that
// changed something, sealed as one record when the session ends (or in
// parts, when it waits on its client while a compaction is due).
type Recorder struct {
	st      *State
	pending [][]byte // chunks of whole lines
	entered bool     // the session holds the gate
	sealErr error    // a seal of part of its changes failed (see SealIdle)
	lastSeq uint64   // the number of its last line in the run
}

// Recorder is a new session's.
func (st *State) Recorder() *Recorder { return &Recorder{st: st} }

// pendingChunk is the size of a session's chunks of lines to seal.
const pendingChunk = 256 << 10

// Enter is called before the session's first change: it holds the gate
// until the session's changes are sealed.
func (r *Recorder) Enter() {
	if !r.entered {
		r.st.gate.RLock()
		r.entered = true
	}
}

// Holding reports whether the session has changes not sealed yet.
func (r *Recorder) Holding() bool { return r.entered }

// SealEvery is how often a session holding changes and waiting on its
// client calls SealIdle.
func (r *Recorder) SealEvery() time.Duration { return r.st.SealEvery() }

// Record keeps a line that changed something, written as parts one after
// the other, for the session's record. The lines go into chunks of whole
// lines, so that a batch of a full table is not copied as it grows.
func (r *Recorder) Record(parts ...[]byte) {
	need := len(seqWord) + 21 // a #@seq mark, '\n'
	for _, p := range parts {
		need += len(p)
	}
	if n := len(r.pending); n == 0 || cap(r.pending[n-1])-len(r.pending[n-1]) < need {
		r.pending = append(r.pending, make([]byte, 0, max(pendingChunk, need)))
	}
	c := &r.pending[len(r.pending)-1]
	// the line's number in the run, said when another session's came
	// between: a replay applies them as they ran
	seq := r.st.seq.Add(1)
	if r.lastSeq == 0 || seq != r.lastSeq+1 {
		*c = strconv.AppendUint(append(*c, seqWord...), seq, 10)
		*c = append(*c, '\n')
	}
	r.lastSeq = seq
	for _, p := range parts {
		*c = append(*c, p...)
	}
	*c = append(*c, '\n')
}

// Seal seals what the session changed, on disk before it is told its
// status; its error (or that of a part sealed before) is for its client.
func (r *Recorder) Seal() error {
	err := r.leave()
	if err == nil {
		err = r.sealErr
	}
	return err
}

// leave seals the changes pending and lets the gate go.
func (r *Recorder) leave() error {
	if !r.entered {
		return nil
	}
	st := r.st
	var err error
	if !st.dirty.Load() {
		err = st.j.append(r.pending...)
	}
	r.pending, r.entered = nil, false
	st.gate.RUnlock()
	st.sealed()
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
	if st.due() && st.take() {
		go st.tryCompact()
	}
	return nil
}

// SealIdle seals what the session has changed so far, when it waits on
// its client with no transaction open and a compaction is due: a session
// that holds changes and waits (a batch typed by hand, a client that
// stopped) holds every compaction off, and the file would grow with the
// other sessions' changes without bound (25.7 MB while one held a single
// change). Its lines after are its next record: its batch is in the file
// in the parts it ran in, which is how the router has it.
func (r *Recorder) SealIdle() {
	if !r.entered || !r.st.due() {
		return
	}
	if err := r.leave(); err != nil && r.sealErr == nil {
		r.sealErr = err
	}
}
