package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startFails runs a daemon with flags in ns that must not start: it gives
// the daemon's exit status and stderr, and fails t unless it ended within
// 10 s.
func startFails(t *testing.T, ns string, flags ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sock := filepath.Join(t.TempDir(), "urouter.sock")
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, urouter, "daemon", "--socket", sock}, flags...)...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the daemon had not stopped in 10 s: %s%s", out.String(), errs.String())
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), errs.String()
}

// seals are the byte offsets just past each seal line of a state file.
func seals(data []byte) []int {
	var ends []int
	for off := 0; off < len(data); {
		end := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			end = off + i + 1
		}
		if bytes.HasPrefix(data[off:end], []byte("#@urouter ")) {
			ends = append(ends, end)
		}
		off = end
	}
	return ends
}

// lineAt is the 1-based line of data at byte offset off.
func lineAt(data []byte, off int) int { return bytes.Count(data[:off], []byte("\n")) + 1 }

func mustSave(t *testing.T, d *daemon) string {
	t.Helper()
	out, errs, st := d.run("save")
	if st != 0 {
		t.Fatalf("save: %d %s", st, errs)
	}
	return out
}

// TestStateHostile: state files a crash, an editor or a mistake made. A
// record torn at the end (cut short, garbage after the last seal, a
// megabyte line) is dropped with a log line, the state is the records'
// before it, and the file is cut back so that what comes after loads. A
// file that is not one stops the start at once, naming the file and the
// line, and is left as it was. A plain config is applied and becomes a
// state file.
func TestStateHostile(t *testing.T) {
	parallel(t)
	needRoot(t)
	ns := newNetns(t, "sth")
	f := hostileBase(t, ns)
	f.tornRecords(t, ns)
	// a snapshot stands for --config: the config is not applied again
	t.Run("a config beside a snapshot", func(t *testing.T) { f.configBesideSnapshot(t, ns) })
	// files that are not state files: the start stops, names the line
	f.notStateFiles(t, ns)
	// a plain config (a save, and links it adds without a MAC or deletes)
	// is applied, and becomes a state file that keeps what the router
	// chose: the MAC, the indexes after the deleted link's
	t.Run("a plain config", func(t *testing.T) { f.plainConfig(t, ns) })
}

// hostileFile is the state file the hostile cases are made from: a
// snapshot and three changes, with the saves before and after the last.
type hostileFile struct {
	data          []byte
	ends          []int // seals(data)
	before, after string
}

// hostileBase makes the state file of a daemon in ns: a config, two
// changes, and a last batch of several lines.
func hostileBase(t *testing.T, ns string) hostileFile {
	base := filepath.Join(t.TempDir(), "base.state")
	p := startDaemonFlags(t, ns, []string{"--state", base},
		"link add d0 type dummy", "link set d0 up", "address add 2001:db8:1::1/64 dev d0",
		"route add 2001:db8:10::/48 via 2001:db8:1::2 dev d0", "route add blackhole 2001:db8:11::/48",
		"rule add pref 100 from 2001:db8:9::/64 lookup 100")
	for _, c := range [][]string{{"route", "add", "2001:db8:12::/48", "dev", "d0", "table", "100"}, {"link", "add", "d1", "type", "dummy"}} {
		if out, errs, st := p.run(c...); st != 0 {
			t.Fatalf("%s: %d %s%s", strings.Join(c, " "), st, out, errs)
		}
	}
	before := mustSave(t, p)
	last := filepath.Join(t.TempDir(), "last")
	if err := os.WriteFile(last, []byte("route add 2001:db8:13::/48 dev d0 metric 7\nroute add unreachable 2001:db8:14::/48\n"+
		"address add 2001:db8:2::1/64 dev d0\nlink set d1 up\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errs, st := p.run("-batch", last); st != 0 {
		t.Fatalf("the last record: %d %s%s", st, out, errs)
	}
	after := mustSave(t, p)
	p.stop()
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	ends := seals(data)
	if len(ends) != 4 || ends[3] != len(data) || !bytes.HasPrefix(data, []byte("# urouter state")) {
		t.Fatalf("the state file is not a snapshot and three changes:\n%s", data)
	}
	if before == after || !strings.Contains(before, "2001:db8:12::/48") || !strings.Contains(after, "2001:db8:14::/48") {
		t.Fatalf("save before the last record:\n%s\nafter:\n%s", before, after)
	}
	return hostileFile{data: data, ends: ends, before: before, after: after}
}

// writeState writes b as a state file of t's own.
func writeState(t *testing.T, b []byte) string {
	f := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func cat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

// tornRecords: a record torn at the end is dropped and logged, the file
// cut back to its last seal, and a change after it kept.
func (h hostileFile) tornRecords(t *testing.T, ns string) {
	data, lastStart := h.data, h.ends[2]
	for _, c := range []struct {
		name string
		file []byte
		want string // the state after the start
		kept []byte // the file once the daemon has started
	}{
		{"cut in the last record", data[:lastStart+(len(data)-lastStart)/2], h.before, data[:lastStart]},
		{"cut before the last seal's newline", data[:len(data)-1], h.before, data[:lastStart]},
		{"garbage after the last seal", cat(data, []byte("bogus garbage line\n")), h.after, data},
		{"a megabyte line", cat(data, bytes.Repeat([]byte("x"), 1<<20)), h.after, data},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := writeState(t, c.file)
			d := startDaemonFlags(t, ns, []string{"--state", f})
			if got := mustSave(t, d); got != c.want {
				t.Errorf("the state is not the records' before the torn one:\n%s", lineDiff(c.want, got))
			}
			if got, _ := os.ReadFile(f); !bytes.Equal(got, c.kept) {
				t.Errorf("the file was not cut back to its last seal: %d bytes, want %d", len(got), len(c.kept))
			}
			if out, errs, st := d.run("route", "add", "2001:db8:77::/48", "dev", "d0"); st != 0 {
				t.Fatalf("a change after: %d %s%s", st, out, errs)
			}
			killDaemon(t, d)
			if log := d.log.String(); !strings.Contains(log, "dropped a torn record") || !strings.Contains(log, f) {
				t.Errorf("the daemon did not log the torn record it dropped:\n%s", log)
			}
			d = startDaemonFlags(t, ns, []string{"--state", f})
			if got := mustSave(t, d); !strings.Contains(got, "route add 2001:db8:77::/48 dev d0") {
				t.Errorf("the change after the torn record is lost:\n%s", got)
			}
			d.stop()
			if log := d.log.String(); strings.Contains(log, "torn") || strings.Contains(log, "dropped") {
				t.Errorf("the second start found a torn record:\n%s", log)
			}
		})
	}
}

// configBesideSnapshot: a snapshot stands for --config, which is not
// applied again, and status and the log say so.
func (h hostileFile) configBesideSnapshot(t *testing.T, ns string) {
	f := writeState(t, h.data)
	d := startDaemonFlags(t, ns, []string{"--state", f}, "link add zz type dummy", "route add 2001:db8:99::/48 dev zz")
	if got := mustSave(t, d); got != h.after {
		t.Errorf("the state is not the file's:\n%s", lineDiff(h.after, got))
	}
	out, _, _ := d.run("status")
	d.stop()
	if !strings.Contains(out, ": not applied (the state file holds the configuration)") {
		t.Errorf("status does not say the config was not applied:\n%s", out)
	}
	if log := d.log.String(); !strings.Contains(log, "holds the whole configuration: config ") || !strings.Contains(log, " not applied") {
		t.Errorf("the daemon did not log that the config was not applied:\n%s", log)
	}
}

// notStateFiles: files that are not state files stop the start, which
// names the line, and are left as they were.
func (h hostileFile) notStateFiles(t *testing.T, ns string) {
	data, ends := h.data, h.ends
	snapLine2 := bytes.IndexByte(data[len("# urouter state"):], '\n') + len("# urouter state") + 1
	snapLine2 += bytes.IndexByte(data[snapLine2:], '\n') + 1
	flip := append([]byte(nil), data...)
	flip[ends[0]+3] ^= 0x20 // in record 2: route add -> roUte add
	for _, c := range []struct {
		name string
		file []byte
		line int
		why  string
	}{
		{"an unknown command in the snapshot", cat(data[:snapLine2], []byte("frobnicate foo\n"), data[snapLine2:]), 1, "record 1 does not match its seal"},
		// written whole and renamed, a snapshot is never torn: alone too
		{"an unknown command in a snapshot alone", cat(data[:snapLine2], []byte("frobnicate foo\n"), data[snapLine2:ends[0]]), 1, "record 1 does not match its seal"},
		{"a change flipped before good ones", flip, lineAt(data, ends[0]), "record 2 does not match its seal (crc)"},
		{"a plain config with an unknown command", []byte("link add d0 type dummy\nlink set d0 up\nfrobnicate foo\nroute add 2001:db8:10::/48 dev d0\n"), 3, `Object "frobnicate" is unknown`},
		{"a plain config with a garbage line", []byte("link add d0 type dummy\nlink set d0 up\nroute add 2001:db8:10::/48 dev d0 bogus\n"), 3, "bogus"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := writeState(t, c.file)
			st, errs := startFails(t, ns, "--state", f)
			if st == 0 {
				t.Errorf("the daemon exited 0")
			}
			if want := fmt.Sprintf("state: %s:%d: ", f, c.line); !strings.Contains(errs, want) || !strings.Contains(errs, c.why) {
				t.Errorf("stderr does not say %q ... %q:\n%s", want, c.why, errs)
			}
			if got, _ := os.ReadFile(f); !bytes.Equal(got, c.file) {
				t.Errorf("the file was changed:\n%s", got)
			}
		})
	}
}

// plainConfig: a plain config is applied and becomes a state file of one
// snapshot, which keeps the MAC and the indexes the router chose.
func (h hostileFile) plainConfig(t *testing.T, ns string) {
	before := h.before
	f := writeState(t, []byte(before+"link add d7 type dummy\nlink add d8 type dummy\nlink del d8\n"))
	d := startDaemonFlags(t, ns, []string{"--state", f})
	got := mustSave(t, d)
	d7 := regexp.MustCompile(`(?m)^link add d7 index 4 mtu 1500 address \S+ type dummy\n`)
	if line := d7.FindString(got); line == "" || strings.Replace(got, line, "", 1) != before {
		t.Errorf("the plain config's state, before and d7 at index 4:\n%s", lineDiff(before, got))
	}
	file, _ := os.ReadFile(f)
	if !bytes.HasPrefix(file, []byte("# urouter state")) || !bytes.Contains(file, []byte("\n#@urouter 1 snapshot ")) || len(seals(file)) != 1 {
		t.Errorf("the plain config was not made a state file of one snapshot:\n%s", file)
	}
	for _, c := range [][]string{{"route", "add", "2001:db8:77::/48", "dev", "d0"}, {"link", "add", "d5", "type", "dummy"}} {
		if out, errs, st := d.run(c...); st != 0 {
			t.Fatalf("a change after: %d %s%s", st, out, errs)
		}
	}
	want := mustSave(t, d)
	if !strings.Contains(want, "link add d5 index 6 ") { // after d8's 5
		t.Errorf("d5 is not at index 6:\n%s", want)
	}
	for range 2 { // the state file as converted, then as it loads
		killDaemon(t, d)
		d = startDaemonFlags(t, ns, []string{"--state", f})
		if got := mustSave(t, d); got != want {
			t.Errorf("after kill -9:\n%s", lineDiff(want, got))
		}
	}
}
