package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestStateKeepsFailedLines: a config written by hand, or by save, given
// as the state file while the network namespace its TAP link is made in
// is missing: the lines the router refuses are kept in the file (its
// conversion to a state file and every start after), status is not ready
// and says so, and once the namespace is there a start applies them. The
// file keeps its mode. (A host link's missing interface is no failure: the
// link waits for it, TestHostLinkWaits.)
func TestStateKeepsFailedLines(t *testing.T) {
	parallel(t)
	needRoot(t)
	ns := newNetns(t, "stk")
	tapns := ns + "-tap"
	addNetns := func() { mustRun(t, "ip", "netns", "add", tapns) }
	hostLines := []string{
		"type tap netns " + tapns,
		"address add 2001:db8:1::1/64 dev h0",
		"route add 2001:db8:10::/48 via 2001:db8:1::2 dev h0",
	}
	hand := "link add d0 type dummy\nlink set d0 up\nroute add 2001:db8:20::/48 dev d0\n" +
		"link add h0 type tap netns " + tapns + "\nlink set h0 up\naddress add 2001:db8:1::1/64 dev h0\n" +
		"route add 2001:db8:10::/48 via 2001:db8:1::2 dev h0\n"
	addNetns()
	d := startDaemon(t, ns, strings.Split(strings.TrimSpace(hand), "\n")...)
	fromSave := mustSave(t, d)
	d.stop()
	mustRun(t, "ip", "netns", "del", tapns)

	for name, conf := range map[string]string{"by hand": hand, "by save": fromSave} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "urouter.conf")
			if err := os.WriteFile(f, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			check := func(when string) {
				t.Helper()
				data, _ := os.ReadFile(f)
				for _, l := range hostLines {
					if !bytes.Contains(data, []byte(l)) {
						t.Errorf("%s: the file lost %q:\n%s", when, l, data)
					}
				}
				if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o644 {
					t.Errorf("%s: mode %v %v, want 0644", when, fi.Mode(), err)
				}
			}
			for i := range 2 { // converted, then as the state file it became
				d := startDaemonFlags(t, ns, []string{"--state", f})
				out, _, st := d.run("status")
				if st != 1 || !strings.Contains(out, "kept in the file until they apply, the first "+f+":") ||
					!strings.Contains(out, "netns "+tapns+": no such file or directory") {
					t.Errorf("start %d: status: %d\n%s", i+1, st, out)
				}
				if !strings.Contains(mustSave(t, d), "route add 2001:db8:20::/48 dev d0") {
					t.Errorf("start %d: the lines that apply were not applied", i+1)
				}
				killDaemon(t, d)
				check(fmt.Sprintf("start %d", i+1))
			}
			addNetns()
			defer mustRun(t, "ip", "netns", "del", tapns)
			d := startDaemonFlags(t, ns, []string{"--state", f})
			defer d.stop()
			got := mustSave(t, d)
			for _, l := range hostLines[1:] {
				if !strings.Contains(got, l) {
					t.Errorf("with %s back, %q is not applied:\n%s", tapns, l, got)
				}
			}
			if out, _, st := d.run("status"); strings.Contains(out, "failed") {
				t.Errorf("with %s back, status: %d\n%s", tapns, st, out)
			}
		})
	}
}

// TestStateDamaged: a state file whose snapshot is cut short (a crash
// cannot do it: snapshots are renamed into place whole), a FIFO named as
// the state, and a symlink planted where a compaction writes its new
// file: the start stops, saying why, or the planted link's target is
// left alone; no file is changed.
func TestStateDamaged(t *testing.T) {
	parallel(t)
	needRoot(t)
	ns := newNetns(t, "std")
	dir := t.TempDir()
	base := filepath.Join(dir, "base.state")
	lines := []string{"link add d0 type dummy", "link set d0 up"}
	for i := range 100 {
		lines = append(lines, fmt.Sprintf("route add 2001:db8:%x::/48 dev d0", 0x100+i))
	}
	d := startDaemonFlags(t, ns, []string{"--state", base}, lines...)
	d.stop()
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(seals(data)) != 1 {
		t.Fatalf("the state is not one snapshot:\n%s", data)
	}
	for _, cut := range []int{len(data) / 2, len(data) - 20, len(data) - 1} {
		f := filepath.Join(t.TempDir(), "state")
		if err := os.WriteFile(f, data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		st, errs := startFails(t, ns, "--state", f)
		if st == 0 || !strings.Contains(errs, "state: "+f+":1: the snapshot is damaged") {
			t.Errorf("cut at %d of %d: %d %s", cut, len(data), st, errs)
		}
		if got, _ := os.ReadFile(f); !bytes.Equal(got, data[:cut]) {
			t.Errorf("cut at %d: the file was changed", cut)
		}
	}

	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if st, errs := startFails(t, ns, "--state", fifo); st == 0 || !strings.Contains(errs, fifo+": not a regular file (a FIFO)") {
		t.Errorf("a FIFO: %d %s", st, errs)
	}

	sdir := t.TempDir()
	if err := os.Chmod(sdir, 0o1777); err != nil {
		t.Fatal(err)
	}
	f, victim := filepath.Join(sdir, "state"), filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, f+".tmp"); err != nil {
		t.Fatal(err)
	}
	d = startDaemonFlags(t, ns, []string{"--state", f}) // a plain config: converted
	got := mustSave(t, d)
	d.stop()
	if v, _ := os.ReadFile(victim); string(v) != "precious\n" {
		t.Errorf("the planted link's target was overwritten: %q", v)
	}
	if fi, err := os.Lstat(f); err != nil || !fi.Mode().IsRegular() || !strings.Contains(got, "2001:db8:163::/48") {
		t.Errorf("the state: %v %v\n%s", fi.Mode(), err, got)
	}
}
