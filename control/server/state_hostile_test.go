package server

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"urouter/control"
	cli "urouter/control/client"
	"urouter/control/statefile"
	"urouter/control/wire"
	"urouter/internal/textdiff"
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
	if st.Loaded.Errors != 2 || st.Held() != 2 {
		t.Fatalf("%d errors, %d held, want 2 and 2", st.Loaded.Errors, st.Held())
	}
	if why := st.FailedWhy(); !strings.Contains(why, "2 kept in the file until they apply, the first "+path+":3: ") {
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
	if err := st.Compact(); err != nil {
		t.Fatal(err)
	}
	kept("a compaction")
	_ = st.Close()

	// a router where gone0 is: they apply, and nothing is held
	r := router.New()
	if _, e, code := run(r, wire.Options{Batch: true}, "link add gone0 index 50 type dummy", "link set gone0 up"); code != 0 {
		t.Fatal(e)
	}
	st = loadInto(t, r, path)
	if st.Loaded.Errors != 0 || st.Held() != 0 {
		t.Fatalf("where gone0 is: %d errors, %d held", st.Loaded.Errors, st.Held())
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
		go func() { _, _, err := statefile.Read(path, control.NewStateLanguage(router.New())); done <- err }()
		select {
		case err := <-done:
			if want := path + ": not a regular file (" + kind + ")"; err == nil || err.Error() != want {
				t.Errorf("%v, want %s", err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("statefile.Read of %s is still waiting", kind)
		}
	}
}

// TestStateIdleHolder: sessions that hold changes not sealed and wait on
// their client (one after a single line, one after a batch long enough to
// be read ahead) do not hold compactions off for ever: once one is due,
// they seal what they have, the file stays bounded while other sessions
// change the router, and their later lines and the rest load back whole.
func TestStateIdleHolder(t *testing.T) {
	r := newTestRouter(t)
	path := filepath.Join(t.TempDir(), "urouter.state")
	sock, srv, st := stateServer(t, r, path, smallCompactions, func(st *statefile.State) { st.SealAfter = 20 * time.Millisecond })
	one := dial(t, sock, wire.Options{Batch: true, BatchName: "-"})
	put(t, one, "route add 2001:db8:ffff::/64 dev d0\n")
	long := dial(t, sock, wire.Options{Batch: true, BatchName: "-"})
	for i := range 2000 { // past a session's first 64 KiB: read ahead
		put(t, long, "route add 2001:db8:fffe:%x::/64 dev d0 table 200\n", i)
	}
	waitFor(t, "the holders' routes", func() bool {
		out, _, _ := client(sock, wire.Options{}, "route show table all\n")
		return strings.Contains(out, "2001:db8:ffff::/64") && strings.Contains(out, "2001:db8:fffe:7cf::/64")
	})
	for b := range 40 {
		var in strings.Builder
		for i := range 40 {
			fmt.Fprintf(&in, "route add 2001:db8:%x:%x::/64 via 2001:db8:91::2 dev d0 table 100\n", b, i)
		}
		if _, e, code := client(sock, wire.Options{Batch: true, BatchName: "-"}, in.String()); code != 0 {
			t.Fatal(e)
		}
	}
	// the changes go on: a compaction comes once the holders sealed, and
	// its snapshot has their routes
	var churn strings.Builder
	for i := range 100 {
		fmt.Fprintf(&churn, "route add 2001:db8:eeee:%x::/64 dev d0\nroute del 2001:db8:eeee:%x::/64\n", i, i)
	}
	waitFor(t, "a compaction with the holders' routes", func() bool {
		if _, e, code := client(sock, wire.Options{Batch: true, BatchName: "-"}, churn.String()); code != 0 {
			t.Fatal(e)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		snap, _, _ := bytes.Cut(data, []byte("\n"+"#@urouter"+" "))
		return bytes.Contains(snap, []byte("2001:db8:ffff::/64")) && bytes.Contains(snap, []byte("2001:db8:fffe:7cf::/64"))
	})
	if fi, err := os.Stat(path); err != nil || fi.Size() > 3*st.SnapshotSize()+smallCompaction+int64(churn.Len()) {
		t.Errorf("the file has %d bytes, its snapshot %d", fi.Size(), st.SnapshotSize())
	}
	put(t, one, "route add 2001:db8:fffd::/64 dev d0\n")
	put(t, long, "route add 2001:db8:fffc::/64 dev d0\n")
	for _, c := range []interface{ CloseWrite() error }{one.(*net.UnixConn), long.(*net.UnixConn)} {
		if err := c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []net.Conn{one, long} {
		var out, errs strings.Builder
		if code, failure := cli.Answer(c.(*net.UnixConn), &out, &errs); code != 0 || failure != "" {
			t.Errorf("a holder's status: %d %s %s", code, failure, errs.String())
		}
	}
	srv.Close()
	_ = st.Close()
	if want, got := saved(r), reloaded(t, path); got != want {
		t.Errorf("the state file rebuilds another configuration:\n%s", textdiff.Lines(want, got))
	}
}

// waitFor polls cond until it holds, failing t after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}
