package statefile

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// The state file of urouter daemon --state: every change the daemon
// acknowledges is on disk before the acknowledgement, whenever it is
// killed. The file is text in the config language, so that `urouter
// -batch` (or an editor) reads it as it is, made of records: some command
// lines, then one comment line that seals them,
//
//	#@urouter SEQ KIND UNIXNANO LEN CRC
//
// SEQ counts records from 1; KIND is snapshot (the whole state, always
// record 1 of a compacted file) or change; UNIXNANO is when it was
// written; LEN and CRC (CRC-32C, 8 lowercase hex digits) are those of the
// record's bytes since the seal before it (or the file's start). A record
// is written, seal included, with one write and made durable with fsync
// before append returns, so after a crash the file is its sealed records
// and at most one torn record after them, which loadState drops.
//
// Every file the journal writes begins with journalHeader, inside its
// first record. loadState gives record texts without it (it is the
// file's framing, as the seals are) but line numbers as they are in the
// file: a snapshot's first line is line 2.

// journalHeader opens every state file the journal writes: what tells a
// state file whose first record was torn from a config written by hand.
const journalHeader = "# urouter state: a snapshot and the changes since, each sealed by a #@urouter line\n"

// sealWord begins a seal line. A line beginning with it is meant as a
// seal, whether or not it is a good one.
const sealWord = "#@urouter"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// isSealLine reports whether line (with or without its '\n') is meant as
// a seal.
func isSealLine(line []byte) bool {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.HasPrefix(line, []byte(sealWord)) &&
		(len(line) == len(sealWord) || line[len(sealWord)] == ' ')
}

// sealLine gives the 1-based number of the first line of text that would
// read as a seal, 0 if none does. Such a line cannot go into a record: on
// reading the file back it would end the record there.
func sealLine(text []byte) int {
	found := 0
	_ = lines(text, 1, func(line []byte, n int) error { // the error is the stop
		if isSealLine(line) {
			found = n
			return errFound
		}
		return nil
	})
	return found
}

// errFound stops a walk of lines that has found what it looked for.
var errFound = errors.New("found")

// appendSeal appends to rec, a record's text, the line that seals it.
func appendSeal(rec []byte, seq uint64, snapshot bool, t int64) []byte {
	return sealFor(rec, seq, snapshot, t, int64(len(rec)), crc32.Checksum(rec, castagnoli))
}

// sealFor appends to b the seal of a record of length bytes and this crc.
func sealFor(b []byte, seq uint64, snapshot bool, t, length int64, crc uint32) []byte {
	kind := "change"
	if snapshot {
		kind = "snapshot"
	}
	return fmt.Appendf(b, "%s %d %s %d %d %08x\n", sealWord, seq, kind, t, length, crc)
}

// journal appends sealed records to a state file.
type journal struct {
	mu     sync.Mutex
	path   string
	f      *os.File // O_APPEND: every write goes at the end
	closed bool
	err    error  // set once the journal cannot vouch for its file
	seq    uint64 // the last record's SEQ
	last   int64  // the last record's time
	size   int64  // bytes in the file, all sealed
	snap   int64  // bytes of its snapshot record, seal included; 0 if none
}

// openJournal opens the state file at path, which st was loaded from, to
// append to it (creating it, 0600, if missing). A torn tail is cut off
// first, so the next seal does not count it as part of its record. A
// plain config is first rewritten as a state file of one snapshot.
func openJournal(path string, st *loadedState) (*journal, error) {
	j := &journal{path: path}
	if st.plain {
		if err := j.compact(st.records[0].text); err != nil {
			return nil, err
		}
		return j, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(st.good); err != nil {
		_ = f.Close() // the error to tell is Truncate's
		return nil, err
	}
	// The cut must be on disk before a record goes after it; and the
	// file may be new, its name not yet durable.
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := syncDir(path); err != nil {
		_ = f.Close()
		return nil, err
	}
	j.f, j.size = f, st.good
	if n := len(st.records); n > 0 {
		j.seq, j.last = uint64(n), st.records[n-1].time
		if st.records[0].snapshot {
			j.snap = st.records[0].end
		}
	}
	return j, nil
}

// now is the time for the next record: the wall clock, but never before
// the last record's, so records read in time order even across a clock
// stepped back.
func (j *journal) now() int64 {
	return max(time.Now().UnixNano(), j.last+1)
}

// usable says why the journal cannot write, nil if it can.
func (j *journal) usable() error {
	if j.err != nil {
		return j.err
	}
	if j.closed {
		return fmt.Errorf("%s: %w", j.path, os.ErrClosed)
	}
	return nil
}

// append writes text as a change record and returns once it is on disk.
// Empty text is no change and no record.
func (j *journal) append(chunks ...[]byte) error {
	total := 0
	for _, c := range chunks {
		total += len(c)
	}
	if total == 0 {
		return nil
	}
	for i, c := range chunks {
		if n := sealLine(c); n != 0 {
			for _, p := range chunks[:i] {
				n += bytes.Count(p, []byte("\n"))
			}
			return fmt.Errorf("%s: change line %d reads as a seal", j.path, n)
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return err
	}
	var head, tail []byte
	if j.size == 0 {
		head = []byte(journalHeader)
	}
	for i := len(chunks) - 1; i >= 0; i-- {
		if c := chunks[i]; len(c) > 0 {
			if c[len(c)-1] != '\n' {
				tail = []byte("\n")
			}
			break
		}
	}
	crc := crc32.Update(0, castagnoli, head)
	for _, c := range chunks {
		crc = crc32.Update(crc, castagnoli, c)
	}
	crc = crc32.Update(crc, castagnoli, tail)
	t := j.now()
	length := int64(len(head) + total + len(tail))
	seal := sealFor(nil, j.seq+1, false, t, length, crc)
	// The seal is written last: a crash leaves a prefix of the record at
	// worst, which a load drops. A small record goes in one write; a big
	// one as its chunks are, not copied once more.
	var err error
	if total <= 1<<20 {
		rec := make([]byte, 0, int(length)+len(seal))
		rec = append(rec, head...)
		for _, c := range chunks {
			rec = append(rec, c...)
		}
		_, err = j.f.Write(append(append(rec, tail...), seal...))
	} else {
		for _, b := range append(append([][]byte{head}, chunks...), tail, seal) {
			if _, err = j.f.Write(b); err != nil {
				break
			}
		}
	}
	if err != nil {
		return j.undo(err)
	}
	if err := j.f.Sync(); err != nil {
		return j.undo(err)
	}
	j.seq++
	j.last = t
	j.size += length + int64(len(seal))
	return nil
}

// undo cuts the file back to its sealed records after a failed write or
// fsync, which may have left part of a record: a later record sealed
// after it would not load. It returns err. If the cut fails too, the
// journal refuses every write after.
func (j *journal) undo(err error) error {
	cut := j.f.Truncate(j.size)
	if cut == nil {
		cut = j.f.Sync()
	}
	if cut != nil {
		j.err = fmt.Errorf("%s: journal stopped: %w (and cutting back the record: %v)", j.path, err, cut)
	}
	return err
}

// compact replaces the state file with one snapshot record, the whole
// state; changes appended after follow it. The caller sees that snapshot
// holds every change appended before. The new file is written as
// path.tmp and renamed over path, so a crash leaves the old file or the
// new, whole. It restarts a journal stopped by a failed write.
func (j *journal) compact(snapshot []byte) error {
	if n := sealLine(snapshot); n != 0 {
		return fmt.Errorf("%s: snapshot line %d reads as a seal", j.path, n)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	// A stopped journal may compact: a whole new file is the way back
	// to one it can vouch for.
	if j.closed {
		return j.usable()
	}
	rec := make([]byte, 0, len(journalHeader)+len(snapshot)+1+64)
	rec = append(rec, journalHeader...)
	rec = append(rec, snapshot...)
	if len(snapshot) > 0 && rec[len(rec)-1] != '\n' {
		rec = append(rec, '\n')
	}
	t := j.now()
	rec = appendSeal(rec, 1, true, t)
	tmp := j.path + ".tmp"
	f, err := createTemp(tmp)
	if err != nil {
		return err
	}
	// The file keeps the mode and owner of the one it replaces: a
	// config given as the state file stays the user's.
	if fi, serr := os.Stat(j.path); serr == nil {
		err = keepOwner(f, fi)
	}
	if err == nil {
		_, err = f.Write(rec)
	}
	if err == nil {
		if err = f.Sync(); err == nil {
			err = os.Rename(tmp, j.path)
		}
	}
	if err != nil {
		_ = f.Close() // a file given up
		_ = os.Remove(tmp)
		return err
	}
	// path is the new file now: the old descriptor writes to a file
	// no name reaches.
	if j.f != nil {
		_ = j.f.Close() // all it wrote was synced
	}
	j.f, j.seq, j.last, j.size, j.snap = f, 1, t, int64(len(rec)), int64(len(rec))
	if err := syncDir(j.path); err != nil {
		// Until the rename is durable a crash may bring the old
		// file back, without the changes appended after: none may
		// be acknowledged.
		j.err = fmt.Errorf("%s: journal stopped: %w", j.path, err)
		return err
	}
	j.err = nil
	return nil
}

// createTemp creates the file at tmp for a new snapshot, new: whatever is
// there is removed first (a compaction a crash cut short left it, or
// someone planted it: a symlink to another file would have that file
// overwritten), and O_EXCL|O_NOFOLLOW refuse what comes back between
// the two. O_APPEND: this descriptor, renamed with its file, takes the
// changes after; no reopening that could fail once renamed.
func createTemp(tmp string) (*os.File, error) {
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(tmp, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
}

// keepOwner gives f the permissions and owner of fi (the file it
// replaces). The owner is given only where the daemon may (root).
func keepOwner(f *os.File, fi fs.FileInfo) error {
	if err := f.Chmod(fi.Mode().Perm()); err != nil {
		return err
	}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		return f.Chown(int(sys.Uid), int(sys.Gid))
	}
	return nil
}

// syncDir makes the entries of the directory holding path durable: a
// new file's name, a rename.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// sinceSnapshot is the bytes appended after the snapshot record (the
// whole file if it has none): with snapshotSize, what says when to
// compact.
func (j *journal) sinceSnapshot() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.size - j.snap
}

// snapshotSize is the bytes of the snapshot record, seal included.
func (j *journal) snapshotSize() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.snap
}

// close closes the file; append and compact fail after.
func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}
