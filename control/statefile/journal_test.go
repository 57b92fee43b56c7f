package statefile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The state the journal tests start from: a snapshot of two lines and
// three changes, one of them without its final newline. In the file:
//
//	1     header
//	2-3   snapshot, 4 its seal
//	5     change 1, 6 its seal
//	7-8   change 2, 9 its seal
//	10    change 3, 11 its seal
var (
	journalSnap    = "link set dev eth0 up\nroute add 2001:db8::/64 dev eth0\n"
	journalChanges = []string{
		"route add 2001:db8:1::/64 dev eth0\n",
		"route del 2001:db8::/64\nroute add 2001:db8:2::/64 dev eth1", // no final newline
		"address add 2001:db8::1/64 dev eth0\n",
	}
	journalWant = []journalRecord{
		{text: []byte(journalSnap), line: 2, snapshot: true},
		{text: []byte(journalChanges[0]), line: 5},
		{text: []byte(journalChanges[1] + "\n"), line: 7},
		{text: []byte(journalChanges[2]), line: 10},
	}
)

// writeJournal makes the state file of journalSnap and journalChanges
// in a new directory and returns its path and contents.
func writeJournal(t *testing.T) (string, []byte) {
	t.Helper()
	return writeJournalOf(t, journalChanges...)
}

// writeJournalOf is a state file of journalSnap and these changes.
func writeJournalOf(t *testing.T, changes ...string) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state")
	j, err := openJournal(path, &loadedState{})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.compact([]byte(journalSnap)); err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if err := j.append([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// mustLoad loads path, failing the test on an error.
func mustLoad(t *testing.T, path string) *loadedState {
	t.Helper()
	st, err := loadState(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// sameRecords checks records' texts, lines and kinds against want.
func sameRecords(t *testing.T, got, want []journalRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		w := want[i]
		if !bytes.Equal(r.text, w.text) || r.line != w.line || r.snapshot != w.snapshot {
			t.Errorf("record %d: %q line %d snapshot %v, want %q line %d snapshot %v",
				i+1, r.text, r.line, r.snapshot, w.text, w.line, w.snapshot)
		}
	}
}

// closeAtEnd closes j when the test ends.
func closeAtEnd(t *testing.T, j *journal) {
	t.Cleanup(func() {
		if err := j.close(); err != nil {
			t.Error(err)
		}
	})
}

// appendOne opens the journal of st at path, appends text and closes it.
func appendOne(t *testing.T, path string, st *loadedState, text string) {
	t.Helper()
	j, err := openJournal(path, st)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.append([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
}

func TestJournalRoundTrip(t *testing.T) {
	before := time.Now().UnixNano()
	path, data := writeJournal(t)
	after := time.Now().UnixNano()
	if !bytes.HasPrefix(data, []byte(journalHeader)) {
		t.Fatalf("file begins %q, want the header", data[:min(len(data), 40)])
	}
	st := mustLoad(t, path)
	if st.plain || st.torn != "" || st.good != int64(len(data)) {
		t.Fatalf("plain %v torn %q good %d, want false, \"\", %d", st.plain, st.torn, st.good, len(data))
	}
	sameRecords(t, st.records, journalWant)
	var last int64
	for i, r := range st.records {
		if r.time <= last || r.time < before || r.time > after+int64(len(st.records)) {
			t.Errorf("record %d: time %d, want after %d, in [%d, %d]", i+1, r.time, last, before, after)
		}
		last = r.time
	}
	if st.records[3].end != int64(len(data)) {
		t.Errorf("last record ends at %d, want %d", st.records[3].end, len(data))
	}

	// The sizes that decide compaction, as reopened.
	j, err := openJournal(path, st)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, j)
	snap := int64(0) // the snapshot's seal is line 4
	for range 4 {
		snap += int64(bytes.IndexByte(data[snap:], '\n') + 1)
	}
	if got := j.snapshotSize(); got != snap {
		t.Errorf("snapshotSize %d, want %d", got, snap)
	}
	if got := j.sinceSnapshot(); got != int64(len(data))-snap {
		t.Errorf("sinceSnapshot %d, want %d", got, int64(len(data))-snap)
	}
}

func TestJournalEmpty(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing"), empty} {
		st := mustLoad(t, path)
		if len(st.records) != 0 || st.good != 0 || st.torn != "" || st.plain {
			t.Errorf("%s: %+v, want an empty state", path, st)
		}
	}
	// Empty text is no record; the first change writes the header.
	path := filepath.Join(dir, "missing")
	j, err := openJournal(path, mustLoad(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.append(nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("after an empty append: %v, %v; want an empty file, 0600", fi, err)
	}
	if err := j.append([]byte("route add 2001:db8::/64 dev eth0")); err != nil {
		t.Fatal(err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	if err := j.append([]byte("route add 2001:db8:1::/64 dev eth0\n")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("append after close: %v, want %v", err, os.ErrClosed)
	}
	st := mustLoad(t, path)
	sameRecords(t, st.records, []journalRecord{{text: []byte("route add 2001:db8::/64 dev eth0\n"), line: 2}})
	if j.snapshotSize() != 0 || j.sinceSnapshot() != st.good {
		t.Errorf("no snapshot: snapshotSize %d sinceSnapshot %d, want 0, %d", j.snapshotSize(), j.sinceSnapshot(), st.good)
	}
}

// TestJournalPlain: a config with no seal is one snapshot, and becomes a
// state file when the journal opens it.
func TestJournalPlain(t *testing.T) {
	for _, text := range []string{
		"# by hand\nlink set dev eth0 up\nroute add 2001:db8::/64 dev eth0\n",
		"route add 2001:db8::/64 dev eth0", // no final newline
	} {
		p := filepath.Join(t.TempDir(), "state")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		st := mustLoad(t, p)
		if !st.plain || st.torn != "" || st.good != int64(len(text)) {
			t.Fatalf("%q: plain %v torn %q good %d, want true, \"\", %d", text, st.plain, st.torn, st.good, len(text))
		}
		sameRecords(t, st.records, []journalRecord{{text: []byte(text), line: 1, snapshot: true}})
		if st.records[0].time != 0 {
			t.Errorf("%q: time %d, want 0", text, st.records[0].time)
		}

		appendOne(t, p, st, "route add 2001:db8:1::/64 dev eth0\n")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte(journalHeader)) {
			t.Errorf("%q: converted file begins %q, want the header", text, data[:min(len(data), 40)])
		}
		if _, err := os.Stat(p + ".tmp"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s.tmp left: %v", p, err)
		}
		st = mustLoad(t, p)
		if st.plain || st.torn != "" {
			t.Errorf("%q converted: plain %v torn %q", text, st.plain, st.torn)
		}
		snap := strings.TrimSuffix(text, "\n") + "\n"
		sameRecords(t, st.records, []journalRecord{
			{text: []byte(snap), line: 2, snapshot: true},
			{text: []byte("route add 2001:db8:1::/64 dev eth0\n"), line: 3 + strings.Count(snap, "\n")},
		})
	}
}

// TestJournalCompact: a compaction leaves one snapshot, and the changes
// after it continue from record 2.
func TestJournalCompact(t *testing.T) {
	path, _ := writeJournal(t)
	j, err := openJournal(path, mustLoad(t, path))
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, j)
	if j.sinceSnapshot() == 0 {
		t.Fatal("sinceSnapshot 0 with three changes")
	}
	if err := j.compact([]byte("route add 2001:db8::/48 dev eth0\n")); err != nil {
		t.Fatal(err)
	}
	if j.sinceSnapshot() != 0 {
		t.Errorf("sinceSnapshot %d after compact, want 0", j.sinceSnapshot())
	}
	if err := j.append([]byte("route add 2001:db8:1::/64 dev eth0\n")); err != nil {
		t.Fatal(err)
	}
	st := mustLoad(t, path)
	sameRecords(t, st.records, []journalRecord{
		{text: []byte("route add 2001:db8::/48 dev eth0\n"), line: 2, snapshot: true},
		{text: []byte("route add 2001:db8:1::/64 dev eth0\n"), line: 4},
	})
	if j.snapshotSize() != st.records[0].end || j.sinceSnapshot() != st.good-st.records[0].end {
		t.Errorf("snapshotSize %d sinceSnapshot %d, want %d, %d", j.snapshotSize(), j.sinceSnapshot(), st.records[0].end, st.good-st.records[0].end)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("compacted file: %v, %v; want 0600", fi, err)
	}
}

// TestJournalConcurrent: appends from many goroutines each land whole,
// one record each.
func TestJournalConcurrent(t *testing.T) {
	const writers, each = 8, 200
	path := filepath.Join(t.TempDir(), "state")
	j, err := openJournal(path, mustLoad(t, path))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := j.append([]byte(journalChange(w, i))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	st := mustLoad(t, path)
	if len(st.records) != writers*each || st.torn != "" {
		t.Fatalf("%d records torn %q, want %d", len(st.records), st.torn, writers*each)
	}
	want := make(map[string]bool, writers*each)
	for w := range writers {
		for i := range each {
			want[journalChange(w, i)] = true
		}
	}
	for _, r := range st.records {
		if !want[string(r.text)] {
			t.Fatalf("record at line %d: %q, not one whole change, or seen twice", r.line, r.text)
		}
		delete(want, string(r.text))
	}
}

// journalChange is writer w's change i in TestJournalConcurrent.
func journalChange(w, i int) string {
	return fmt.Sprintf("route add 2001:db8:%x:%x::/64 dev eth%d\nroute del 2001:db8:%x:%x::/64\n", w, i, w, w, i)
}
