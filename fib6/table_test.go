package fib6

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"syscall"
	"testing"

	"urouter/internal/racebuild"
	"urouter/nexthop"
)

// TestTableRandom runs random transactions of add, replace, append,
// prepend and delete against the model, and checks errors, lookups (with
// and without source), Get and the dump after every commit.
func TestTableRandom(t *testing.T) {
	for seed := uint64(1); seed <= uint64(racebuild.Sized(20, 5)); seed++ {
		r := rand.New(rand.NewPCG(seed, 5))
		tab := newTable(100, nil)
		m := newRefTable()
		var seeds []netip.Prefix
		for round := 0; round < 15; round++ {
			x := tab.Begin()
			for i := 0; i < 1+r.IntN(60); i++ {
				rt := nextRoute(r, m, &seeds)
				var got, want error
				switch op := r.IntN(5); op {
				case 4:
					q := Match{Dst: rt.Dst, Src: rt.Src}
					if r.IntN(2) == 0 {
						q.Metric = rt.Metric
					}
					if r.IntN(3) == 0 {
						q.Link = rt.Nexthop.Link
					}
					wr, we := m.del(q)
					gr, ge := x.Delete(q)
					got, want = ge, we
					if ge == nil && !sameRoute(gr, wr) {
						t.Fatalf("Delete %v: got %v want %v", q, gr, wr)
					}
				default:
					want = m.put(rt, putMode(op))
					got = x.put(rt, putMode(op))
				}
				if !sameErr(got, want) {
					t.Fatalf("seed %d op on %v: got %v want %v", seed, rt, got, want)
				}
			}
			x.Commit()
			checkTable(t, tab, m, r)
		}
	}
}

// TestTableRejects: invalid input gets an error and changes nothing.
func TestTableRejects(t *testing.T) {
	tab := newTable(100, nil)
	ok := Route{Dst: netip.MustParsePrefix("2001:db8::/32"), Attrs: Attrs{Nexthop: nexthop.Nexthop{Link: 1}}}
	x := tab.Begin()
	if err := x.Add(ok); err != nil {
		t.Fatal(err)
	}
	x.Commit()
	gen := tab.Generation()
	bad := []Route{
		{Dst: netip.MustParsePrefix("2001:db8::1/64"), Attrs: ok.Attrs},         // host bits
		{Dst: netip.MustParsePrefix("10.0.0.0/8"), Attrs: ok.Attrs},             // IPv4
		{Dst: netip.Prefix{}, Attrs: ok.Attrs},                                  // none
		{Dst: netip.MustParsePrefix("2001:db8:1::/48")},                         // unicast without nexthop
		{Dst: netip.MustParsePrefix("2001:db8:1::/48"), Attrs: Attrs{Type: 42}}, // unknown type
		{Dst: netip.MustParsePrefix("2001:db8:1::/48"), Attrs: Attrs{Type: Blackhole, Src: netip.MustParsePrefix("2001:db8::1/64")}},
		{Dst: netip.MustParsePrefix("2001:db8::/32"), Attrs: ok.Attrs}, // exists
	}
	for _, b := range bad {
		x := tab.Begin()
		err := x.Add(b)
		x.Commit()
		if err == nil {
			t.Errorf("Add(%v) accepted", b)
		}
	}
	x = tab.Begin()
	if _, err := x.Delete(Match{Dst: netip.MustParsePrefix("2001:db8:2::/48")}); !errors.Is(err, ErrNoRoute) {
		t.Errorf("Delete of a missing route: %v", err)
	}
	x.Commit()
	if tab.Generation() != gen || tab.Len() != 1 {
		t.Errorf("rejected requests changed the table: generation %d -> %d, %d routes", gen, tab.Generation(), tab.Len())
	}
	if err := ErrExists; err.Error() != "file exists" || !errors.Is(err, ErrExists) {
		t.Errorf("ErrExists says %q", err)
	}
}

// TestSourceRoutes pins the Linux behaviours DESIGN.md lists: a route
// P from S hides plain P from other sources, also without a source; only
// ::/0 falls back to its plain routes.
func TestSourceRoutes(t *testing.T) {
	tab := newTable(100, nil)
	x := tab.Begin()
	add := func(dst, src string, link int32) {
		rt := Route{Dst: netip.MustParsePrefix(dst), Attrs: Attrs{Nexthop: nexthop.Nexthop{Link: link}}}
		if src != "" {
			rt.Src = netip.MustParsePrefix(src)
		}
		if err := x.Add(rt); err != nil {
			t.Fatal(err)
		}
	}
	add("2001:db8::/32", "", 1)
	add("2001:db8:1::/48", "", 2)
	add("2001:db8:1::/48", "2001:db8:aaaa::/48", 3)
	add("::/0", "", 4)
	add("::/0", "fd00::/8", 5)
	x.Commit()
	cases := []struct {
		dst, src string
		link     int32
	}{
		{"2001:db8:1::1", "2001:db8:aaaa::1", 3}, // source route
		{"2001:db8:1::1", "2001:db8:bbbb::1", 1}, // plain /48 hidden: falls to the /32
		{"2001:db8:1::1", "", 1},                 // also without a source
		{"2001:db8:2::1", "2001:db8:aaaa::1", 1}, // /32 has no source routes
		{"2002::1", "fd00::1", 5},                // ::/0 source route
		{"2002::1", "2002::2", 4},                // ::/0 falls back to its plain route
		{"2002::1", "", 4},
	}
	for _, c := range cases {
		var src netip.Addr
		if c.src != "" {
			src = netip.MustParseAddr(c.src)
		}
		a := tab.Lookup(netip.MustParseAddr(c.dst), src)
		if a == nil || a.Nexthop.Link != c.link {
			t.Errorf("Lookup(%s from %s) = %v, want link %d", c.dst, c.src, a, c.link)
		}
	}
}

func ExampleTable_Dump() {
	ts := NewTables()
	x := ts.Main().Begin()
	for _, p := range []string{"2001:db8:1::/48", "2001:db8::/32", "2001:db8::/48"} {
		_ = x.Add(Route{Dst: netip.MustParsePrefix(p), Attrs: Attrs{Metric: DefaultMetric, Nexthop: nexthop.Nexthop{Link: 1}}})
	}
	x.Commit()
	ts.Main().Dump(Filter{}, func(r Route) bool { fmt.Println(r.Dst, r.Metric); return true })
	// Output:
	// 2001:db8::/32 1024
	// 2001:db8::/48 1024
	// 2001:db8:1::/48 1024
}

// TestECMP: gateway routes appended (or prepended) with the same metric
// coalesce into one multipath route whose group has a path per append, in
// order, as Linux's IPv6 siblings print; the route of another metric is
// not one of them; a path that is there already is refused; deleting with
// a gateway takes one path out, and the last path left makes a plain
// route again; equal groups are stored once.
func TestECMP(t *testing.T) {
	tab := newTable(100, nil)
	x := tab.Begin()
	dst := netip.MustParsePrefix("2001:db8::/32")
	gw := func(i byte) netip.Addr { return netip.AddrFrom16([16]byte{0xfe, 0x80, 15: i}) }
	for i := byte(1); i <= 3; i++ {
		add := x.Append
		if i == 3 {
			add = x.Prepend // Linux adds the sibling after the others all the same
		}
		if err := add(Route{Dst: dst, Attrs: Attrs{Metric: 10, Nexthop: nexthop.Nexthop{Link: 1, Gateway: gw(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Append(Route{Dst: dst, Attrs: Attrs{Metric: 10, Nexthop: nexthop.Nexthop{Link: 1, Gateway: gw(2)}}}); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("a path twice: %v", err)
	}
	if err := x.Append(Route{Dst: dst, Attrs: Attrs{Metric: 20, Nexthop: nexthop.Nexthop{Link: 2}}}); err != nil {
		t.Fatal(err)
	}
	other := netip.MustParsePrefix("2001:db9::/32")
	if err := x.Add(Route{Dst: other, Attrs: Attrs{Metric: 10, Group: nexthop.NewGroup([]nexthop.Member{
		{Nexthop: nexthop.Nexthop{Link: 1, Gateway: gw(1)}, Weight: 1}, {Nexthop: nexthop.Nexthop{Link: 1, Gateway: gw(2)}, Weight: 1},
		{Nexthop: nexthop.Nexthop{Link: 1, Gateway: gw(3)}, Weight: 1}})}}); err != nil {
		t.Fatal(err)
	}
	x.Commit()
	if tab.Len() != 3 {
		t.Errorf("%d routes, want 3 (one multipath of 3 paths, one plain, one more multipath)", tab.Len())
	}
	a := netip.MustParseAddr("2001:db8::1")
	out := make([]*Attrs, 1)
	tab.LookupKeys(keysOf([]netip.Addr{a}), nil, out, nil)
	p := out[0]
	if p == nil || p.Group == nil || p.Group.Len() != 3 || p.Metric != 10 {
		t.Fatalf("route %+v, want a group of the 3 paths", p)
	}
	for i := 0; i < 3; i++ {
		if m := p.Group.Member(i); m.Gateway != gw(byte(i+1)) || m.Weight != 1 {
			t.Errorf("path %d: %v", i, m)
		}
	}
	if q := tab.Lookup(netip.MustParseAddr("2001:db9::1"), netip.Addr{}); q.Group != p.Group {
		t.Error("two routes with equal paths keep two copies of them")
	}
	if gp, ga, ok := tab.Get(a, netip.Addr{}, nil); !ok || gp != dst || ga != p {
		t.Errorf("Get found %v %v, LookupKeys %v", gp, ga, p)
	}
	// a lookup that takes one link only (route get oif) gets that route
	_, only, ok := tab.Get(a, netip.Addr{}, func(a *Attrs) int {
		if a.Nexthop.Link == 2 {
			return 2
		}
		return -1
	})
	if !ok || only.Group != nil || only.Metric != 20 {
		t.Errorf("oif 2 lookup found %+v", only)
	}
	x = tab.Begin()
	if _, err := x.Delete(Match{Dst: dst, Gateway: gw(2)}); err != nil {
		t.Fatal(err)
	}
	x.Commit()
	if p := tab.Lookup(a, netip.Addr{}); p.Group == nil || p.Group.Len() != 2 || p.Group.Member(1).Gateway != gw(3) {
		t.Errorf("after deleting one path: %+v", p)
	}
	x = tab.Begin()
	if _, err := x.Delete(Match{Dst: dst, Gateway: gw(1)}); err != nil {
		t.Fatal(err)
	}
	x.Commit()
	if p := tab.Lookup(a, netip.Addr{}); p.Group != nil || p.Nexthop.Gateway != gw(3) || tab.Len() != 3 {
		t.Errorf("one path left: %+v", p)
	}
	// a delete without a gateway takes the whole multipath route
	x = tab.Begin()
	if _, err := x.Delete(Match{Dst: other, Link: 1}); err != nil {
		t.Fatal(err)
	}
	x.Commit()
	if tab.Len() != 2 || len(tab.groups) != 0 {
		t.Errorf("%d routes, %d groups kept after the multipath route went", tab.Len(), len(tab.groups))
	}
}

// TestLinkChanged: a link going down deletes the plain routes out of it
// and marks the paths of multipath routes out of it dead (the route stays,
// the flows go by the others); up revives them; a link gone takes its
// paths out.
func TestLinkChanged(t *testing.T) {
	tab := newTable(100, nil)
	gw := func(i byte) netip.Addr { return netip.AddrFrom16([16]byte{0xfe, 0x80, 15: i}) }
	mp := netip.MustParsePrefix("2001:db8:1::/48")
	plain := netip.MustParsePrefix("2001:db8:2::/48")
	x := tab.Begin()
	if err := x.Add(Route{Dst: mp, Attrs: Attrs{Metric: 1024, Group: nexthop.NewGroup([]nexthop.Member{
		{Nexthop: nexthop.Nexthop{Link: 1, Gateway: gw(1)}, Weight: 1}, {Nexthop: nexthop.Nexthop{Link: 2, Gateway: gw(2)}, Weight: 2}})}}); err != nil {
		t.Fatal(err)
	}
	if err := x.Add(Route{Dst: plain, Attrs: Attrs{Metric: 1024, Nexthop: nexthop.Nexthop{Link: 2, Gateway: gw(2)}}}); err != nil {
		t.Fatal(err)
	}
	x.Commit()
	change := func(ev LinkEvent) {
		x := tab.Begin()
		x.LinkChanged(2, ev)
		x.Commit()
	}
	change(LinkDown)
	a := tab.Lookup(mp.Addr(), netip.Addr{})
	if a == nil || a.Group.Len() != 2 || a.Group.Member(1).Flags&(nexthop.Dead|nexthop.LinkDown) != nexthop.Dead|nexthop.LinkDown {
		t.Fatalf("after down: %+v", a)
	}
	for h := uint32(0); h < 1<<20; h += 4099 {
		if a.Group.Select(h<<12) != 0 {
			t.Fatal("a flow took the dead path")
		}
	}
	if tab.Lookup(plain.Addr(), netip.Addr{}) != nil {
		t.Error("the plain route out of the down link stayed")
	}
	change(LinkUp)
	if a := tab.Lookup(mp.Addr(), netip.Addr{}); !a.Group.Member(1).Usable() {
		t.Error("the path stayed dead after up")
	}
	change(LinkGone)
	if a := tab.Lookup(mp.Addr(), netip.Addr{}); a.Group != nil || a.Nexthop.Link != 1 {
		t.Errorf("after the link went: %+v", a)
	}
}

// TestExpire: routes go when their time comes, and only then; TryBegin
// refuses at once while another transaction is open, so housekeeping
// never waits for it.
func TestExpire(t *testing.T) {
	tab := newTable(100, nil)
	x := tab.Begin()
	dst := netip.MustParsePrefix("2001:db8:1::/48")
	if err := x.Add(Route{Dst: dst, Attrs: Attrs{Metric: 1, Nexthop: nexthop.Nexthop{Link: 1}, Expires: 1000}}); err != nil {
		t.Fatal(err)
	}
	if err := x.Add(Route{Dst: dst, Attrs: Attrs{Metric: 2, Nexthop: nexthop.Nexthop{Link: 1}}}); err != nil {
		t.Fatal(err)
	}
	x.Commit()
	if !tab.Expiring() {
		t.Fatal("a route with an expiry time, and the table says none")
	}
	open := tab.Begin()
	if _, ok := tab.TryBegin(); ok {
		t.Fatal("TryBegin opened a second transaction")
	}
	open.Commit()
	x, ok := tab.TryBegin()
	if !ok {
		t.Fatal("TryBegin refused a free table")
	}
	if n := x.Expire(999); n != 0 {
		t.Fatalf("expired %d routes before their time", n)
	}
	if n := x.Expire(1000); n != 1 {
		t.Fatalf("expired %d routes, want 1", n)
	}
	x.Commit()
	if tab.Expiring() || tab.Len() != 1 || tab.Lookup(dst.Addr(), netip.Addr{}).Metric != 2 {
		t.Fatalf("after expiry: %d routes, expiring %v", tab.Len(), tab.Expiring())
	}
}
