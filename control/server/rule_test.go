package server

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
	"time"
	"urouter/control/wire"
)

// TestRuleBatchPausedAndCut: a client streaming rule adds that pauses has
// them published and holds the rule set's lock from no one; one cut off
// mid-line has its whole lines applied and the cut one not.
func TestRuleBatchPausedAndCut(t *testing.T) {
	r := newTestRouter(t)
	sock := startServer(t, r)
	c := dial(t, sock, wire.Options{Batch: true, BatchName: "-", Inet6: true})
	for i := 1; i <= 50; i++ {
		put(t, c, "rule add pref %d from 2001:db8:%x::/48 table %d\n", i, i, i)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _, _ := client(sock, wire.Options{Inet6: true}, "rule show\n")
		if strings.Count(out, "\n") == 52 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rules of a paused batch not published: %q", out)
		}
		time.Sleep(time.Millisecond)
	}
	if _, e, st := client(sock, wire.Options{Inet6: true}, "rule add pref 99 table 99\n"); st != 0 {
		t.Fatalf("another client's rule add: %q %d", e, st)
	}
	put(t, c, "rule add pref 60 table 60\nrule add pref 61 ta") // cut short
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for {
		out, _, _ := client(sock, wire.Options{Inet6: true}, "rule show\n")
		if strings.Contains(out, "60:\tfrom all lookup 60\n") {
			if strings.Contains(out, "61:") {
				t.Fatalf("a line cut short was applied:\n%s", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the last whole line was not applied:\n%s", out)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLongLines: a line longer than the session's read buffer is read
// whole; one longer than 256 KiB is refused and ends the batch.
func TestLongLines(t *testing.T) {
	r := newTestRouter(t)
	sock := startServer(t, r)
	long := "rule add" + strings.Repeat(" ", 100<<10) + "pref 5 table 5\n"
	if _, e, st := client(sock, wire.Options{Batch: true, BatchName: "-"}, long+"rule add pref 6 table 6\n"); st != 0 {
		t.Fatalf("a 100 KiB line: %q %d", e, st)
	}
	out, _, _ := client(sock, wire.Options{}, "rule show\n")
	if !strings.Contains(out, "5:\tfrom all lookup 5\n6:\tfrom all lookup 6\n") {
		t.Fatalf("after a 100 KiB line:\n%s", out)
	}
	tooLong := "rule add" + strings.Repeat(" ", 300<<10) + "pref 7 table 7\n"
	if _, e, st := client(sock, wire.Options{Batch: true, BatchName: "-"}, tooLong+"rule add pref 8 table 8\n"); st != 255 || e != "Error: command line too long\n" {
		t.Fatalf("a 300 KiB line: %q %d", e, st)
	}
	if out, _, _ := client(sock, wire.Options{}, "rule show\n"); strings.Contains(out, "lookup 7") || strings.Contains(out, "lookup 8") {
		t.Fatalf("after a refused line:\n%s", out)
	}
}

// TestRuleClientThatDoesNotRead: a forced batch whose rule adds fail
// (duplicates, inside the rule set's transaction) from a client that
// never reads the errors: the daemon publishes before it waits on the
// client, so the rule set's lock is free and another client's rule add
// goes through at once.
func TestRuleClientThatDoesNotRead(t *testing.T) {
	r := newTestRouter(t)
	sock := startServer(t, r)
	base := slowest(t, sock, wire.Options{Inet6: true}, 20, func(i int) string { return fmt.Sprintf("rule add pref %d table %d", 200+i, 200+i) })
	c := dial(t, sock, wire.Options{Batch: true, Force: true, BatchName: "F", Inet6: true})
	go func() {
		w := bufio.NewWriter(c)
		for i := 0; i < 200000; i++ {
			fmt.Fprint(w, "rule add pref 5 table 5\n") // File exists from the second on
		}
		_ = w.Flush() // the test may be over and the connection closed: what counts is asserted below
	}()
	time.Sleep(300 * time.Millisecond) // the errors fill the socket: the daemon waits on the client
	worst := slowest(t, sock, wire.Options{Inet6: true}, 20, func(i int) string { return fmt.Sprintf("rule add pref %d table %d", 100+i, 100+i) })
	t.Logf("the slowest of 20 rule adds by another client took %v, %v before", worst, base)
	if delayed(worst, base) {
		t.Errorf("another client's rule add waited %v, %v before", worst, base)
	}
}
