package integration

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// What users keep of a router's configuration: `urouter save` writes text
// that, given as --config to a daemon on a fresh machine, makes the same
// router (every show the same, and the same save); `daemon --state FILE`
// keeps every change it acknowledged across kill -9, each session's whole
// or not at all, drops a record a crash tore, and refuses a file that is
// not one, naming its line; `status` says whether the router is ready.

// TestSaveRoundTrip: a random configuration, built through the client on
// daemon A, saved, and given as --config to daemon B in a fresh netns:
// every show of B is A's, and so is B's save. A's state file, replayed by
// daemon C in another fresh netns, makes the same router too.
func TestSaveRoundTrip(t *testing.T) {
	parallel(t)
	needRoot(t)
	base := seedBase("UROUTER_SAVE_SEED")
	for i := range 3 {
		seed := base + int64(i)
		t.Run(fmt.Sprint("seed", i), func(t *testing.T) {
			t.Logf("seed %d (UROUTER_SAVE_SEED=%d for this run)", seed, base)
			saveRoundTrip(t, seed, i == 1)
		})
	}
}

// seedBase is a random test's first seed: $env's, to run again a run
// that failed, or the clock's.
func seedBase(env string) int64 {
	if s := os.Getenv(env); s != "" {
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	return time.Now().UnixNano()
}

func saveRoundTrip(t *testing.T, seed int64, delDefault bool) {
	g := &stateGen{r: rand.New(rand.NewSource(seed))}
	g.generate(delDefault)
	dir := t.TempDir()
	state := filepath.Join(dir, "a.state")

	nsA := newNetns(t, "srA")
	hostVeth(t, nsA)
	a := startDaemonFlags(t, nsA, []string{"--state", state})
	runBatch := func(lines []string) {
		batch := filepath.Join(dir, "batch")
		if err := os.WriteFile(batch, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, errs, st := a.run("-batch", batch); st != 0 {
			t.Fatalf("the configuration: %d %s\n%s", st, errs, numbered(lines))
		}
	}
	runBatch(g.batch)
	for _, c := range g.singles {
		if out, errs, st := a.run(c...); st != 0 {
			t.Fatalf("%s: %d %s%s", strings.Join(c, " "), st, out, errs)
		}
	}
	runBatch(g.after)
	waitDAD(t, a)
	wantAt := time.Now()
	want := showsOf(t, a)
	saved := want["save"]
	if !strings.Contains(saved, "route append ") && !strings.Contains(saved, "nexthop via") {
		t.Errorf("the save has no multipath route:\n%s", saved)
	}
	if delDefault && !strings.Contains(saved, "rule del pref 32766") {
		t.Errorf("the save does not delete the default rule it lacks:\n%s", saved)
	}
	a.stop()
	for _, dev := range []string{"t0", "p0", "km0"} {
		if out, _, st := runCmd("ip", "-n", nsA, "link", "show", "dev", dev); st == 0 {
			t.Errorf("A stopped, its kernel device %s stays:\n%s", dev, out)
		}
	}

	// B: the save as --config, on a fresh machine with the same veth
	nsB := newNetns(t, "srB")
	hostVeth(t, nsB)
	b := startDaemonFlags(t, nsB, nil, strings.Split(strings.TrimSuffix(saved, "\n"), "\n")...)
	waitDAD(t, b)
	compareShows(t, "B, from A's save", want, wantAt, showsOf(t, b))
	b.stop()

	// C: A's state file, replayed
	nsC := newNetns(t, "srC")
	hostVeth(t, nsC)
	c := startDaemonFlags(t, nsC, []string{"--state", state})
	waitDAD(t, c)
	compareShows(t, "C, from A's state file", want, wantAt, showsOf(t, c))
	if t.Failed() {
		t.Logf("A's configuration:\n%s\n%q\n%s", strings.Join(g.batch, "\n"), g.singles, strings.Join(g.after, "\n"))
	}
}

// TestStatus: status exits 0 and says "status ready" only when the router
// is: not while a line of its state file failed, nor while zebra has not
// connected to its FPM listener; -j status says the same.
func TestStatus(t *testing.T) {
	parallel(t)
	needRoot(t)
	ns := newNetns(t, "sts")
	type status struct {
		Ready   bool     `json:"ready"`
		Reasons []string `json:"reasons"`
		Links   struct {
			Up    int `json:"up"`
			SetUp int `json:"set_up"`
		} `json:"links"`
		FPM string `json:"fpm"`
	}
	jstatus := func(t *testing.T, d *daemon) (status, int) {
		t.Helper()
		out, errs, st := d.run("-j", "status")
		var s status
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("-j status: %v: %s%s", err, out, errs)
		}
		return s, st
	}

	d := startDaemonFlags(t, ns, nil, "link add d0 type dummy", "link set d0 up", "link add d1 type dummy")
	out, errs, st := d.run("status")
	if st != 0 || !strings.HasPrefix(out, "status ready\n") || !strings.Contains(out, "links 1 up of 1 set up") {
		t.Errorf("a plain daemon's status: %d %s%s", st, out, errs)
	}
	if s, st := jstatus(t, d); st != 0 || !s.Ready || len(s.Reasons) != 0 || s.Links.Up != 1 || s.Links.SetUp != 1 {
		t.Errorf("-j status: %d %+v", st, s)
	}
	d.stop()

	// a state file with a line the router refuses
	f := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(f, []byte("link add d0 type dummy\nlink add h9 type tap netns nosuch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d = startDaemonFlags(t, ns, []string{"--state", f})
	out, errs, st = d.run("status")
	if st != 1 || !strings.HasPrefix(out, "status not ready\n") || !strings.Contains(out, "state "+f+": 1 of its lines failed") {
		t.Errorf("status with a state line failed: %d %s%s", st, out, errs)
	}
	if s, st := jstatus(t, d); st != 1 || s.Ready || len(s.Reasons) != 1 {
		t.Errorf("-j status: %d %+v", st, s)
	}
	d.stop()

	// FPM: not ready until zebra connects, and again once it has gone
	d = startDaemonFlags(t, ns, []string{"--fpm", "127.0.0.1:0"})
	out, errs, st = d.run("status")
	m := regexp.MustCompile(`fpm: zebra has not connected to 127\.0\.0\.1:(\d+)`).FindStringSubmatch(out)
	if st != 1 || !strings.HasPrefix(out, "status not ready\n") || m == nil {
		t.Fatalf("status before zebra connects: %d %s%s", st, out, errs)
	}
	if s, st := jstatus(t, d); st != 1 || s.Ready || len(s.Reasons) != 1 || !strings.Contains(s.Reasons[0], "fpm") {
		t.Errorf("-j status: %d %+v", st, s)
	}
	zebra := startIn(t, ns, "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/"+m[1]+" && exec sleep 60")
	waitUntil(t, "status ready once zebra connected", func() bool { _, _, st := d.run("status"); return st == 0 })
	out, _, _ = d.run("status")
	if !strings.HasPrefix(out, "status ready\n") || !strings.Contains(out, "fpm connected from 127.0.0.1:") {
		t.Errorf("status once zebra connected:\n%s", out)
	}
	if s, st := jstatus(t, d); st != 0 || !s.Ready || !strings.HasPrefix(s.FPM, "connected from") {
		t.Errorf("-j status: %d %+v", st, s)
	}
	zebra.stop()
	waitUntil(t, "status not ready once zebra went", func() bool { _, _, st := d.run("status"); return st == 1 })
}
