package integration

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stateShows are the shows a round trip compares.
var stateShows = [][]string{
	{"-d", "link", "show"},
	{"address", "show"},
	{"-6", "route", "show", "table", "all"},
	{"nexthop", "show"},
	{"rule", "show"},
	{"vrf", "show"},
	{"neigh", "show", "nud", "permanent"},
	{"ra", "show"},
	{"sysctl", "-a"},
	{"-j", "save"},
	{"save"},
}

var (
	mirrorIndex = regexp.MustCompile(`(?m)^(\s+mirror \S+) ifindex \d+`)
	expiresN    = regexp.MustCompile(`expires (\d+)`)
	// downQdisc: a link down shows qdisc noop until it first comes up,
	// noqueue after, as Linux's; a router made again from a save (or
	// after an apply that made the link again) has never had it up
	downQdisc = regexp.MustCompile(`qdisc (noop|noqueue) state DOWN`)
)

// showsOf runs every stateShows on d: what a user sees of the router,
// with what another machine numbers otherwise (a mirror's kernel
// ifindex) and what a link down was before (its qdisc) left out.
func showsOf(t *testing.T, d *daemon) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, c := range stateShows {
		out, errs, st := d.run(c...)
		if st != 0 {
			t.Fatalf("%s: %d %s", strings.Join(c, " "), st, errs)
		}
		if c[0] == "-d" {
			out = mirrorIndex.ReplaceAllString(out, "$1")
		}
		out = downQdisc.ReplaceAllString(out, "qdisc noop|noqueue state DOWN")
		m[strings.Join(c, " ")] = out
	}
	return m
}

// sameButExpires reports why a and b differ, "" if they do not: b was
// shown up to elapsed after a, so its remaining seconds of `expires N`
// may be fewer by that much (and one for rounding), never more; nothing
// else may differ.
func sameButExpires(a, b string, elapsed time.Duration) string {
	na, nb := expiresN.ReplaceAllString(a, "expires N"), expiresN.ReplaceAllString(b, "expires N")
	if na != nb {
		return lineDiff(na, nb)
	}
	xa, xb := expiresN.FindAllStringSubmatch(a, -1), expiresN.FindAllStringSubmatch(b, -1)
	for i := range xa {
		ea, _ := strconv.Atoi(xa[i][1])
		eb, _ := strconv.Atoi(xb[i][1])
		if ea-eb > int(elapsed/time.Second)+1 || eb-ea > 1 {
			return fmt.Sprintf("expires %d, then %d, %.1f s later", ea, eb, elapsed.Seconds())
		}
	}
	return ""
}

// lineDiff lists the lines of a not in b and of b not in a.
func lineDiff(a, b string) string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	ca, cb := count(a), count(b)
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if cb[l] == 0 {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if ca[l] == 0 {
			out = append(out, "+ "+l)
		}
	}
	if len(out) == 0 {
		return "the same lines in another order:\n" + a + "\n---\n" + b
	}
	return strings.Join(out, "\n")
}

// compareShows fails t for each show of got that differs from want's,
// which began to be shown at wantAt.
func compareShows(t *testing.T, what string, want map[string]string, wantAt time.Time, got map[string]string) {
	t.Helper()
	elapsed := time.Since(wantAt)
	for _, c := range stateShows {
		k := strings.Join(c, " ")
		if why := sameButExpires(want[k], got[k], elapsed); why != "" {
			t.Errorf("%s: `%s` differs:\n%s", what, k, why)
		}
	}
}

// waitDAD waits until no address on a link up is tentative: the flag is
// the clock's, not the configuration's.
func waitDAD(t *testing.T, d *daemon) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, _, _ := d.run("address", "show")
		if !tentative(out) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("addresses still tentative after 10 s:\n%s", out)
		}
	}
}

// tentative reports whether address show lists an address in DAD on a
// link that is up (on a link down it stays so, as in Linux).
func tentative(addrs string) bool {
	up := false
	for _, l := range strings.Split(addrs, "\n") {
		if m := linkHead.FindStringSubmatch(l); m != nil {
			up = slices.Contains(strings.Split(m[1], ","), "UP")
		} else if up && strings.Contains(l, " tentative") {
			return true
		}
	}
	return false
}

var linkHead = regexp.MustCompile(`^\d+: \S+: <([^>]*)>`)

// numbered is lines with their numbers, as a batch's errors name them.
func numbered(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%3d %s\n", i+1, l)
	}
	return b.String()
}
