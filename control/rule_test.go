package control

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRuleBatchPausedAndCut: a client streaming rule adds that pauses has
// them published and holds the rule set's lock from no one; one cut off
// mid-line has its whole lines applied and the cut one not.
func TestRuleBatchPausedAndCut(t *testing.T) {
	r := newTestRouter(t)
	sock := startServer(t, r)
	c := dial(t, sock, options{batch: true, batchName: "-", inet6: true})
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(c, "rule add pref %d from 2001:db8:%x::/48 table %d\n", i, i, i)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _, _ := client(sock, options{inet6: true}, "rule show\n")
		if strings.Count(out, "\n") == 52 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rules of a paused batch not published: %q", out)
		}
		time.Sleep(time.Millisecond)
	}
	if _, e, st := client(sock, options{inet6: true}, "rule add pref 99 table 99\n"); st != 0 {
		t.Fatalf("another client's rule add: %q %d", e, st)
	}
	fmt.Fprint(c, "rule add pref 60 table 60\nrule add pref 61 ta") // cut short
	c.Close()
	for {
		out, _, _ := client(sock, options{inet6: true}, "rule show\n")
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

// TestRuleSaveRestore: `rule save` replayed into a fresh router gives back
// the same rules, every selector and action.
func TestRuleSaveRestore(t *testing.T) {
	lines := []string{
		"rule add pref 100 not from 2001:db8:1::/48 to 2001:db8:2::/64 iif d0 oif d1 ipproto tcp sport 80 dport 1000-2000 dsfield 0x10 lookup 10 suppress_prefixlength 0 protocol static",
		"rule add pref 101 from 2001:db8::1 tos 0x20 lookup 4000000000",
		"rule add pref 102 goto 200", "rule add pref 103 nop", "rule add pref 104 to 2001:db8:9::/48 unreachable",
		"rule add pref 105 prohibit", "rule add pref 106 blackhole", "rule add pref 200 iif lo lookup local",
		"rule add from 2001:db8:7::/48 table 7",
	}
	a := newTestRouter(t)
	if _, e, st := run(a, options{batch: true}, lines...); st != 0 {
		t.Fatal(e)
	}
	saved, _, _ := run(a, options{}, "rule save")
	b := newTestRouter(t)
	if _, e, st := run(b, options{batch: true, restore: true}, strings.Split(strings.TrimSuffix(saved, "\n"), "\n")...); st != 0 {
		t.Fatalf("restore: %s", e)
	}
	for _, o := range []options{{}, {json: true}, {details: true}} {
		wa, _, _ := run(a, o, "rule show")
		wb, _, _ := run(b, o, "rule show")
		if wa != wb || strings.Count(wa, "\n") < len(lines) && !o.json {
			t.Fatalf("restored rules differ:\n%s\nwant:\n%s", wb, wa)
		}
	}
}

// TestLongLines: a line longer than the session's read buffer is read
// whole; one longer than 256 KiB is refused and ends the batch.
func TestLongLines(t *testing.T) {
	r := newTestRouter(t)
	sock := startServer(t, r)
	long := "rule add" + strings.Repeat(" ", 100<<10) + "pref 5 table 5\n"
	if _, e, st := client(sock, options{batch: true, batchName: "-"}, long+"rule add pref 6 table 6\n"); st != 0 {
		t.Fatalf("a 100 KiB line: %q %d", e, st)
	}
	out, _, _ := client(sock, options{}, "rule show\n")
	if !strings.Contains(out, "5:\tfrom all lookup 5\n6:\tfrom all lookup 6\n") {
		t.Fatalf("after a 100 KiB line:\n%s", out)
	}
	tooLong := "rule add" + strings.Repeat(" ", 300<<10) + "pref 7 table 7\n"
	if _, e, st := client(sock, options{batch: true, batchName: "-"}, tooLong+"rule add pref 8 table 8\n"); st != 255 || e != "Error: command line too long\n" {
		t.Fatalf("a 300 KiB line: %q %d", e, st)
	}
	if out, _, _ := client(sock, options{}, "rule show\n"); strings.Contains(out, "lookup 7") || strings.Contains(out, "lookup 8") {
		t.Fatalf("after a refused line:\n%s", out)
	}
}
