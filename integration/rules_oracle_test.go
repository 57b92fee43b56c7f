package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestKernelOracleRules asks the kernel about policy rules: the rule
// commands of iproute2 (their output, -j, -d and errors), lookups with an
// output link (oifOracle), then random rule sets over random tables,
// built alike in a netns with ip and in urouter, and `route get` of many
// random flows (sources, iif, oif, ports, tos) through both; every answer
// must be the same.
func TestKernelOracleRules(t *testing.T) {
	parallel(t)
	needRoot(t)
	ns, d := rulesPair(t, "uro-rules")
	six := func(args []string) []string { return append([]string{"-6"}, args...) }

	askBoth(t, ns, d, ruleOracle, six)
	ns, d = rulesPair(t, "uro-oif")
	linkLocal(t, ns, d)
	askBoth(t, ns, d, oifOracle, six)

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
// urouter, and compares their answers for random flows, as batches. Each
// round has its own seed; round 0 has no rules of its own (Linux's
// lookup without custom rules: local, then main). $UROUTER_ORACLE_SEED
// and $UROUTER_ORACLE_ROUNDS draw other rounds, or more.
func randomRuleRounds(t *testing.T) {
	dir := t.TempDir()
	batch := func(name string, lines []string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	both := func(ns string, d *daemon, what, file string, lines []string) {
		t.Helper()
		args := []string{"-6", "-force", "-batch", file}
		kout, kerr, kst := runCmd("ip", append([]string{"-n", ns}, args...)...)
		uout, uerr, ust := d.run(args...)
		if kout != uout || kerr != uerr || kst != ust {
			t.Errorf("%s differ:\n%s", what, diffLines(failedLines(kout+kerr, lines), failedLines(uout+uerr, lines)))
		}
	}
	seed, rounds := envInt(t, "UROUTER_ORACLE_SEED", 11), envInt(t, "UROUTER_ORACLE_ROUNDS", 10)
	seen, answers := map[string]bool{}, map[string]bool{}
	probes, oifs, differ := 0, 0, 0
	// each round on a fresh pair: a flush keeps the rules of preference
	// 0, which would pile up
	for round := 0; round < rounds; round++ {
		g := oracleGen{rand.New(rand.NewPCG(uint64(seed), uint64(round)))}
		ns, d := rulesPair(t, fmt.Sprintf("uro-rules%d", round))
		linkLocal(t, ns, d)
		routes := append(g.routes(120), "route add unreachable 2001:db8:ffff::/48 table 250")
		both(ns, d, "routes", batch("routes", routes), routes)
		made := routes
		if round > 0 {
			rules := append(g.rules(40), "rule show")
			both(ns, d, fmt.Sprintf("round %d rules", round), batch(fmt.Sprintf("rules%d", round), rules), rules)
			made = append(made, rules...)
		}
		flows := g.flows(1000)
		file := batch(fmt.Sprintf("flows%d", round), withMarks(flows))
		args := []string{"-6", "-force", "-batch", file}
		kout, kerr, _ := runCmd("ip", append([]string{"-n", ns}, args...)...)
		uout, uerr, _ := d.run(args...)
		k, u := perFlow(kout, kerr, len(flows)), perFlow(uout, uerr, len(flows))
		bad := 0
		kinds := map[string]bool{}
		for i := range flows {
			probes++
			if strings.Contains(flows[i], " oif ") {
				oifs++
			}
			answers[k[i]] = true
			for _, w := range []string{"table 10 ", "table 20 ", "table 30 ", "unreachable", "denied", "Invalid", "iif d"} {
				if strings.Contains(k[i], w) {
					kinds[w] = true
				}
			}
			if k[i] == u[i] || kernelMroute(k[i]) {
				continue
			}
			differ++
			if bad++; bad <= 10 {
				t.Errorf("seed %d round %d: %s\n  ip:      %q\n  urouter: %q", seed, round, flows[i], k[i], u[i])
			}
			if bad == 1 {
				o1, _, _ := runCmd("ip", "-n", ns, "-6", "rule")
				o2, _, _ := runCmd("ip", "-n", ns, "-6", "route", "show", "table", "all")
				t.Logf("kernel rules:\n%s\nroutes:\n%s\nmade by:\n%s", o1, o2, strings.Join(made, "\n"))
			}
		}
		for w := range kinds {
			seen[w] = true
		}
		if len(kinds) < 3 { // a rule early on may decide nearly everything: the rounds together must not
			t.Logf("round %d: the flows met only %v", round, kinds)
		}
	}
	t.Logf("%d flows (%d with an oif), %d answered otherwise", probes, oifs, differ)
	if len(seen) < 7 || len(answers) < 300 {
		t.Errorf("the flows met only %v in %d answers: too little to compare", seen, len(answers))
	}
}

// envInt is the number in environment variable name, or def.
func envInt(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

// linkLocal gives both routers the same link-local and multicast routes,
// so that flows to those destinations compare too: fe80::/64 on each link
// (no link-local addresses: rulesPair's netns generates none), and no
// multicast routes (Linux's ff00::/8 per link, which urouter has not).
func linkLocal(t *testing.T, ns string, d *daemon) {
	mustRun(t, "ip", "-n", ns, "-6", "route", "flush", "table", "local", "type", "multicast")
	for _, c := range []string{"route add fe80::/64 dev d0 proto kernel metric 256", "route append fe80::/64 dev d1 proto kernel metric 256"} {
		mustRun(t, "ip", append([]string{"-n", ns, "-6"}, strings.Fields(c)...)...)
		if out, errs, st := d.run(append([]string{"-6"}, strings.Fields(c)...)...); st != 0 {
			t.Fatalf("urouter %s: %s%s", c, out, errs)
		}
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
	// no duplicate address detection, and no link-local addresses (urouter
	// has none either)
	mustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0",
		"net.ipv6.conf.default.addr_gen_mode=1")
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

// failedLines is a batch's output with the command each "Command failed
// FILE:N" names after it.
func failedLines(out string, lines []string) string {
	ls := strings.Split(out, "\n")
	for i, l := range ls {
		var n int
		if j := strings.LastIndex(l, ":"); strings.HasPrefix(l, "Command failed ") && j > 0 {
			if _, err := fmt.Sscan(l[j+1:], &n); err == nil && n >= 1 && n <= len(lines) {
				ls[i] += ": " + lines[n-1]
			}
		}
	}
	return strings.Join(ls, "\n")
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
