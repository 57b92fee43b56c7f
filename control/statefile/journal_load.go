package statefile

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// Reading a state file back: its records, checked against their seals,
// and what a crash may have left after them.

// journalRecord is one sealed record of a state file.
type journalRecord struct {
	text     []byte // its command lines (record 1's without journalHeader)
	line     int    // 1-based file line of text's first line
	time     int64  // UnixNano from its seal
	snapshot bool
	end      int64 // byte offset just past its seal
}

// loadedState is what a state file held.
type loadedState struct {
	records []journalRecord
	good    int64  // byte offset just past the last good seal: where appends go
	torn    string // "" or, for the log, what was dropped at the end and why
	// plain: the file has content but no seal line at all, a config
	// written by hand or by `urouter save`. records holds it as one
	// snapshot record (line 1, time 0) and good is the file's size.
	plain bool
}

// seal is a parsed seal line.
type seal struct {
	seq      uint64
	snapshot bool
	time     int64
	length   int64
	crc      uint32
}

// parseSeal parses a seal line, its '\n' included: a seal cut before its
// '\n' is a torn write, however well it reads.
func parseSeal(line []byte) (seal, bool) {
	line, ok := bytes.CutSuffix(line, []byte("\n"))
	if !ok {
		return seal{}, false
	}
	f := bytes.Split(line, []byte(" "))
	if len(f) != 6 || string(f[0]) != sealWord {
		return seal{}, false
	}
	var s seal
	var err error
	if s.seq, err = strconv.ParseUint(string(f[1]), 10, 64); err != nil || s.seq == 0 {
		return seal{}, false
	}
	switch string(f[2]) {
	case "snapshot":
		s.snapshot = true
	case "change":
	default:
		return seal{}, false
	}
	if s.time, err = strconv.ParseInt(string(f[3]), 10, 64); err != nil {
		return seal{}, false
	}
	n, err := strconv.ParseUint(string(f[4]), 10, 63)
	if err != nil {
		return seal{}, false
	}
	s.length = int64(n)
	if len(f[5]) != 8 || bytes.ContainsFunc(f[5], func(r rune) bool {
		return (r < '0' || r > '9') && (r < 'a' || r > 'f')
	}) {
		return seal{}, false
	}
	c, _ := strconv.ParseUint(string(f[5]), 16, 32) // 8 hex digits: cannot fail
	s.crc = uint32(c)
	return s, true
}

// checkSeal checks the seal line data[start:end] against the bytes since
// the last good seal, data[from:start]. It gives why not, "" if it is
// good.
func checkSeal(data []byte, from, start, end int, rec uint64) (seal, string) {
	s, ok := parseSeal(data[start:end])
	switch {
	case !ok && data[end-1] != '\n':
		return s, fmt.Sprintf("record %d's seal is cut short", rec)
	case !ok:
		return s, fmt.Sprintf("record %d's seal does not parse", rec)
	case s.length != int64(start-from):
		return s, fmt.Sprintf("record %d does not match its seal (length)", rec)
	case crc32.Checksum(data[from:start], castagnoli) != s.crc:
		return s, fmt.Sprintf("record %d does not match its seal (crc)", rec)
	}
	return s, ""
}

// intactAfter reports whether a seal line at or after offset start, in
// data whose last good seal ends at from, seals bytes of its own whole
// (some: an empty record proves nothing):
// some record past the bad seal survived, so what lies between is damage,
// not a write torn by a crash (that only ever leaves one record, the
// last, without its seal).
func intactAfter(data []byte, from, start int) bool {
	for off := start; off < len(data); {
		end := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			end = off + i + 1
		}
		if isSealLine(data[off:end]) {
			if s, ok := parseSeal(data[off:end]); ok && s.length > 0 && s.length <= int64(off-from) {
				b := off - int(s.length)
				if (b == 0 || data[b-1] == '\n') && crc32.Checksum(data[b:off], castagnoli) == s.crc {
					return true
				}
			}
		}
		off = end
	}
	return false
}

// oursTorn reports whether data, with no good seal, is the journal's own
// first record cut short or overwritten: it begins with journalHeader,
// or with a piece of it, or with a NUL byte (blocks never written).
func oursTorn(data []byte) bool {
	first := data
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		first = data[:i+1]
	}
	return data[0] == 0 || bytes.HasPrefix([]byte(journalHeader), first)
}

// loadState reads the state file at path. A missing or empty file is an
// empty state. A torn record at the end is dropped (st.torn says so); a
// bad record with a good one after it, or a bad first record (always a
// snapshot), is damage no crash leaves, and an error naming the bad
// record's first line in the file (record 1's is the header's).
func loadState(path string) (*loadedState, error) {
	data, err := readRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &loadedState{}, nil
	}
	if err != nil {
		return nil, err
	}
	st := &loadedState{}
	from, fromLine := 0, 1 // just past the last good seal, and its line
	sawSeal := false
	tornWhy := "no seal"
	line := 1
walk:
	for off := 0; off < len(data); line++ {
		start := off
		off = len(data)
		if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
			off = start + i + 1
		}
		if !isSealLine(data[start:off]) {
			continue
		}
		sawSeal = true
		rec := uint64(len(st.records) + 1)
		s, why := checkSeal(data, from, start, off, rec)
		switch {
		case why != "" && (s.snapshot || intactAfter(data, from, start)):
			// A snapshot is written whole, as a new file renamed
			// over the old (compact): a seal that reads as one but
			// does not match was damaged after, not torn, even with
			// nothing after it (dropped, the configuration would go).
			return nil, fmt.Errorf("%s:%d: %s", path, fromLine, why)
		case why != "":
			tornWhy = why
			break walk
		case s.seq != rec:
			// well sealed, in the wrong place: records were
			// spliced, not torn
			return nil, fmt.Errorf("%s:%d: record %d is sealed as record %d", path, fromLine, rec, s.seq)
		case s.snapshot && rec != 1:
			return nil, fmt.Errorf("%s:%d: record %d is a snapshot: only a file's first record is", path, fromLine, rec)
		}
		r := journalRecord{text: data[from:start], line: fromLine, time: s.time, snapshot: s.snapshot, end: int64(off)}
		if rec == 1 {
			if t, ok := bytes.CutPrefix(r.text, []byte(journalHeader)); ok {
				r.text, r.line = t, r.line+1
			}
		}
		st.records = append(st.records, r)
		from, fromLine = off, line+1
	}
	st.good = int64(from)
	if from == len(data) {
		return st, nil
	}
	if len(st.records) == 0 {
		if oursTorn(data) {
			// The first record is a snapshot, written whole to a new
			// file and renamed into place (compact): no crash tears
			// it. Dropped, the whole configuration would go.
			return nil, fmt.Errorf("%s:1: the snapshot is damaged (%s, %d bytes): snapshots are written whole, so no crash leaves one torn", path, tornWhy, len(data))
		}
		if sawSeal {
			// not a file the journal wrote: dropping it as torn
			// would wipe someone's config
			return nil, fmt.Errorf("%s:1: not a state file (no header) but it has a %s line", path, sealWord)
		}
		st.plain = true
		st.good = int64(len(data))
		st.records = []journalRecord{{text: data, line: 1, snapshot: true, end: st.good}}
		return st, nil
	}
	st.torn = fmt.Sprintf("dropped a torn record at line %d (%d bytes): %s", fromLine, len(data)-from, tornWhy)
	return st, nil
}

// readRegular reads the regular file at path. Anything else is refused
// before it is read: opening a FIFO for reading would wait for a writer
// (the daemon would never start, nor answer), and a device never ends.
func readRegular(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, fileKind(fi.Mode()))
	}
	var b bytes.Buffer
	b.Grow(int(fi.Size()) + bytes.MinRead)
	_, err = b.ReadFrom(f)
	return b.Bytes(), err
}

// fileKind names the kind of a file that is not a regular one.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}
