package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStateFRRRestart: urouter under FRR, with --state, killed with -9 and
// started again with its state alone. What zebra had given it is in the
// state file (the snapshot written once the feed is quiet), so the
// restarted router has the whole table from its first answer, forwards
// with it while zebra reconnects and replays, and keeps it whole through
// that (zebra says it again; the sweep waits for the hold time). A prefix
// withdrawn while urouter was away is swept once zebra has replayed.
func TestStateFRRRestart(t *testing.T) {
	parallel(t)
	const n = 2000
	state := filepath.Join(t.TempDir(), "urouter.state")
	flags := []string{"--state", state, "--fpm-hold", "20s"}
	start := time.Now()
	l := newFRRLabFlags(t, urouter, flags, n, false, "")
	l.converge(n, start, 60*time.Second)
	waitFor(t, 15*time.Second, "the state's snapshot with zebra's routes", func() bool {
		b, _ := os.ReadFile(state)
		return bytes.Count(b, []byte(" proto bgp ")) >= n
	})

	_ = syscall.Kill(-l.d.cmd.Process.Pid, syscall.SIGKILL)
	_ = l.d.cmd.Wait()
	l.withdraw(0, 9) // while urouter is away
	restart := time.Now()
	l.d = startBinary(t, urouter, l.r, l.d.sock, append([]string{"--fpm", "127.0.0.1:2620"}, flags...))
	answered := time.Since(restart)
	first := count(l.urouterRoutes())
	if first != n {
		t.Fatalf("the restarted router has %d of zebra's %d routes at its first answer\n%s", first, n, l.d.log)
	}
	if err := l.ping("2001:db8:a000:5::1"); err != nil {
		t.Errorf("no forwarding with the table from the state, before zebra is back: %v", err)
	}
	// until zebra has replayed and the hold has passed, the table holds
	least, settled := n, false
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		routes := l.urouterRoutes()
		least = min(least, count(routes)+boolInt(!strings.Contains(routes, prefixOf(9))))
		o, _, _ := l.d.run("fpm", "show")
		if strings.Contains(o, " connected peer") && !strings.Contains(routes, prefixOf(9)) {
			settled = true
			break
		}
	}
	if !settled {
		o, _, _ := l.d.run("fpm", "show")
		t.Fatalf("zebra did not replay and sweep within 45 s:\n%s\n%s", o, l.d.log)
	}
	if least < n {
		t.Errorf("the table fell to %d of %d routes while zebra reconnected", least, n)
	}
	if got := count(l.urouterRoutes()); got != n-1 {
		t.Errorf("%d routes after the sweep, want %d", got, n-1)
	}
	if err := l.ping("2001:db8:a000:5::1"); err != nil {
		t.Error(err)
	}
	t.Logf("restart: %v to the first answer, with %d routes from the state", answered, first)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// waitFor is waitUntil with its own limit.
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
	}
}
