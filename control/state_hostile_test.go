package control

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"urouter/router"
)

// TestStateHeldLines: lines of a config given as the state file that the
// router refuses at the start (a device not there) are kept by every
// snapshot, the first one that converts the config among them, and apply
// at a start where they can; the file keeps its mode.
func TestStateHeldLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "urouter.conf")
	conf := "link add d7 type dummy\nlink set d7 up\n" +
		"route add 2001:db8:5::/64 dev gone0\n" +
		"-6 route add 2001:db8:6::/64 dev d7\n" +
		"address add 2001:db8:7::1/64 dev gone0\n"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	st := loadInto(t, newTestRouter(t), path)
	if st.Loaded.Errors != 2 || len(st.held) != 2 {
		t.Fatalf("%d errors, %d held, want 2 and 2", st.Loaded.Errors, len(st.held))
	}
	if why := st.failedWhy(); !strings.Contains(why, "2 kept in the file until they apply, the first "+path+":3: ") {
		t.Errorf("status's reason: %s", why)
	}
	kept := func(when string) {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []string{"\nroute add 2001:db8:5::/64 dev gone0\n", "\naddress add 2001:db8:7::1/64 dev gone0\n"} {
			if !bytes.Contains(data, []byte(l)) {
				t.Errorf("%s: the file lost %q:\n%s", when, l, data)
			}
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: the file's mode: %v %v, want 0644", when, fi.Mode(), err)
		}
	}
	kept("converted at the start")
	st.gate.Lock()
	err := st.compact()
	st.gate.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	kept("a compaction")
	_ = st.Close()

	// a router where gone0 is: they apply, and nothing is held
	r := router.New()
	if _, e, code := run(r, options{batch: true}, "link add gone0 index 50 type dummy", "link set gone0 up"); code != 0 {
		t.Fatal(e)
	}
	st = loadInto(t, r, path)
	if st.Loaded.Errors != 0 || len(st.held) != 0 {
		t.Fatalf("where gone0 is: %d errors, %d held", st.Loaded.Errors, len(st.held))
	}
	_ = st.Close()
	got := saved(r)
	for _, l := range []string{"route add 2001:db8:5::/64 dev gone0", "address add 2001:db8:7::1/64 dev gone0", "route add 2001:db8:6::/64 dev d7"} {
		if !strings.Contains(got, l) {
			t.Errorf("%q not applied:\n%s", l, got)
		}
	}
}

// TestStatePlantedTemp: a symlink planted where a compaction writes its
// new file (a state directory others may write) is not followed: the file
// it points to is left as it was.
func TestStatePlantedTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "urouter.state")
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("link add d7 type dummy\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	st := loadInto(t, newTestRouter(t), path) // a plain config: compacted
	defer func() { _ = st.Close() }()
	if got, _ := os.ReadFile(victim); string(got) != "precious\n" {
		t.Errorf("the planted link's target was written: %q", got)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the state is not a regular file: %v %v", fi.Mode(), err)
	}
	if got := reloaded(t, path); !strings.Contains(got, "link add d7 ") {
		t.Errorf("the state lost d7:\n%s", got)
	}
}

// TestStateNotRegular: a state file that is a FIFO (or a directory) stops
// the start at once, naming what it is, instead of waiting in open() for
// a writer that never comes.
func TestStateNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{fifo: "a FIFO", dir: "a directory"} {
		done := make(chan error, 1)
		go func() { _, _, err := ReadState(router.New(), path); done <- err }()
		select {
		case err := <-done:
			if want := path + ": not a regular file (" + kind + ")"; err == nil || err.Error() != want {
				t.Errorf("%v, want %s", err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("ReadState of %s is still waiting", kind)
		}
	}
}
