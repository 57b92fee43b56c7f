package statefile

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"urouter/feed"
)

// lang is a command language that runs nothing and saves what it is told.
type lang struct{ saved string }

func (l *lang) Replayer(string) Replayer { return nopReplayer{} }

func (l *lang) Save(emit func([]byte)) { emit([]byte(l.saved)) }

func (l *lang) SaveFeed(*feed.Applier, func([]byte)) {}

type nopReplayer struct{}

func (nopReplayer) Run([]byte, int, time.Time) error { return nil }
func (nopReplayer) Adopt(Adopter)                    {}
func (nopReplayer) Commit()                          {}

// TestRepairWaitsForSeal: a change whose record failed waits for the
// session holding changes to seal them, woken when it does (not polled,
// not for RepairWait), and is then written by a snapshot; with nobody
// sealing, it gives up after RepairWait and says so.
func TestRepairWaitsForSeal(t *testing.T) {
	l := &lang{saved: "route add 2001:db8::/64 dev d0\n"}
	st, ld, err := Read(filepath.Join(t.TempDir(), "state"), l)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(ld, nil); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	st.RepairWait = time.Hour
	holder, failing := st.Recorder(), st.Recorder()
	holder.Enter()
	holder.Record([]byte("route add 2001:db8:1::/64 dev d0"))
	st.Fail(errors.New("no space left on device (the test's)"))
	failing.Enter()
	failing.Record([]byte("route add 2001:db8:2::/64 dev d0"))
	done := make(chan error, 1)
	go func() { done <- failing.Seal() }()
	select {
	case err := <-done:
		t.Fatalf("the failed record's session did not wait for the holder: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := holder.Seal(); err != nil { // sealed by the snapshot the file needs
		t.Errorf("the holder's seal after a failed record: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the repair after the holder sealed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the repair was not woken by the holder's seal")
	}
	if st.Unsaved() != "" {
		t.Errorf("after the repair: %q", st.Unsaved())
	}

	// nobody seals: the repair gives up after RepairWait
	st.RepairWait = 20 * time.Millisecond
	holder.Enter()
	st.Fail(errors.New("no space left on device (the test's)"))
	failing.Enter()
	failing.Record([]byte("route add 2001:db8:3::/64 dev d0"))
	if err := failing.Seal(); err == nil || !strings.Contains(err.Error(), "not saved yet") {
		t.Errorf("a repair nobody lets run: %v", err)
	}
	_ = holder.Seal()
}
