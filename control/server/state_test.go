package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"urouter/control"
	"urouter/control/statefile"
	"urouter/control/wire"
	"urouter/internal/textdiff"
	"urouter/router"
)

// loadInto applies the state file at path to r.
func loadInto(t *testing.T, r *router.Router, path string) *statefile.State {
	t.Helper()
	st, ld, err := statefile.Read(path, control.NewStateLanguage(r))
	if err != nil {
		t.Fatal(err)
	}
	st.Log = func(m string) { t.Log(m) }
	if err := st.Apply(ld, nil); err != nil {
		t.Fatal(err)
	}
	return st
}

// stateServer is a daemon's socket for r with a state file at path.
func stateServer(t *testing.T, r *router.Router, path string, configure ...func(*statefile.State)) (string, *Server, *statefile.State) {
	t.Helper()
	st := loadInto(t, r, path)
	for _, c := range configure {
		c(st)
	}
	st.Run()
	sock := filepath.Join(t.TempDir(), "urouter.sock")
	srv, err := Listen(sock, r)
	if err != nil {
		t.Fatal(err)
	}
	srv.State = st
	go func() { _ = srv.Serve() }() // it ends when the test closes it
	t.Cleanup(srv.Close)
	return sock, srv, st
}

// smallCompactions makes the state compact at 16 KB of changes.
func smallCompactions(st *statefile.State) { st.CompactAt = smallCompaction }

const smallCompaction = 16 << 10

// saved is r's configuration as save writes it.
func saved(r *router.Router) string {
	out, _, _ := run(r, wire.Options{}, "save")
	return out
}

// reloaded is the configuration a new router makes of the state file.
func reloaded(t *testing.T, path string) string {
	t.Helper()
	r := router.New()
	st := loadInto(t, r, path)
	if st.Loaded.Errors != 0 {
		t.Fatalf("%d lines of the state failed", st.Loaded.Errors)
	}
	_ = st.Close()
	return saved(r)
}

// TestStateSessions: clients change the router at once, in batches, while
// compactions run (at a small size here); the state file then rebuilds
// the same configuration in a new router, and a new router of the file
// while the daemon still runs has every acknowledged batch whole.
func TestStateSessions(t *testing.T) {
	r := newTestRouter(t)
	path := filepath.Join(t.TempDir(), "urouter.state")
	// the open session below must not seal part of its batch
	sock, srv, st := stateServer(t, r, path, smallCompactions, func(st *statefile.State) { st.SealAfter = time.Hour })
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for b := 0; b < 40; b++ {
				var in strings.Builder
				for i := 0; i < 20; i++ {
					fmt.Fprintf(&in, "route add 2001:db8:%x:%x::/64 via 2001:db8:91::2 dev d0 table %d\n", b, i, 100+c)
				}
				if rng.IntN(4) == 0 && b > 0 {
					fmt.Fprintf(&in, "route del 2001:db8:%x:0::/64 table %d\n", b-1, 100+c)
				}
				if rng.IntN(8) == 0 {
					fmt.Fprintf(&in, "nexthop add via 2001:db8:91::%x dev d0\n", 2+rng.IntN(200)) // the router picks its id
				}
				if _, e, code := client(sock, wire.Options{Batch: true, BatchName: "-"}, in.String()); code != 0 {
					t.Errorf("client %d batch %d: %s", c, b, e)
					return
				}
			}
		}()
	}
	wg.Wait()
	// a session still open with a change not sealed: the file has none of it
	c := dial(t, sock, wire.Options{Batch: true, BatchName: "-"})
	put(t, c, "route add 2001:db8:ffff::/64 dev d0\n")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(mustShow(t, sock), "2001:db8:ffff::/64") {
		if time.Now().After(deadline) {
			t.Fatal("the open session's route was not installed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := reloaded(t, path); strings.Contains(got, "2001:db8:ffff::/64") {
		t.Error("a change of a session not ended is in the state file")
	}
	_ = c.Close()
	srv.Close()
	st.Settle()
	want := saved(r)
	got := reloaded(t, path)
	if got != want {
		t.Errorf("the state file rebuilds another configuration:\n%s", textdiff.Lines(want, got))
	}
	if n := strings.Count(want, "route add"); n < 4*40*20*3/4 {
		t.Errorf("only %d routes saved", n)
	}
	if st.SnapshotSize() < 1<<10 {
		t.Errorf("no compaction happened: the snapshot has %d bytes", st.SnapshotSize())
	}
}

func mustShow(t *testing.T, sock string) string {
	t.Helper()
	out, e, code := client(sock, wire.Options{}, "route show\n")
	if code != 0 {
		t.Fatal(e)
	}
	return out
}

// TestStateRecords: what a record says is what the session did: the id the
// router chose for a nexthop, -6, and an expiry counted from the record's
// time, not from the replay's.
func TestStateRecords(t *testing.T) {
	r := newTestRouter(t)
	path := filepath.Join(t.TempDir(), "urouter.state")
	sock, srv, _ := stateServer(t, r, path)
	if _, e, code := client(sock, wire.Options{Batch: true, BatchName: "-"},
		"nexthop add via 2001:db8:91::2 dev d0\nnexthop add via 2001:db8:91::3 dev d0 # a comment\n"); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := client(sock, wire.Options{Inet6: true}, "nexthop add dev d0\n"); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := client(sock, wire.Options{}, "route add 2001:db8:7::/64 dev d0 expires 100\n"); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := client(sock, wire.Options{}, "route show\n"); code != 0 {
		t.Fatal(e)
	}
	if _, _, code := client(sock, wire.Options{}, "sysctl -w net.ipv6.conf.d0.hop_limit=33 net.ipv6.conf.d0.nosuch=1\n"); code == 0 {
		t.Fatal("a write of a knob that does not exist passed")
	}
	if _, _, code := client(sock, wire.Options{Inet6: true}, "sysctl -w net.ipv6.conf.d0.mtu=1400 net.ipv6.conf.d0.nosuch=1\n"); code == 0 {
		t.Fatal("a write of a knob that does not exist passed")
	}
	srv.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nnexthop add id 1 via 2001:db8:91::2 dev d0\nnexthop add id 2 via 2001:db8:91::3 dev d0\n#@urouter",
		"\n-6 nexthop add id 3 dev d0\n#@urouter", "\nroute add 2001:db8:7::/64 dev d0 expires 100\n#@urouter",
		"\nsysctl -q -w net.ipv6.conf.d0.hop_limit=33\n#@urouter", "\n-6 sysctl -q -w net.ipv6.conf.d0.mtu=1400\n#@urouter"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the state file lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "route show") {
		t.Errorf("a show is journaled:\n%s", b)
	}
	// replayed 3 s later, the route has ~97 s left, not 100
	age(t, path, 3*time.Second)
	got := reloaded(t, path)
	if !strings.Contains(got, "-6 nexthop add id 3 dev d0\n") || !strings.Contains(got, "nexthop add id 2 via 2001:db8:91::3 dev d0\n") {
		t.Errorf("the reloaded nexthops:\n%s", got)
	}
	if !strings.Contains(got, "expires 96") && !strings.Contains(got, "expires 97") {
		t.Errorf("the route's expiry restarted on replay:\n%s", got)
	}
}

// age makes the state file at path as if written d earlier: its seals'
// times (which no CRC covers) go back by d.
func age(t *testing.T, path string, d time.Duration) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for line := range bytes.Lines(b) {
		if f := strings.Fields(string(line)); len(f) == 6 && f[0] == "#@urouter" {
			ns, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				t.Fatalf("a seal's time: %q", line)
			}
			f[3] = strconv.FormatInt(ns-int64(d), 10)
			line = []byte(strings.Join(f, " ") + "\n")
		}
		out = append(out, line...)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestStateShapedRuns: a long batch, read ahead and added a run of lines
// at a time (see runShaped), records each line it applied, once, in
// order, as the session records a line it runs itself; the file replays
// to the same router.
func TestStateShapedRuns(t *testing.T) {
	r := newTestRouter(t)
	path := filepath.Join(t.TempDir(), "urouter.state")
	sock, srv, _ := stateServer(t, r, path)
	var b, want strings.Builder
	for i := 0; i < 4000; i++ {
		line := fmt.Sprintf("-6 route add 2001:db8:%x::/48 via 2001:db8:91::2 dev d0 table 100\n", i)
		b.WriteString(line)
		want.WriteString(line)
		if i == 2500 {
			b.WriteString("-6 route add 2001:db8:5::/48 via 2001:db8:91::2 dev d0 table 100\n") // it is there
		}
	}
	if _, e, code := client(sock, wire.Options{Batch: true, Force: true, BatchName: "-"}, b.String()); code != 1 || !strings.Contains(e, "File exists") {
		t.Fatalf("the batch: %d, %q", code, e)
	}
	srv.Close()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, l := range strings.SplitAfter(string(file), "\n") {
		if strings.Contains(l, " route add ") {
			got.WriteString(l)
		}
	}
	if got.String() != want.String() {
		t.Errorf("the state file's routes (%d bytes) are not the batch's lines that applied (%d bytes)", got.Len(), want.Len())
	}
	if again := reloaded(t, path); again != saved(r) {
		t.Errorf("the state file replays to another router")
	}
}

// TestStateOrder: a session sealed after another that began later (each is
// sealed when it ends) is replayed in the order the two ran: B's changes
// to the link A made come after A's making it, though B's record is first
// in the file.
func TestStateOrder(t *testing.T) {
	r := newTestRouter(t)
	path := filepath.Join(t.TempDir(), "urouter.state")
	sock, srv, _ := stateServer(t, r, path)
	a := dial(t, sock, wire.Options{Batch: true, BatchName: "-"})
	put(t, a, "link add foo type dummy\nroute add 2001:db8:77::/64 dev d0\n")
	for deadline := time.Now().Add(5 * time.Second); r.Links.ByName("foo") == nil || !strings.Contains(mustShow(t, sock), "2001:db8:77::/64"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("A's lines did not run")
		}
	}
	if _, e, code := client(sock, wire.Options{Batch: true, BatchName: "-"},
		"link set foo up\naddress add 2001:db8:78::1/64 dev foo\nroute del 2001:db8:77::/64\n"); code != 0 {
		t.Fatal(e)
	}
	put(t, a, "route add 2001:db8:79::/64 dev foo\n")
	_ = a.(interface{ CloseWrite() error }).CloseWrite()
	if _, err := io.ReadAll(a); err != nil { // its exit status: sealed
		t.Fatal(err)
	}
	srv.Close()
	want := saved(r)
	got := reloaded(t, path)
	if got != want {
		t.Errorf("the state file replays the sessions out of order:\n%s", textdiff.Lines(want, got))
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "\n#@seq ") {
		t.Errorf("no session's lines are numbered:\n%s", b)
	}
}

// TestStateRepair: a record that fails (the disk full, say) leaves the
// file without a change that runs; what follows is sealed by a snapshot of
// what runs, with it. While another session holds changes to seal, the
// client is told its change is not saved, and status says so.
func TestStateRepair(t *testing.T) {
	r := newTestRouter(t)
	path := filepath.Join(t.TempDir(), "urouter.state")
	sock, srv, st := stateServer(t, r, path)
	st.Fail(errors.New("no space left on device (the test's)"))
	// another session holds a change not sealed: no snapshot can be taken
	c := dial(t, sock, wire.Options{Batch: true, BatchName: "-"})
	put(t, c, "route add 2001:db8:80::/64 dev d0\n")
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(mustShow(t, sock), "2001:db8:80::/64"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the open session's route was not installed")
		}
	}
	_, e, code := client(sock, wire.Options{}, "route add 2001:db8:81::/64 dev d0\n")
	if code == 0 || !strings.Contains(e, "not saved") {
		t.Errorf("a change not saved was acknowledged: %d %q", code, e)
	}
	if out, _, code := client(sock, wire.Options{}, "status\n"); code == 0 || !strings.Contains(out, "a change is not saved") {
		t.Errorf("status with a change not saved:\n%s", out)
	}
	_ = c.Close()
	// the next change is sealed by a snapshot, and the one before with it
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, _, code := client(sock, wire.Options{}, "route add 2001:db8:82::/64 dev d0\n"); code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the state file was not repaired")
		}
	}
	if out, _, code := client(sock, wire.Options{}, "status\n"); code != 0 {
		t.Errorf("status after the repair:\n%s", out)
	}
	srv.Close()
	got := reloaded(t, path)
	for _, p := range []string{"2001:db8:80::/64", "2001:db8:81::/64", "2001:db8:82::/64"} {
		if !strings.Contains(got, p) {
			t.Errorf("%s is not in the repaired state file:\n%s", p, got)
		}
	}
}
