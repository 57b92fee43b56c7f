package statefile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A state file damaged: cut, flipped, sealed out of place, or torn in its
// first record, read back.

// TestJournalTornTail cuts the file at every byte of the last record: each
// cut loads as the three records before, and takes an append after.
func TestJournalTornTail(t *testing.T) {
	full, data := writeJournal(t)
	end3 := mustLoad(t, full).records[2].end
	path := filepath.Join(t.TempDir(), "state")
	for off := end3; off < int64(len(data)); off++ {
		if err := os.WriteFile(path, data[:off], 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := loadState(path)
		if err != nil {
			t.Fatalf("cut at %d: %v", off, err)
		}
		sameRecords(t, st.records, journalWant[:3])
		want := ""
		if off > end3 {
			want = fmt.Sprintf("dropped a torn record at line 10 (%d bytes): ", off-end3)
		}
		if st.good != end3 || !strings.HasPrefix(st.torn, want) || (want == "") != (st.torn == "") {
			t.Fatalf("cut at %d: good %d torn %q, want %d %q...", off, st.good, st.torn, end3, want)
		}
		appendOne(t, path, st, "route add 2001:db8:9::/64 dev eth2\n")
		st = mustLoad(t, path)
		if st.torn != "" {
			t.Fatalf("cut at %d, appended: torn %q", off, st.torn)
		}
		sameRecords(t, st.records, append(journalWant[:3:3], journalRecord{text: []byte("route add 2001:db8:9::/64 dev eth2\n"), line: 10}))
	}
}

// TestJournalDamage puts garbage in and flips bytes: damage with a good
// record after it is an error naming the bad record's first line; in
// the last record, or after it, it is a torn tail.
func TestJournalDamage(t *testing.T) {
	path, data := writeJournal(t)
	st := mustLoad(t, path)
	rec := func(n int) int { // offset where record n (1-based) begins
		if n == 1 {
			return 0
		}
		return int(st.records[n-2].end)
	}
	sealOf := func(n int) int { // offset of record n's seal line
		return bytes.LastIndex(data[:st.records[n-1].end-1], []byte("\n")) + 1
	}
	insert := func(at int) func([]byte) []byte {
		return func(b []byte) []byte {
			return append(b[:at:at], append([]byte("bogus garbage\n"), b[at:]...)...)
		}
	}
	flip := func(at int) func([]byte) []byte {
		return func(b []byte) []byte { b[at] ^= 1; return b }
	}
	digit := func(at int) func([]byte) []byte { // another hex digit, so the seal still parses
		return func(b []byte) []byte {
			if b[at] == '0' {
				b[at] = '1'
			} else {
				b[at] = '0'
			}
			return b
		}
	}
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
		line   int    // of the error; 0: torn
		why    string // in the error or the torn sentence
		keep   int    // records left when torn
	}{
		{"garbage after the header", insert(len(journalHeader)), 1, "record 1 does not match its seal (length)", 0},
		{"garbage before record 2", insert(rec(2)), 5, "record 2 does not match its seal (length)", 0},
		{"garbage before record 2's seal", insert(sealOf(2)), 5, "record 2 does not match its seal (length)", 0},
		{"garbage inside record 3", insert(rec(3) + len("route del 2001:db8::/64\n")), 7, "(length)", 0},
		{"garbage before record 4", insert(rec(4)), 10, "record 4 does not match its seal (length)", 0},
		{"garbage inside record 4", insert(sealOf(4)), 0, "record 4 does not match its seal (length)", 3},
		{"garbage after the last seal", insert(len(data)), 0, "no seal", 4},
		{"flip in record 1", flip(len(journalHeader) + 3), 1, "record 1 does not match its seal (crc)", 0},
		{"flip in record 2", flip(rec(2) + 2), 5, "record 2 does not match its seal (crc)", 0},
		{"flip in record 3's crc", digit(int(st.records[2].end) - 3), 7, "record 3 does not match its seal (crc)", 0},
		{"flip in record 3's seal word", flip(sealOf(3) + 1), 7, "(length)", 0},
		{"flip in record 4", flip(rec(4) + 2), 0, "record 4 does not match its seal (crc)", 3},
		{"flip in record 4's crc", digit(len(data) - 2), 0, "record 4 does not match its seal (crc)", 3},
		{"flip in record 4's length", flip(bytes.LastIndexByte(data, ' ') - 1), 0, "record 4 does not match its seal (length)", 3},
		{"record 4's seal cut short", func(b []byte) []byte { return b[:len(b)-1] }, 0, "record 4's seal is cut short", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "state")
			if err := os.WriteFile(p, tc.damage(bytes.Clone(data)), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := loadState(p)
			if tc.line != 0 {
				prefix := fmt.Sprintf("%s:%d: ", p, tc.line)
				if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.why) {
					t.Fatalf("error %v, want %s...%s", err, prefix, tc.why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, got.records, journalWant[:tc.keep])
			if !strings.HasSuffix(got.torn, ": "+tc.why) {
				t.Errorf("torn %q, want ...: %s", got.torn, tc.why)
			}
		})
	}
}

// TestJournalBadSeals: records sealed well but out of place, and seals in
// a file the journal did not write, are errors, never torn.
func TestJournalBadSeals(t *testing.T) {
	sealed := func(seq uint64, snapshot bool, text string) string {
		return string(appendSeal([]byte(text), seq, snapshot, 1))
	}
	a, b := "route add 2001:db8::/64 dev eth0\n", "route add 2001:db8:1::/64 dev eth0\n"
	for _, tc := range []struct {
		name, file, want string
	}{
		{"a gap", sealed(1, true, journalHeader+a) + sealed(3, false, b), ":4: record 2 is sealed as record 3"},
		{"a repeat", sealed(1, true, journalHeader+a) + sealed(1, false, b), ":4: record 2 is sealed as record 1"},
		{"a second snapshot", sealed(1, true, journalHeader+a) + sealed(2, true, b), ":4: record 2 is a snapshot"},
		{"a seal without the header", a + "#@urouter 1 change 1 0 00000000\n", ":1: not a state file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "state")
			if err := os.WriteFile(p, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := loadState(p); err == nil || !strings.HasPrefix(err.Error(), p+tc.want) {
				t.Errorf("error %v, want %s%s...", err, p, tc.want)
			}
		})
	}
	// A line of a change that would read as a seal would end the
	// record there on loading: refused.
	j, err := openJournal(filepath.Join(t.TempDir(), "state"), &loadedState{})
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, j)
	if err := j.append([]byte(a + "#@urouter 2 change 1 2 3\n")); err == nil || !strings.Contains(err.Error(), "line 2 reads as a seal") {
		t.Errorf("a seal line in a change: %v, want refused", err)
	}
	if err := j.compact([]byte("#@urouter\n")); err == nil {
		t.Errorf("a seal line in a snapshot: no error")
	}
}

// TestJournalLongLine: a megabyte line after the last seal, whole or cut,
// is a torn tail, read in one pass.
func TestJournalLongLine(t *testing.T) {
	_, data := writeJournal(t)
	long := bytes.Repeat([]byte("a"), 1<<20)
	for _, tc := range []struct {
		name string
		tail []byte
	}{
		{"cut", long},
		{"whole", append(bytes.Clone(long), '\n')},
		{"a seal", append([]byte("#@urouter 5 change 1 2 "), long...)},
		{"a long record", append(append(bytes.Clone(long), '\n'), "#@urouter 5 change 1 2"...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "state")
			if err := os.WriteFile(p, append(bytes.Clone(data), tc.tail...), 0o600); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			st, err := loadState(p)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("loading took %v", d)
			}
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, st.records, journalWant)
			want := fmt.Sprintf("dropped a torn record at line 12 (%d bytes): ", len(tc.tail))
			if st.good != int64(len(data)) || !strings.HasPrefix(st.torn, want) {
				t.Errorf("good %d torn %q, want %d %q...", st.good, st.torn, len(data), want)
			}
		})
	}
}

// TestJournalFirstTorn: a first record cut anywhere, or blocks of zeros,
// is damage: the daemon writes its first record as a snapshot, whole, to
// a new file renamed into place, so no crash tears it. The load stops and
// names line 1; taken for a crash, the file would be an empty router's.
func TestJournalFirstTorn(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	j, err := openJournal(full, &loadedState{})
	if err != nil {
		t.Fatal(err)
	}
	snap := strings.Repeat("route add 2001:db8::/64 dev eth0\n", 64)
	if err := j.compact([]byte(snap)); err != nil {
		t.Fatal(err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	cuts := [][]byte{make([]byte, 4096)} // blocks never written
	for off := 1; off < len(data); off++ {
		cuts = append(cuts, data[:off])
	}
	path := filepath.Join(dir, "state")
	for _, cut := range cuts {
		if err := os.WriteFile(path, cut, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := loadState(path)
		if want := path + ":1: the snapshot is damaged ("; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("cut at %d of %d bytes: %v, want %s...", len(cut), len(data), err, want)
		}
	}
}

// TestJournalSnapshotDamage: a snapshot alone that does not match its
// seal, or whose seal is cut short, is an error naming line 1, not a torn
// tail to drop (compact writes it whole: dropped, the whole configuration
// would go).
func TestJournalSnapshotDamage(t *testing.T) {
	path, data := writeJournalOf(t)
	at := len(journalHeader) + 3
	for name, c := range map[string]struct {
		b   []byte
		why string
	}{
		"a line inserted": {append(data[:at:at], append([]byte("bogus garbage\n"), data[at:]...)...), "record 1 does not match its seal (length)"},
		"a byte flipped":  {append(append(data[:at:at], data[at]^0x20), data[at+1:]...), "record 1 does not match its seal (crc)"},
	} {
		if err := os.WriteFile(path, c.b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadState(path); err == nil || err.Error() != path+":1: "+c.why {
			t.Errorf("%s: %v, want %s:1: %s", name, err, path, c.why)
		}
	}
	if err := os.WriteFile(path, data[:len(data)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadState(path); err == nil || !strings.Contains(err.Error(), ":1: the snapshot is damaged (record 1's seal is cut short") {
		t.Errorf("its seal cut short: %v", err)
	}
}
