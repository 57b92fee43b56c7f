// Package integration holds the end-to-end tests: the urouter binary
// started as a user starts it, real network namespaces and TUN links, the
// Linux kernel as a neighbour and as an oracle, ping6, traceroute6 and
// iperf3. They need root; CI runs them as root.
//
// A test says first whether it measures against the clock, a peer or the
// machine (measures(t): it runs alone) or not (parallel(t): an oracle, a
// state file, a capture's contents, a routing daemon's routes; it runs
// beside the others); see groups_test.go. A test's namespaces (newNetns
// numbers them), sockets and files (t.TempDir) are its own.
package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"urouter/internal/racebuild"
)

// urouter is the daemon under test, built once by TestMain: with the race
// detector when the tests are. plain is urouter as make build builds it
// (static, no race detector): every client the tests start, and the
// daemon where the detector's memory or CPU would be measured. A
// race-built client starts in three times as long and the labs start
// thousands; the client's own code runs under the detector in
// control/client's tests.
var urouter, plain string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "urouter-it")
	if err != nil {
		panic(err)
	}
	urouter, plain = filepath.Join(dir, "urouter"), filepath.Join(dir, "urouter-plain")
	if os.Getenv("GORACE") == "" {
		// A race-built process sleeps a second at exit by default (for
		// other goroutines' reports): a daemon's stop would wait on that.
		// Races are reported as they are found either way.
		if err := os.Setenv("GORACE", "atexit_sleep_ms=0"); err != nil {
			panic(err)
		}
	}
	if !racebuild.Enabled {
		plain = urouter
	}
	err = build(urouter, racebuild.Enabled)
	if err == nil && racebuild.Enabled {
		err = build(plain, false)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// build builds urouter at bin, with the race detector if race, else as
// make build does (static, without cgo).
func build(bin string, race bool) error {
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	c := exec.Command("go", append(args, "../cmd/urouter")...)
	if !race {
		c.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("building urouter (race %v): %v\n%s", race, err, out)
	}
	return nil
}

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CI runs as root)")
	}
}

// daemon is a urouter daemon started for a test.
type daemon struct {
	t    testing.TB
	cmd  *exec.Cmd
	sock string
	log  *logBuffer
}

// logBuffer is a daemon's output, written by exec's copier while a test
// may read it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startDaemon runs `urouter daemon --config CONF --socket SOCK`, in netns
// ns if not empty, and waits until it answers.
func startDaemon(t *testing.T, ns string, config ...string) *daemon {
	t.Helper()
	return startDaemonFlags(t, ns, nil, config...)
}

// startDaemonFlags is startDaemon with more daemon flags.
func startDaemonFlags(t testing.TB, ns string, flags []string, config ...string) *daemon {
	t.Helper()
	return startDaemonAt(t, ns, filepath.Join(t.TempDir(), "urouter.sock"), flags, config...)
}

// startDaemonAt is startDaemonFlags with the control socket at sock.
func startDaemonAt(t testing.TB, ns, sock string, flags []string, config ...string) *daemon {
	t.Helper()
	return startBinary(t, urouter, ns, sock, flags, config...)
}

// startBinary is startDaemonAt with the daemon's binary bin.
func startBinary(t testing.TB, bin, ns, sock string, flags []string, config ...string) *daemon {
	t.Helper()
	dir := t.TempDir()
	d := &daemon{t: t, sock: sock, log: new(logBuffer)}
	args := append([]string{"daemon", "--socket", d.sock}, labFlags(flags)...)
	if len(config) > 0 {
		conf := filepath.Join(dir, "urouter.conf")
		if err := os.WriteFile(conf, []byte(strings.Join(config, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", conf)
	}
	if ns != "" {
		args = append([]string{"netns", "exec", ns, bin}, args...)
		d.cmd = exec.Command("ip", args...)
	} else {
		d.cmd = exec.Command(bin, args...)
	}
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, _, st := d.run("route", "show"); st == 0 {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not answer: %s", d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// labFlags are a lab's daemon flags: beside the packages' race-built
// tests (make test's labs group) a control plane at idle priority
// (--control-nice idle, the default) waits for a core no one else wants,
// and a feed of 10,000 routes did not load in 30 s; there, unless the
// test says otherwise, it runs at nice 0. What the lab checks does not
// depend on it; the measuring tests run the default.
func labFlags(flags []string) []string {
	if os.Getenv(testsGroup) != "labs" || slices.Contains(flags, "--control-nice") {
		return flags
	}
	return append(slices.Clip(flags), "--control-nice", "0")
}

func (d *daemon) stop() {
	if d.cmd.Process == nil || d.cmd.ProcessState != nil {
		return
	}
	defer func() {
		if strings.Contains(d.log.String(), "DATA RACE") {
			d.t.Errorf("the daemon reported a data race:\n%s", d.log)
		}
	}()
	stopGroup(d.cmd, 5*time.Second)
}

// stopGroup ends a started command's process group: SIGTERM, then
// SIGKILL after grace.
func stopGroup(cmd *exec.Cmd, grace time.Duration) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // the exit status of a daemon told to stop is not the test's
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// run runs the client with args against the daemon.
func (d *daemon) run(args ...string) (stdout, stderr string, status int) {
	return runCmd(plain, append([]string{"--socket", d.sock}, args...)...)
}

func runCmd(name string, args ...string) (stdout, stderr string, status int) {
	var out, errs bytes.Buffer
	c := exec.Command(name, args...)
	c.Stdout, c.Stderr = &out, &errs
	err := c.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errs.String(), ee.ExitCode()
	} else if err != nil {
		return out.String(), err.Error(), -1
	}
	return out.String(), errs.String(), 0
}

// mustRun runs a command that has to succeed (lab set-up).
func mustRun(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, errs, st := runCmd(name, args...)
	if st != 0 {
		t.Fatalf("%s %s: %d %s%s", name, strings.Join(args, " "), st, out, errs)
	}
	return out
}

// netnsSeq numbers the namespaces this process makes.
var netnsSeq atomic.Int64

// newNetns creates a network namespace for the test and deletes it after.
// $UROUTER_NETNS_PREFIX, if set, goes before its name, so that the tests
// of two work trees can run at once without deleting each other's; a
// number after it, so that tests running in parallel that name theirs
// alike (two labs of one shape) do not share one.
func newNetns(t testing.TB, name string) string {
	t.Helper()
	name = fmt.Sprintf("%s%s-%d", os.Getenv("UROUTER_NETNS_PREFIX"), name, netnsSeq.Add(1))
	runCmd("ip", "netns", "del", name)
	mustRun(t, "ip", "netns", "add", name)
	t.Cleanup(func() {
		// end what still runs in it, then delete it
		if out, _, _ := runCmd("ip", "netns", "pids", name); out != "" {
			for _, p := range strings.Fields(out) {
				var pid int
				_, _ = fmt.Sscan(p, &pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		runCmd("ip", "netns", "del", name)
	})
	mustRun(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name
}

func runCmdIn(in *os.File, name string, args ...string) (stdout, stderr string, status int) {
	var out, errs bytes.Buffer
	c := exec.Command(name, args...)
	c.Stdin, c.Stdout, c.Stderr = in, &out, &errs
	err := c.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errs.String(), ee.ExitCode()
	}
	return out.String(), errs.String(), 0
}

// proc is a program a test started in the background.
type proc struct {
	cmd *exec.Cmd
	out *logBuffer // what it printed, read while it runs too
}

// startIn starts name in namespace ns; stop (also at cleanup) ends it.
func startIn(t testing.TB, ns, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...), out: new(logBuffer)}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	return p
}

func (p *proc) stop() {
	if p.cmd.Process == nil || p.cmd.ProcessState != nil {
		return
	}
	stopGroup(p.cmd, 3*time.Second)
}
