package control

import (
	"regexp"
	"strings"
	"testing"
	"urouter/control/wire"
)

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
	if _, e, st := run(a, wire.Options{Batch: true}, lines...); st != 0 {
		t.Fatal(e)
	}
	saved, _, _ := run(a, wire.Options{}, "rule save")
	b := newTestRouter(t)
	if _, e, st := run(b, wire.Options{Batch: true, Restore: true}, strings.Split(strings.TrimSuffix(saved, "\n"), "\n")...); st != 0 {
		t.Fatalf("restore: %s", e)
	}
	for _, o := range []wire.Options{{}, {JSON: true}, {Details: true}} {
		wa, _, _ := run(a, o, "rule show")
		wb, _, _ := run(b, o, "rule show")
		if wa != wb || strings.Count(wa, "\n") < len(lines) && !o.JSON {
			t.Fatalf("restored rules differ:\n%s\nwant:\n%s", wb, wa)
		}
	}
}

// TestRouteGetExplains: `-d route get` says, step by step, which rules
// the flow met and why each matched or not, what each table gave, and the
// path its hash chose, then prints the answer.
func TestRouteGetExplains(t *testing.T) {
	r := newTestRouter(t)
	if _, e, st := run(r, wire.Options{Batch: true, Inet6: true},
		"route add 2001:db8:5::/48 via 2001:db8:91::2 dev d0 table 10",
		"route add throw 2001:db8:5::/48 table 20",
		"route add default via 2001:db8:91::3 dev d0 table 30",
		"route add 2001:db8:5::/48 from 2001:db8:77::/48 dev d0 table 30",
		"route add 2001:db8:6::/48 table 10 nexthop via 2001:db8:91::4 dev d0 nexthop via 2001:db8:91::5 dev d0",
		"rule add pref 10 from 2001:db8:a::/48 lookup 20",
		"rule add pref 11 iif d0 goto 40",
		"rule add pref 12 lookup 30 suppress_prefixlength 0",
		"rule add pref 20 lookup 10",
		"rule add pref 40 unreachable",
	); st != 0 {
		t.Fatal(e)
	}
	out, _, _ := run(r, wire.Options{Details: true, Inet6: true}, "route get 2001:db8:5::1 from 2001:db8:a::1")
	want := `rule 0: from all lookup local: matches
  table local: no route: on to the next rule
rule 10: from 2001:db8:a::/48 lookup 20: matches
  table 20: throw 2001:db8:5::/48: on to the next rule
rule 11: from all iif d0 goto 40: no match: it comes in by lo, not d0
rule 12: from all lookup 30 suppress_prefixlength 0: matches
  table 30: 2001:db8:5::/48 has routes for other sources only: passed over
  table 30: default via 2001:db8:91::3 dev d0 table 30 proto boot metric 1024 suppressed (prefix length 0 <= suppress_prefixlength 0): on to the next rule
rule 20: from all lookup 10: matches
  table 10: 2001:db8:5::/48 via 2001:db8:91::2 dev d0 table 10 proto boot metric 1024: decides
2001:db8:5::1 from 2001:db8:a::1 via 2001:db8:91::2 dev d0 table 10 src 2001:db8:91::1 metric 1024 pref medium
`
	if out != want {
		t.Errorf("route get -d:\n%s\nwant:\n%s", out, want)
	}
	out, _, _ = run(r, wire.Options{Details: true, Inet6: true}, "route get 2001:db8:6::1")
	if !strings.Contains(out, "rule 10: from 2001:db8:a::/48 lookup 20: no match: the lookup has no source\n") ||
		!regexp.MustCompile(`\n  multipath: flow hash 0x[0-9a-f]{8} selects path [12] of 2: via 2001:db8:91::[45] dev d0\n`).MatchString(out) {
		t.Errorf("route get -d of a multipath route:\n%s", out)
	}
	out, e, _ := run(r, wire.Options{Details: true, Inet6: true}, "route get 2001:db8:6::1 iif d0")
	if !strings.Contains(out, "rule 11: from all iif d0 goto 40: matches\n  goto 40\nrule 40: from all unreachable: matches\n  the rule decides: unreachable\n") ||
		e != "RTNETLINK answers: Network is unreachable\n" {
		t.Errorf("route get -d through a goto to an unreachable rule:\n%s%s", out, e)
	}
}
