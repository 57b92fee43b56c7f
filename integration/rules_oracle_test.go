package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKernelOracleRules asks the kernel about policy rules: the rule
// commands of iproute2 (their output, -j, -d and errors), then random rule
// sets over random tables, built alike in a netns with ip and in urouter,
// and `route get` of many random flows (sources, iif, oif, ports, tos)
// through both; every answer must be the same.
func TestKernelOracleRules(t *testing.T) {
	needRoot(t)
	ns, d := rulesPair(t, "uro-rules")
	six := func(args []string) []string { return append([]string{"-6"}, args...) }

	askBoth(t, ns, d, ruleOracle, six)

	randomRuleRounds(t)

}

// ruleOracle are the rule commands TestKernelOracleRules asks both routers,
// in order.
var ruleOracle = []string{
	"rule show", "-j rule show", "-d rule show", "-d -j rule show",
	"rule add from all table 10", "rule add from all table 11", "rule show",
	"rule add pref 100 not from 2001:db8:1::/48 to 2001:db8:2::/64 iif d0 oif d1 ipproto tcp sport 80 dport 1000-2000 dsfield 0x10 lookup 10 suppress_prefixlength 0 protocol static",
	"rule add pref 101 from 2001:db8::1 tos 0x20 lookup 20", "rule add pref 102 to :: iif nosuch ipproto 58 lookup 4000000000",
	"rule add pref 103 from 2001:db8::1/64 sport 7-8 lookup main", "rule add pref 104 goto 200", "rule add pref 105 nop",
	"rule add pref 106 unreachable", "rule add pref 107 prohibit", "rule add pref 108 blackhole", "rule add pref 109 protocol 99",
	"rule show", "-j rule show", "-d rule show", "-j -p rule show",
	"rule add pref 200 table 10", "rule show pref 104", "rule del pref 200", "rule show pref 104",
	"rule show from 2001:db8::/32", "rule show iif d0", "rule show lookup 10", "rule show not", "rule show to 2001:db8:2::/64",
	// what they refuse
	"rule add pref 100 not from 2001:db8:1::/48 to 2001:db8:2::/64 iif d0 oif d1 ipproto tcp sport 80 dport 1000-2000 dsfield 0x10 lookup 10 suppress_prefixlength 0 protocol static",
	"rule add pref 300 goto 200", "rule add tos 0x11 table 3", "rule add dsfield 0x100 table 3", "rule add sport 0 table 3",
	"rule add sport 2000-1000 table 3", "rule add dport 65535 table 3", "rule add from 2001:db8::1/129 table 3",
	"rule add from 1.2.3.4 table 3", "rule add iif aaaaaaaaaaaaaaaaa table 3", "rule add pref -1 table 3",
	"rule add pref 4294967296 table 3", "rule add foo", "rule add ipproto bogus table 3", "rule add protocol bogus table 3",
	"rule add suppress_prefixlength -1 table 3", "rule add table 0", "rule add type unicast", "rule add goto abc",
	"rule add", "rule del", "rule del pref 555", "rule del from 2001:db8:1::/48", "rule del table 11", "rule show",
	"rule show bogus", "rule flush table 10", "rule show", "rule flush", "rule show", "rule blah",
	"rule add pref 32766 lookup main", "-d rule show",
	// a gateway not in the route's table is looked up through the rules,
	// out of its link, as the router's own packets would be (iif none)
	"route add 2001:db8:5::/48 via 2001:db8:91::1 dev d0", "route add 2001:db8:5::/48 via 2001:db8:91::1 table 10",
	"rule add pref 500 lookup 10", "route add default via 2001:db8:91::9 dev d0 table 10",
	"route add 2001:db8:7::/48 via 2001:db8:91::2 dev d0 table 20", "route add 2001:db8:7::/48 via 2001:db8:91::2 table 21",
	"rule del pref 500", "route add 2001:db8:7::/48 via 2001:db8:91::2 dev d0 table 22",
	"rule add pref 50 iif lo lookup 30", "route add unreachable 2001:db8:91::/64 table 30",
	"route add 2001:db8:8::/48 via 2001:db8:91::2 dev d0 table 23",
	"rule add pref 40 oif d0 lookup 31", "route add prohibit 2001:db8:91::/64 table 31",
	"route add 2001:db8:9::/48 via 2001:db8:91::2 dev d0 table 24", "route add 2001:db8:9::/48 via 2001:db8:92::2 table 25",
	"route show table 22", "route show table 23", "route show table 24", "route show table 25",
}

// randomRuleRounds builds random rules and routes, alike in a netns and in
// urouter, and compares their answers for random flows, as batches.
func randomRuleRounds(t *testing.T) {
	dir := t.TempDir()
	batch := func(name string, lines []string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	both := func(ns string, d *daemon, what, file string) {
		t.Helper()
		args := []string{"-6", "-force", "-batch", file}
		kout, kerr, kst := runCmd("ip", append([]string{"-n", ns}, args...)...)
		uout, uerr, ust := d.run(args...)
		if kout != uout || kerr != uerr || kst != ust {
			t.Errorf("%s differ:\n%s", what, diffLines(kout+kerr, uout+uerr))
		}
	}
	// each round on a fresh pair: a flush keeps the rules of preference
	// 0, which would pile up
	g := oracleGen{rand.New(rand.NewPCG(11, 12))}
	seen, answers := map[string]bool{}, map[string]bool{}
	for round := 0; round < 6; round++ {
		ns, d := rulesPair(t, fmt.Sprintf("uro-rules%d", round))
		both(ns, d, "routes", batch("routes", append(g.routes(80), "route add unreachable 2001:db8:ffff::/48 table 250")))
		both(ns, d, fmt.Sprintf("round %d rules", round), batch(fmt.Sprintf("rules%d", round), append(g.rules(40), "rule show")))
		flows := g.flows(300)
		file := batch(fmt.Sprintf("flows%d", round), withMarks(flows))
		args := []string{"-6", "-force", "-batch", file}
		kout, kerr, _ := runCmd("ip", append([]string{"-n", ns}, args...)...)
		uout, uerr, _ := d.run(args...)
		k, u := perFlow(kout, kerr, len(flows)), perFlow(uout, uerr, len(flows))
		bad := 0
		kinds := map[string]bool{}
		for i := range flows {
			answers[k[i]] = true
			for _, w := range []string{"table 10 ", "table 20 ", "table 30 ", "unreachable", "denied", "Invalid", "iif d"} {
				if strings.Contains(k[i], w) {
					kinds[w] = true
				}
			}
			if k[i] != u[i] && bad < 10 {
				bad++
				t.Errorf("round %d: %s\n  ip:      %q\n  urouter: %q", round, flows[i], k[i], u[i])
				if bad == 1 {
					o1, _, _ := runCmd("ip", "-n", ns, "-6", "rule")
					o2, _, _ := runCmd("ip", "-n", ns, "-6", "route", "show", "table", "main")
					o3, _, _ := d.run("-6", "rule")
					t.Logf("kernel rules:\n%s\nmain:\n%s\nurouter rules:\n%s", o1, o2, o3)
				}
			}
		}
		for w := range kinds {
			seen[w] = true
		}
		if len(kinds) < 3 {
			t.Errorf("round %d: the flows met only %v: too few kinds of answer to compare", round, kinds)
		}
	}
	if len(seen) < 7 || len(answers) < 300 {
		t.Errorf("the flows met only %v in %d answers: too little to compare", seen, len(answers))
	}
}

// markOut is what mark prints: the one route of table 250.
const markOut = "unreachable 2001:db8:ffff::/48 dev lo metric 1024 pref medium\n"

// mark separates the answers of a batch of route gets: a command both
// answer alike, on standard output.
const mark = "route show table 250"

func withMarks(cmds []string) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, c, mark)
	}
	return out
}

// perFlow splits a marked batch's output into each command's answer: what
// it printed, or the error it failed with.
func perFlow(stdout, stderr string, n int) []string {
	ans := make([]string, n)
	chunks := strings.Split(stdout, markOut)
	for i := 0; i < n && i < len(chunks); i++ {
		ans[i] = chunks[i]
	}
	var msg []string
	for _, l := range strings.Split(stderr, "\n") {
		if i := strings.LastIndex(l, ":"); strings.HasPrefix(l, "Command failed ") && i > 0 {
			var line int
			_, _ = fmt.Sscan(l[i+1:], &line)
			if f := (line - 1) / 2; f < n {
				ans[f] += strings.Join(msg, "\n")
			}
			msg = nil
			continue
		}
		msg = append(msg, l)
	}
	return ans
}

// rulesPair is a netns and a daemon alike: links d0 and d1 (veths in the
// netns, dummies in urouter), up, with an address each.
func rulesPair(t *testing.T, name string) (string, *daemon) {
	ns := newNetns(t, name)
	mustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
	conf := []string{}
	for i, l := range []string{"d0", "d1"} {
		mustRun(t, "ip", "-n", ns, "link", "add", l, "type", "veth", "peer", "name", l+"peer")
		mustRun(t, "ip", "-n", ns, "link", "set", l, "up")
		mustRun(t, "ip", "-n", ns, "link", "set", l+"peer", "up")
		a := fmt.Sprintf("2001:db8:9%d::1/64", i+1)
		mustRun(t, "ip", "-n", ns, "-6", "addr", "add", a, "dev", l)
		conf = append(conf, "link add "+l+" type dummy", "link set "+l+" up", "address add "+a+" dev "+l)
	}
	return ns, startDaemon(t, "", conf...)
}

// oracleGen draws rules, routes and flows from a few values each, so
// that they meet often.
type oracleGen struct{ rnd *rand.Rand }

func (g oracleGen) pick(xs ...string) string { return xs[g.rnd.IntN(len(xs))] }

func (g oracleGen) routes(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		dst := g.pick("2001:db8::/32", "default", fmt.Sprintf("2001:db8:%d::/48", g.rnd.IntN(8)),
			fmt.Sprintf("2001:db8:%d:%d::/64", g.rnd.IntN(8), g.rnd.IntN(3)))
		typ := g.pick("", "", "", "throw ", "unreachable ", "prohibit ", "blackhole ")
		how := ""
		if typ == "" {
			how = g.pick(" via 2001:db8:91::2 dev d0", " via 2001:db8:92::2 dev d1", " dev d0", " dev d1")
		}
		out = append(out, "route add "+typ+dst+how+" table "+g.pick("10", "20", "30", "main"))
	}
	return out
}

func (g oracleGen) rules(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		w := []string{"rule add"}
		pref := 1 + g.rnd.IntN(150)
		if g.rnd.IntN(6) > 0 {
			w = append(w, fmt.Sprintf("pref %d", pref))
		}
		maybe := func(k int, s string) {
			if g.rnd.IntN(k) == 0 {
				w = append(w, s)
			}
		}
		maybe(8, "not")
		maybe(3, "from "+g.pick("2001:db8:a::/48", "2001:db8:b::/48", "2001:db8::/32", "2001:db8:91::/64"))
		maybe(4, "to "+g.pick("2001:db8:1::/48", "2001:db8:2::/48", "2001:db8::/33", "2001:db8:3:1::/64"))
		maybe(4, "iif "+g.pick("d0", "d1", "lo", "nosuch"))
		maybe(8, "oif "+g.pick("d0", "d1"))
		if g.rnd.IntN(4) == 0 {
			w = append(w, "ipproto "+g.pick("udp", "tcp"))
			maybe(2, "sport "+g.pick("1000-2000", "53", "80"))
			maybe(2, "dport "+g.pick("1000-2000", "53", "80", "3000-4000"))
		}
		maybe(8, "tos "+g.pick("0x10", "0x20"))
		switch g.rnd.IntN(10) {
		case 0:
			w = append(w, fmt.Sprintf("goto %d", pref+1+g.rnd.IntN(30)))
		case 1:
			w = append(w, "nop")
		case 2: // a reject rule selects, or it decides every flow after it
			if len(w) < 3 {
				w = append(w, "to "+g.pick("2001:db8:1::/48", "2001:db8:2::/48", "2001:db8:3:1::/64"))
			}
			w = append(w, g.pick("unreachable", "prohibit", "blackhole"))
		default:
			if len(w) < 3 && g.rnd.IntN(2) == 0 {
				w = append(w, "from "+g.pick("2001:db8:a::/48", "2001:db8:b::/48"))
			}
			w = append(w, "lookup "+g.pick("10", "20", "30", "main", "local", "40"))
			maybe(4, "suppress_prefixlength "+g.pick("0", "32", "48", "63"))
		}
		out = append(out, strings.Join(w, " "))
	}
	return out
}

func (g oracleGen) flows(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		w := []string{fmt.Sprintf("route get 2001:db8:%d:%d::%d", g.rnd.IntN(8), g.rnd.IntN(3), 1+g.rnd.IntN(9))}
		if g.rnd.IntN(3) > 0 {
			w = append(w, "from "+g.pick("2001:db8:a::1", "2001:db8:b::7", "2001:db8:91::1", "2001:db8:c::1"))
		}
		switch g.rnd.IntN(4) {
		case 0:
			w = append(w, "iif "+g.pick("d0", "d1"))
		case 1:
			w = append(w, "oif "+g.pick("d0", "d1"))
		}
		if g.rnd.IntN(2) == 0 {
			w = append(w, "ipproto "+g.pick("udp", "tcp"), "sport "+g.pick("1500", "53", "80", "9"), "dport "+g.pick("1500", "53", "80", "3500"))
		}
		if g.rnd.IntN(4) == 0 {
			w = append(w, "tos "+g.pick("0x10", "0x20", "0x21"))
		}
		out = append(out, strings.Join(w, " "))
	}
	return out
}

// diffLines shows the lines where two outputs part.
func diffLines(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < max(len(x), len(y)) && len(out) < 20; i++ {
		var l, r string
		if i < len(x) {
			l = x[i]
		}
		if i < len(y) {
			r = y[i]
		}
		if l != r {
			out = append(out, fmt.Sprintf("  line %d\n    ip:      %q\n    urouter: %q", i+1, l, r))
		}
	}
	return strings.Join(out, "\n")
}
