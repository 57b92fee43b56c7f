package integration

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKernelOracleKeywords asks iproute2 itself how it reads its words:
// every prefix of every keyword iproute2 6.1 checks (the table that
// tools/iproute2kw reads from its sources) goes, in the place its
// function reads it, to ip in a netns and to urouter, and both must print
// the same and end alike (ok, failed, or ending the batch as ip's exit()
// does). Where urouter lacks a feature (exceptions below), its "not
// supported" stands for ip's answer, but only for the words that pick
// that keyword in iproute2's order of checks.
func TestKernelOracleKeywords(t *testing.T) {
	parallel(t)
	needRoot(t)
	table := readTable(t)
	ns, d := keywordsPair(t)
	var probes []probe
	n := 0
	for i := range sites {
		probes = append(probes, sites[i].probes(t, table, &n)...)
	}
	start := time.Now()
	// Most probes end their batch (ip's exit()), so 1,600 clients start.
	// ip and urouter answer at once, each its own probes in order: they
	// share nothing.
	ipCmd, uCmd := []string{"ip", "-n", ns}, []string{plain, "--socket", d.sock}
	var ka, ua []answer
	ipDir, uDir := t.TempDir(), t.TempDir()
	var wg sync.WaitGroup
	wg.Go(func() { ka = answers(t, ipDir, ipCmd, probes) })
	ua = answers(t, uDir, uCmd, probes)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var inBatch []string
	got := map[int][2]answer{}
	for i, p := range probes {
		if !p.site.alone {
			inBatch = append(inBatch, p.line)
		}
		got[i] = [2]answer{ka[i], ua[i]}
	}
	bad, excused := 0, map[string]int{}
	used := map[string]bool{} // the exceptions that excused a probe, by function and keyword
	for i, p := range probes {
		k, u := got[i][0], got[i][1]
		why, ok := agree(p, k, u)
		if why != "" {
			excused[why]++
			used[p.site.fn+" "+p.picks] = true
		}
		if !ok {
			if bad++; bad <= 60 {
				t.Errorf("%s: %q (cut from %q, picks %q):\n  ip:      %q %q %s\n  urouter: %q %q %s",
					p.site.fn, p.line, p.keyword, p.picks, k.out, k.err, k.end, u.out, u.err, u.end)
			}
		}
	}
	for i := range sites { // an exception nothing needs is one too many
		s := &sites[i]
		for _, m := range []map[string]string{s.unsupported, s.differs} {
			for k := range m {
				if !used[s.fn+" "+k] {
					t.Errorf("%s: the exception for %q excuses no probe: drop it", s.fn, k)
				}
			}
		}
	}
	fns := map[string]bool{}
	kws := map[string]bool{}
	for _, p := range probes {
		fns[p.site.fn] = true
		kws[p.site.fn+" "+p.keyword] = true
	}
	t.Logf("%d probes (%d in batches) of %d keywords at %d call sites in %v; %d disagree; excused: %v",
		len(probes), len(inBatch), len(kws), len(fns), time.Since(start).Round(time.Millisecond), bad, excused)
}

// answers runs probes through one router: those that go alone each as a
// command of its own, in order, then the others in batches (runBatch). It
// returns the answers in probes' order; it may run beside the test's
// goroutine, so it fails t without stopping it.
func answers(t *testing.T, dir string, cmd []string, probes []probe) []answer {
	out := make([]answer, len(probes))
	var inBatch []string
	for i, p := range probes {
		if p.site.alone {
			out[i] = runAlone(cmd, p.line)
			continue
		}
		inBatch = append(inBatch, p.line)
	}
	batched := runBatch(t, dir, cmd, inBatch)
	if len(batched) != len(inBatch) {
		return nil
	}
	j := 0
	for i, p := range probes {
		if !p.site.alone {
			out[i] = batched[j]
			j++
		}
	}
	return out
}

// agree reports whether urouter answered a probe as ip did, and which
// exception, if any, excused a difference.
func agree(p probe, k, u answer) (string, bool) {
	if k == u {
		return "", true
	}
	// help: urouter prints its own usage (its grammar is smaller), where
	// and as ip prints its own
	if strings.HasPrefix(k.err, "Usage:") && strings.HasPrefix(u.err, "Usage:") && k.end == u.end && k.out == u.out {
		return "usage", true
	}
	if why, ok := p.site.differs[p.picks]; ok {
		return why, true
	}
	if !strings.Contains(u.err, "is not supported by this router") {
		return "", false
	}
	if why, ok := p.site.unsupported[p.picks]; ok {
		return why, true
	}
	if p.site.lacks != "" {
		return p.site.lacks, true
	}
	if p.site.fn == "ip/ip.c:cmds[]" && !served[p.picks] && strings.Contains(u.err, fmt.Sprintf("object \"%s\" is not supported", p.picks)) {
		return "an object the router does not serve", true
	}
	return "", false
}

// served are the objects the router has (the others answer that they are
// not supported).
var served = map[string]bool{"address": true, "route": true, "rule": true, "neighbor": true, "neighbour": true,
	"ntable": true, "ntbl": true, "link": true, "monitor": true, "nexthop": true, "help": true}

// site is where a function of iproute2 reads its keywords: the command
// line a probe goes into.
type site struct {
	fn string // FILE:FUNCTION in the table
	// line is the command: {p} is where the probe (a prefix, then the
	// value of the keyword it was cut from) goes, {n} a number of its own
	line string
	// value is what follows each keyword; none for a flag ("-"), "1"
	// where not said
	value map[string]string
	// at are keywords that are another keyword's value, each with the
	// line it is read in ({p} the prefix alone)
	at map[string]string
	// unsupported are the keywords urouter lacks, each with the reason:
	// a word that picks one may be answered "not supported"
	unsupported map[string]string
	// lacks says why urouter lacks the site's whole command: its "not
	// supported" answers every probe
	lacks string
	// differs are commands urouter answers its own way by design, each
	// with the reason: any answer to a word that picks one is taken
	differs map[string]string
	// fallback is the function iproute2 asks of a word none of the
	// site's checks take (a route's type), for what the word picks
	fallback string
	alone    bool            // each probe a command of its own (reads stdin, or waits)
	flag     bool            // no keyword takes a value
	skip     map[string]bool // keywords not probed here
	only     map[string]bool // if set, the only keywords probed here
}

// probes are the site's probes: each keyword of its function, each
// prefix, once.
func (s *site) probes(t *testing.T, table []check, n *int) []probe {
	var checks, fallback []check
	for _, c := range table {
		if c.fn == s.fn {
			checks = append(checks, c)
		}
		if c.fn == s.fallback {
			fallback = append(fallback, c)
		}
	}
	if len(checks) == 0 {
		t.Fatalf("no checks of %s in the table", s.fn)
	}
	var out []probe
	seen := map[string]bool{}
	for _, c := range checks {
		if s.skip[c.keyword] || s.only != nil && !s.only[c.keyword] {
			continue
		}
		for l := 1; l <= len(c.keyword); l++ {
			w := c.keyword[:l]
			line := s.line
			probeText := w
			atLine, at := s.at[c.keyword]
			if at {
				line = atLine
			} else if v := s.valueOf(c.keyword); v != "-" {
				probeText = w + " " + v
			}
			line = strings.Replace(line, "{p}", probeText, 1)
			if seen[line] {
				continue
			}
			seen[line] = true
			*n++
			line = strings.ReplaceAll(line, "{n}", fmt.Sprint(*n))
			p := probe{site: s, word: w, keyword: c.keyword, line: line, picks: s.picks(checks, w, at)}
			if p.picks == "" && !at {
				p.picks = (&site{}).picks(fallback, w, false)
			}
			if s.only != nil && !s.only[p.picks] {
				continue // another site's
			}
			out = append(out, p)
		}
	}
	return out
}

// picks is the keyword iproute2's checks, in source order, pick for w:
// among the site's keywords, or (at) among those read as a value.
func (s *site) picks(checks []check, w string, at bool) string {
	for _, c := range checks {
		if _, isValue := s.at[c.keyword]; isValue == at && c.fits(w) {
			return c.keyword
		}
	}
	return ""
}

func (s *site) valueOf(k string) string {
	if s.flag {
		return "-"
	}
	if v, ok := s.value[k]; ok {
		return v
	}
	return "1"
}

// keywordsPair is a netns and a daemon alike: d0 (a veth in the netns, a
// host link on a veth of urouter's own netns), d1 and d2 veths and dummies, the addresses of d0 and d1, nexthop 1, and table 250's route
// (the batches' mark).
func keywordsPair(t *testing.T) (string, *daemon) {
	ns := newNetns(t, "uro-kw")
	rns := newNetns(t, "uro-kw-r")
	for _, n := range []string{ns, rns} {
		mustRun(t, "ip", "netns", "exec", n, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
	}
	for _, l := range []string{"d0", "d1", "d2"} { // veths: this kernel may lack dummy
		mustRun(t, "ip", "-n", ns, "link", "add", l, "type", "veth", "peer", "name", l+"peer")
		mustRun(t, "ip", "-n", ns, "link", "set", l+"peer", "up")
	}
	mustRun(t, "ip", "-n", rns, "link", "add", "h0", "type", "veth", "peer", "name", "h0peer")
	mustRun(t, "ip", "-n", rns, "link", "set", "h0peer", "up")
	setup := []string{"link set d0 up", "link set d1 up", "address add 2001:db8:91::1/64 dev d0",
		"address add 2001:db8:92::1/64 dev d1", "nexthop add id 1 via 2001:db8:91::2 dev d0",
		"route add unreachable 2001:db8:ffff::/48 table 250"}
	for _, c := range setup {
		mustRun(t, "ip", append([]string{"-n", ns, "-6"}, strings.Fields(c)...)...)
	}
	conf := append([]string{"link add d0 type host dev h0", "link add d1 type dummy", "link add d2 type dummy"}, setup...)
	return ns, startDaemon(t, rns, conf...)
}
