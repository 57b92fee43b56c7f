package fib6

import (
	"net/netip"
	"testing"

	"urouter/nexthop"
)

// on is a Score as route get's oif makes it: 2 for a route out of link,
// else 0, or -1 if strict.
func on(link int32, strict bool) Score {
	return func(a *Attrs) int {
		switch {
		case a.Nexthop.Link == link:
			return 2
		case strict:
			return -1
		}
		return 0
	}
}

func scoreTable(t *testing.T, routes ...Route) *Table {
	t.Helper()
	tab := newTable(100, nil)
	x := tab.Begin()
	for _, rt := range routes {
		if err := x.Append(rt); err != nil {
			t.Fatal(err)
		}
	}
	x.Commit()
	return tab
}

func via(dst, src string, metric uint32, link int32) Route {
	rt := Route{Dst: netip.MustParsePrefix(dst), Attrs: Attrs{Metric: metric, Nexthop: nexthop.Nexthop{Link: link}}}
	if src != "" {
		rt.Src = netip.MustParsePrefix(src)
	}
	return rt
}

// TestScoreChoose: among a prefix's routes a lookup with a link takes the
// first of the best score among those of the lowest metric, and looks at
// higher metrics only if none of those scores (Linux's find_rr_leaf).
func TestScoreChoose(t *testing.T) {
	tab := scoreTable(t, via("2001:db8::/32", "", 10, 1), via("2001:db8::/32", "", 10, 2), via("2001:db8::/32", "", 20, 3))
	if !tab.trie.lookup(&[16]byte{0x20, 0x01, 0x0d, 0xb8}).choice {
		t.Error("two routes of one metric: the prefix says there is no choice")
	}
	cases := []struct {
		score  Score
		link   int32
		metric uint32
	}{
		{nil, 1, 10},
		{on(2, false), 2, 10}, // preferred within the metric
		{on(3, false), 1, 10}, // not from a higher metric
		{on(3, true), 3, 20},  // strict: from a higher metric
		{on(2, true), 2, 10},
	}
	for i, c := range cases {
		_, a, ok := tab.Get(netip.MustParseAddr("2001:db8::1"), netip.Addr{}, c.score)
		if !ok || a.Nexthop.Link != c.link || a.Metric != c.metric {
			t.Errorf("case %d: got %+v, want link %d metric %d", i, a, c.link, c.metric)
		}
	}
	if _, _, ok := tab.Get(netip.MustParseAddr("2001:db8::1"), netip.Addr{}, on(4, true)); ok {
		t.Error("strict on a link no route leaves by: found one")
	}
}

// TestScoreBacktrack: a strict lookup that finds nothing at its prefix
// backtracks to shorter ones, and one with source routes (Linux's subtree)
// then shows it its plain routes, which a lookup landing on it directly
// from another source does not see (fib6_backtrack).
func TestScoreBacktrack(t *testing.T) {
	tab := scoreTable(t,
		via("2001:db8::/32", "", 1024, 1), via("2001:db8::/32", "2001:db8:aa::/48", 1024, 3),
		via("2001:db8:1::/48", "", 1024, 2), via("::/0", "", 10, 1))
	cases := []struct {
		dst, src string
		score    Score
		pfx      string
	}{
		{"2001:db8:1::1", "", nil, "2001:db8:1::/48"},
		{"2001:db8:1::1", "", on(1, true), "2001:db8::/32"}, // up from the /48, into the /32's plain routes
		{"2001:db8:2::1", "", on(1, true), "::/0"},          // the /32's plain routes hidden
		{"2001:db8:2::1", "", nil, "::/0"},
		{"2001:db8:2::1", "2001:db8:aa::1", on(1, true), "2001:db8::/32"}, // its source route fails, its plain one does not
		{"2001:db8:2::1", "2001:db8:aa::1", on(3, true), "2001:db8::/32"},
	}
	for i, c := range cases {
		var src netip.Addr
		if c.src != "" {
			src = netip.MustParseAddr(c.src)
		}
		p, a, ok := tab.Get(netip.MustParseAddr(c.dst), src, c.score)
		if !ok || p != netip.MustParsePrefix(c.pfx) {
			t.Errorf("case %d: %s from %q found %v %+v, want %s", i, c.dst, c.src, p, a, c.pfx)
		}
	}
}
