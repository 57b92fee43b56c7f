package fib6

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"urouter/internal/racebuild"
	"urouter/nexthop"
)

// flushRoutes are n routes of a few kinds: single paths on two links, a
// multipath group, routes that expire, source-specific ones, and a
// second route (metric) on some destinations.
func flushRoutes(n int) []Route {
	gw := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	g := nexthop.NewGroup([]nexthop.Member{
		{Nexthop: nexthop.Nexthop{Gateway: gw("fe80::1"), Link: 1}, Weight: 1},
		{Nexthop: nexthop.Nexthop{Gateway: gw("fe80::2"), Link: 2}, Weight: 1},
	})
	later := time.Now().Add(time.Hour).UnixNano()
	var rs []Route
	for i := 0; len(rs) < n; i++ {
		r := Route{Dst: netip.MustParsePrefix(fmt.Sprintf("2001:db8:%x:%x::/64", i/1000, i%1000))}
		r.Metric, r.Type, r.Proto = 1024, Unicast, ProtoBoot
		switch i % 7 {
		case 0, 1, 2:
			r.Nexthop = nexthop.Nexthop{Gateway: gw("fe80::1"), Link: 1}
		case 3:
			r.Nexthop = nexthop.Nexthop{Link: 2}
		case 4:
			r.Group = g
		case 5:
			r.Nexthop = nexthop.Nexthop{Link: 1}
			r.Expires = later + int64(i)
		case 6:
			r.Nexthop = nexthop.Nexthop{Link: 1}
			r.Src = netip.MustParsePrefix("2001:db8:ffff::/48")
		}
		rs = append(rs, r)
		if i%5 == 0 && len(rs) < n {
			r2 := r
			r2.Metric = 2048
			rs = append(rs, r2)
		}
	}
	return rs
}

func routeKey(r Route) string { return fmt.Sprintf("%v %+v", r.Dst, r.Attrs) }

// TestFlushAll: a flush of a big table publishes an empty one, its
// watcher hears every route deleted (from the version it emptied), the
// table keeps nothing of them (size, shared attributes and groups,
// expiry) and the same routes go back in.
func TestFlushAll(t *testing.T) {
	for _, watched := range []bool{true, false} {
		ts := NewTables()
		var heard []*Changes
		if watched {
			ts.Watch(func(_ *Table, cs *Changes) { heard = append(heard, cs) })
		}
		tab := ts.Ensure(100)
		rs := flushRoutes(racebuild.Sized(100_000, 20_000))
		load := func() {
			x := tab.Begin()
			for _, r := range rs {
				if err := x.Add(r); err != nil {
					t.Fatalf("add %v: %v", r.Dst, err)
				}
			}
			x.Commit()
			if tab.Len() != len(rs) {
				t.Fatalf("%d routes after the load, want %d", tab.Len(), len(rs))
			}
		}
		load()
		old := tab.trie.root.Load()
		gen := tab.Generation()
		heard = nil
		if n := tab.Flush(Filter{}); n != len(rs) {
			t.Fatalf("flush: %d routes, want %d", n, len(rs))
		}
		if tab.Len() != 0 || len(tab.intern) != 0 || len(tab.groups) != 0 || len(tab.expiry) != 0 || tab.last != nil || tab.Expiring() {
			t.Fatalf("after the flush: size %d, %d attrs, %d groups, %d expiring", tab.Len(), len(tab.intern), len(tab.groups), len(tab.expiry))
		}
		if tab.Generation() == gen {
			t.Fatal("the flush did not publish")
		}
		if err := tab.trie.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		tab.Dump(Filter{}, func(r Route) bool { t.Fatalf("dump after the flush: %v", r.Dst); return false })
		if a := tab.Lookup(rs[0].Dst.Addr(), netip.Addr{}); a != nil {
			t.Fatalf("lookup after the flush: %+v", a)
		}
		if watched {
			if len(heard) != 1 || heard[0].Len() != len(rs) {
				t.Fatalf("the watcher heard %d commits", len(heard))
			}
			want := map[string]bool{}
			for _, r := range rs {
				want[routeKey(r)] = true
			}
			n := 0
			for c := range heard[0].All() {
				if c.Op != Deleted || c.Table != 100 || !want[routeKey(c.Route)] {
					t.Fatalf("heard %v %d %s", c.Op, c.Table, routeKey(c.Route))
				}
				delete(want, routeKey(c.Route))
				n++
			}
			if n != len(rs) || len(want) != 0 {
				t.Fatalf("heard %d deletes, %d routes untold", n, len(want))
			}
		}
		// the emptied version is as it was: a reader still in it sees it whole
		n := 0
		walkFrom(old, netip.PrefixFrom(netip.IPv6Unspecified(), 0), func(_ netip.Prefix, r *rset) bool { n += len(r.routes); return true })
		if n != len(rs) {
			t.Fatalf("the old version holds %d routes, want %d", n, len(rs))
		}
		load()
		if err := tab.trie.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		if len(tab.groups) != 1 || len(tab.expiry) == 0 || !tab.Expiring() {
			t.Fatalf("after the reload: %d groups, %d expiring", len(tab.groups), len(tab.expiry))
		}
		if a := tab.Lookup(rs[0].Dst.Addr(), netip.Addr{}); a == nil || a.Nexthop != rs[0].Nexthop {
			t.Fatalf("lookup after the reload: %+v", a)
		}
		if n := tab.Flush(Filter{}); n != len(rs) {
			t.Fatalf("second flush: %d", n)
		}
		if n := tab.Flush(Filter{}); n != 0 {
			t.Fatalf("flush of an empty table: %d", n)
		}
	}
}
