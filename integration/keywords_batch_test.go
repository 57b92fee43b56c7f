package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The keyword table: what tools/iproute2kw read from iproute2's
// sources, and the probes TestKernelOracleKeywords builds from it.

// check is one comparison of a word with a keyword in iproute2's source.
type check struct {
	fn      string // FILE:FUNCTION
	prefix  bool   // matches(): any non-empty prefix; else strcmp(): the word alone
	keyword string
}

// readTable reads the generated table, in source order.
func readTable(t *testing.T) []check {
	f, err := os.Open("testdata/iproute2-6.1-keywords.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read only
	var out []check
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		c := strings.Split(l, "\t")
		if len(c) != 7 {
			t.Fatalf("table line %q: want 7 columns", l)
		}
		out = append(out, check{c[0] + ":" + c[1], c[3] == "matches", c[6]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// fits reports whether iproute2's check takes word.
func (c check) fits(word string) bool {
	if !c.prefix {
		return word == c.keyword
	}
	return word != "" && strings.HasPrefix(c.keyword, word)
}

// probe is one command line, what ip and urouter must answer alike.
type probe struct {
	site    *site
	word    string // the prefix probed
	keyword string // the keyword it was cut from
	line    string
	picks   string // the keyword iproute2's first fitting check picks, "" for none
}

// answer is what one router made of a probe: its output, its errors and
// how it ended (ok, failed: the batch went on, or exit N: ip's exit(),
// which ends a batch, or a single command's status).
type answer struct {
	out, err, end string
}

// Marks separate the probes of a batch: markOut on standard output (the
// one route of table 250), markErr's failure on standard error.
const (
	markOutCmd = "route show table 250"
	markErrCmd = "zzmark"
	markErr    = `Object "zzmark" is unknown, try "ip help".`
)

// runBatch runs lines through one router (cmd prefixes the batch flags)
// as -force batches, and returns each line's answer (nil, t failed, if
// it could not). ip ends a batch at a
// parse error (its exit(-1)): the next batch starts after that line.
func runBatch(t *testing.T, dir string, cmd []string, lines []string) []answer {
	out := make([]answer, 0, len(lines))
	for part := 0; len(out) < len(lines); part++ {
		rest := lines[len(out):]
		var b strings.Builder
		for _, l := range rest {
			fmt.Fprintf(&b, "%s\n%s\n%s\n", l, markOutCmd, markErrCmd)
		}
		file := filepath.Join(dir, "batch")
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
			return nil
		}
		stdout, stderr, st := runCmd(cmd[0], append(cmd[1:], "-6", "-force", "-batch", file)...)
		outs := strings.Split(stdout, markOut)
		errs := splitErrs(stderr)
		n := 0
		for ; n < len(rest) && n < len(errs)-1 && n < len(outs)-1; n++ {
			out = append(out, ended(outs[n], errs[n], 3*n+1, ""))
		}
		if n == len(rest) {
			break
		}
		// the batch ended inside line n: what it printed last is its answer
		o, e := "", ""
		if n < len(outs) {
			o = outs[n]
		}
		if n < len(errs) {
			e = errs[n]
		}
		out = append(out, ended(o, e, 3*n+1, fmt.Sprintf("exit %d", st)))
		if part > len(lines) {
			t.Errorf("%s: batches do not advance", cmd[0])
			return nil
		}
	}
	return out
}

// splitErrs cuts a batch's standard error at each markErr failure (the
// mark's message and its "Command failed" line go).
func splitErrs(s string) []string {
	var parts []string
	var cur []string
	ls := strings.Split(s, "\n")
	for i := 0; i < len(ls); i++ {
		if ls[i] == markErr && i+1 < len(ls) && strings.HasPrefix(ls[i+1], "Command failed ") {
			parts = append(parts, strings.Join(cur, "\n"))
			cur = nil
			i++
			continue
		}
		cur = append(cur, ls[i])
	}
	return append(parts, strings.Join(cur, "\n"))
}

// ended is a probe's answer from its part of the batch: a "Command
// failed" for its line says it failed (and goes), end overrides.
func ended(o, e string, line int, end string) answer {
	a := answer{out: o, end: "ok"}
	var keep []string
	for _, l := range strings.Split(e, "\n") {
		if strings.HasPrefix(l, "Command failed ") && strings.HasSuffix(l, fmt.Sprintf(":%d", line)) {
			a.end = "failed"
			continue
		}
		keep = append(keep, l)
	}
	a.err = strings.TrimSuffix(strings.Join(keep, "\n"), "\n")
	if end != "" {
		a.end = end
	}
	return a
}

// runAlone runs one probe as a command of its own, stdin empty (restore
// and showdump read it; monitor would wait on events).
func runAlone(cmd []string, line string) answer {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var o, e strings.Builder
	c := exec.CommandContext(ctx, cmd[0], append(append(cmd[1:], "-6"), strings.Fields(line)...)...)
	c.Stdout, c.Stderr = &o, &e
	err := c.Run()
	st := 0
	if ee, ok := err.(*exec.ExitError); ok {
		st = ee.ExitCode()
	} else if err != nil {
		st = -1
	}
	return answer{out: o.String(), err: strings.TrimSuffix(e.String(), "\n"), end: fmt.Sprintf("exit %d", st)}
}
