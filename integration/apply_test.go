package integration

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `urouter apply FILE`: a running router made to say what a config says.
// A router started with config A and given B by apply shows and saves
// what one started with B does; --dry-run prints the same commands and
// changes nothing; B applied again changes nothing; a line that does not
// load changes nothing; a kill -9 during apply leaves A or B whole; a
// SIGHUP applies the edited --config; and traffic across what A and B
// both say loses no packet.

// TestApplyConverges: random pairs of configurations (state_gen_test.go's):
// B given by its save, and as the commands that made it (a config written
// by hand, whose links' indexes and MACs the router keeps where the
// config leaves them to it).
func TestApplyConverges(t *testing.T) {
	parallel(t)
	needRoot(t)
	base := seedBase("UROUTER_APPLY_SEED")
	for i, hand := range []bool{false, true} {
		t.Run(fmt.Sprint("handwritten=", hand), func(t *testing.T) {
			t.Logf("seeds %d, %d (UROUTER_APPLY_SEED=%d for this run)", base+int64(2*i), base+int64(2*i+1), base)
			applyPair(t, base+int64(2*i), base+int64(2*i+1), hand)
		})
	}
}

// generated is a configuration of stateGen's for seed, as a config file's
// lines.
func generated(seed int64) []string {
	g := &stateGen{r: rand.New(rand.NewSource(seed))}
	g.generate(g.maybe(2))
	lines := append([]string(nil), g.batch...)
	for _, c := range g.singles {
		lines = append(lines, strings.Join(c, " "))
	}
	return append(lines, g.after...)
}

func applyPair(t *testing.T, seedA, seedB int64, hand bool) {
	dir := t.TempDir()
	cfgA, cfgB := generated(seedA), generated(seedB)
	// what B is: a router started with it
	nsB := newNetns(t, "apB")
	hostVeth(t, nsB)
	b := startDaemonFlags(t, nsB, nil, cfgB...)
	waitDAD(t, b)
	wantAt := time.Now()
	want := showsOf(t, b)
	b.stop()
	file := filepath.Join(dir, "b.conf")
	content := want["save"]
	if hand {
		content = strings.Join(cfgB, "\n") + "\n"
	}
	writeFile(t, file, content)

	nsA := newNetns(t, "apA")
	hostVeth(t, nsA)
	state := filepath.Join(dir, "a.state")
	a := startDaemonFlags(t, nsA, []string{"--state", state}, cfgA...)
	waitDAD(t, a)
	before, _, _ := a.run("save")
	dry, errs, st := a.run("apply", file, "--dry-run")
	if st != 0 || dry == "" {
		t.Fatalf("apply --dry-run: %d %q\n%s", st, dry, errs)
	}
	// as sets: the router's own events (a host link's carrier heard
	// late) may list routes of one destination in another order
	if now, _, _ := a.run("save"); sortedLines(noExpiry(before)) != sortedLines(noExpiry(now)) {
		t.Fatalf("apply --dry-run changed the router:\n%s", lineDiff(before, now))
	}
	ran, errs, st := a.run("apply", file)
	if st != 0 || ran != dry {
		t.Fatalf("apply: %d %s\nit ran:\n%s\n--dry-run said:\n%s", st, errs, ran, dry)
	}
	waitDAD(t, a)
	got := showsOf(t, a)
	if hand {
		compareFree(t, want["save"], got["save"])
	} else {
		kernelOrder(t, want, got)
		compareShows(t, "A given B's save", want, wantAt, got)
	}
	if again, errs, st := a.run("apply", file); st != 0 || again != "" {
		t.Errorf("apply again: %d %s\nit ran:\n%s", st, errs, again)
	}
	if t.Failed() {
		t.Logf("it ran:\n%s\nA:\n%s\nB:\n%s", ran, numbered(cfgA), numbered(cfgB))
		return
	}
	after, _, _ := a.run("save")
	a.stop()
	// the state file has B, whole
	c := startDaemonFlags(t, newNetnsVeth(t, "apC"), []string{"--state", state})
	waitDAD(t, c)
	if s, _, _ := c.run("save"); noExpiry(s) != noExpiry(after) {
		t.Errorf("restarted from the state file:\n%s", lineDiff(after, s))
	}
}

func newNetnsVeth(t *testing.T, name string) string {
	ns := newNetns(t, name)
	hostVeth(t, ns)
	return ns
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// freeWords are what a config that does not say them leaves to the
// router: a link's index and a random MAC (and the link-local address
// from it), and a route's seconds left.
var freeWords = regexp.MustCompile(` index \d+| address [0-9a-f:]{17}|^address del fe80::\S+ dev \S+$| expires \d+`)

// compareFree compares two saves but for freeWords.
func compareFree(t *testing.T, want, got string) {
	t.Helper()
	norm := func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			out = append(out, freeWords.ReplaceAllString(l, ""))
		}
		slices.Sort(out) // save lists links (and what is theirs) by index
		return strings.Join(out, "\n")
	}
	if norm(want) != norm(got) {
		t.Errorf("A given B's commands saves otherwise than B (indexes and random MACs aside):\n%s", lineDiff(norm(want), norm(got)))
	}
}

// TestApplyRefuses: a config with a line that does not parse, or one
// the router refuses, changes nothing, and the error names the line.
func TestApplyRefuses(t *testing.T) {
	parallel(t)
	needRoot(t)
	ns := newNetns(t, "apR")
	d := startDaemon(t, ns, "link add t0 type tun", "link set t0 up", "address add 2001:db8:1::1/64 dev t0")
	dir := t.TempDir()
	before, _, _ := d.run("save")
	for _, c := range []struct{ config, says string }{
		{"link add t5 type tun\nroute add bogus\n", `Error: inet6 prefix is expected rather than "bogus".`},
		{"link add t5 type tun\nroute add 2001:db8:9::/48 via 2001:db8:77::1 dev t5\n", "Command failed"},
		{"link add t0 type tun\nlink set t0 up\nfoo bar\n", `Object "foo" is unknown`},
	} {
		file := filepath.Join(dir, "bad.conf")
		writeFile(t, file, c.config)
		out, errs, st := d.run("apply", file)
		if st == 0 || out != "" || !strings.Contains(errs, c.says) || !strings.Contains(errs, "bad.conf:") {
			t.Errorf("apply of\n%s: %d %q %q; want the error %q naming the line", c.config, st, out, errs, c.says)
		}
		if now, _, _ := d.run("save"); now != before {
			t.Errorf("a config that failed changed the router:\n%s", lineDiff(before, now))
		}
	}
	if _, _, st := runCmd("ip", "-n", ns, "link", "show", "t5"); st == 0 {
		t.Errorf("a config that failed left its TUN t5 in the kernel")
	}
	if _, errs, st := d.run("apply", filepath.Join(dir, "none.conf")); st != 1 || !strings.Contains(errs, "Cannot open file") {
		t.Errorf("apply of a missing file: %d %q", st, errs)
	}
}

// TestApplySIGHUP: kill -HUP applies the --config file as edited, and
// the log says what it ran.
func TestApplySIGHUP(t *testing.T) {
	parallel(t)
	needRoot(t)
	ns := newNetns(t, "apH")
	d := startDaemon(t, ns, "link add t0 type tun", "link set t0 up", "address add 2001:db8:1::1/64 dev t0",
		"route add 2001:db8:100::/48 via 2001:db8:1::2 dev t0")
	config := d.cmd.Args[slices.Index(d.cmd.Args, "--config")+1]
	writeFile(t, config, "link add t0 type tun\nlink set t0 up\naddress add 2001:db8:1::1/64 dev t0\n"+
		"route add 2001:db8:200::/48 via 2001:db8:1::3 dev t0\n")
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(d.log.String(), "applied"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no word of the SIGHUP in the log:\n%s", d.log)
		}
	}
	out, _, _ := d.run("route", "show")
	if !strings.Contains(out, "2001:db8:200::/48 via 2001:db8:1::3") || strings.Contains(out, "2001:db8:100::/48") {
		t.Errorf("after SIGHUP:\n%s", out)
	}
	for _, w := range []string{"route add 2001:db8:200::/48", "route del 2001:db8:100::/48"} {
		if !strings.Contains(d.log.String(), w) {
			t.Errorf("the log does not say %q:\n%s", w, d.log)
		}
	}
}

// kernelOrder forgives got's route show one difference from want's: the
// order of routes the router derives (proto kernel) of one destination,
// which is the order their links came up in. A link apply made again
// came up after the others, as in Linux; apply does not take the others
// down and up again to keep an order (that would cost their traffic).
func kernelOrder(t *testing.T, want, got map[string]string) {
	k := "-6 route show table all"
	norm := func(s string) []string { return strings.Split(expiresN.ReplaceAllString(s, "expires N"), "\n") }
	w, g := norm(want[k]), norm(got[k])
	if len(w) != len(g) {
		return
	}
	for i := range w {
		if w[i] != g[i] && !strings.Contains(w[i], " proto kernel ") {
			return
		}
	}
	ws, gs := slices.Clone(w), slices.Clone(g)
	slices.Sort(ws)
	slices.Sort(gs)
	if slices.Equal(ws, gs) && !slices.Equal(w, g) {
		t.Logf("the kernel's routes in another order (a link made again came up last)")
		got[k] = strings.Join(w, "\n")
		want[k] = got[k]
	}
}

// noExpiry is a save without its routes' seconds left, which run on.
func noExpiry(save string) string { return expiresN.ReplaceAllString(save, "expires N") }
