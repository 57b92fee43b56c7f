package decide_test

import (
	"net/netip"
	"testing"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/nexthop"
	"urouter/router"
)

// newRouter builds a router with dummy links d0..dN-1, up.
func newRouter(t testing.TB, n int) (*router.Router, []*dataplane.Link) {
	t.Helper()
	r := router.New()
	var ls []*dataplane.Link
	for i := 0; i < n; i++ {
		l, err := r.AddDummy("d"+string(rune('0'+i)), 1500)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.SetUp(l, true); err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	return r, ls
}

func addAddr(t testing.TB, r *router.Router, l *dataplane.Link, a string) {
	t.Helper()
	if err := r.AddAddr(l, netip.MustParsePrefix(a)); err != nil {
		t.Fatal(err)
	}
}

func addRoute(t *testing.T, r *router.Router, dst string, a fib6.Attrs) {
	t.Helper()
	x := r.Tables.Main().Begin()
	err := x.Append(fib6.Route{Dst: netip.MustParsePrefix(dst), Attrs: a})
	x.Commit()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSourceSelection: the source the router picks towards a destination,
// in the cases a Linux 6.18 router was asked (`ip -6 route get` in a
// netns, with the same addresses added in the same order).
func TestSourceSelection(t *testing.T) {
	cases := []struct {
		name  string
		addrs [][]string // per link, in the order added
		dst   string
		link  int // the egress link's position; -1 for lo
		want  string
	}{
		{"two globals on the egress: the newest", [][]string{{"2001:db8:91::1/64", "2001:db8:91::5/64"}}, "2001:db8:5::1", 0, "2001:db8:91::5"},
		{"the same, added the other way round", [][]string{{"2001:db8:91::5/64", "2001:db8:91::1/64"}}, "2001:db8:5::1", 0, "2001:db8:91::1"},
		{"a ULA on the egress beats a global elsewhere (rule 5 before 6)", [][]string{{"fd00:91::1/64"}, {"2001:db8:92::1/64"}}, "2001:db8:5::1", 0, "fd00:91::1"},
		{"no address on the egress: the label decides", [][]string{{}, {"fd00::1/64"}, {"2001:db8:92::1/64"}}, "fd00:5::1", 0, "fd00::1"},
		{"no address on the egress: the label decides, the other way", [][]string{{}, {"fd00::1/64"}, {"2001:db8:92::1/64"}}, "2001:db8:5::1", 0, "2001:db8:92::1"},
		{"the egress beats a longer match elsewhere (rule 5 before 8)", [][]string{{"2001:db8:91::1/64"}, {"2001:db8:5::9/64"}}, "2001:db8:5::1", 0, "2001:db8:91::1"},
		{"scope beats the egress (rule 2 before 5)", [][]string{{"fe80::1/64"}, {"2001:db8:92::1/64"}}, "2001:db8:5::1", 0, "2001:db8:92::1"},
		{"a link-local destination: the egress's link-local", [][]string{{"2001:db8:91::1/64", "fe80::1/64"}, {"fe80::2/64"}}, "fe80::9", 0, "fe80::1"},
		{"the longest match within the address's own prefix length", [][]string{{"2001:db8:91::1/64", "2001:db8:91::3/128"}}, "2001:db8:91::2", 0, "2001:db8:91::3"},
		{"a tie across links: the lower index", [][]string{{}, {"2001:db8:92::1/64"}, {"2001:db8:93::1/64"}}, "2001:db8:5::1", 0, "2001:db8:92::1"},
		{"only the loopback's", [][]string{{}}, "2001:db8:5::1", 0, "::1"},
		{"the destination is the router's own", [][]string{{"2001:db8:91::1/64"}, {"2001:db8:92::1/64"}}, "2001:db8:92::1", 0, "2001:db8:92::1"},
	}
	for _, c := range cases {
		r, ls := newRouter(t, len(c.addrs))
		for i, as := range c.addrs {
			for _, a := range as {
				addAddr(t, r, ls[i], a)
			}
		}
		got, ok := r.Decider.SourceFor(netip.MustParseAddr(c.dst), ls[c.link].Index)
		if !ok || got != netip.MustParseAddr(c.want) {
			t.Errorf("%s: %v %v, want %s", c.name, got, ok, c.want)
		}
	}
	// with no address at all, not even ::1, there is none
	r, ls := newRouter(t, 1)
	if _, err := r.DelAddr(r.Lo, netip.MustParsePrefix("::1/128")); err != nil {
		t.Fatal(err)
	}
	if a, ok := r.Decider.SourceFor(netip.MustParseAddr("2001:db8::1"), ls[0].Index); ok {
		t.Errorf("a source %s from no address", a)
	}
}

// TestRouteSource: route get's src is the route's preferred source when it
// has one, else the selection for the route's link.
func TestRouteSource(t *testing.T) {
	r, ls := newRouter(t, 2)
	addAddr(t, r, ls[0], "2001:db8:91::1/64")
	addAddr(t, r, ls[1], "2001:db8:92::1/64")
	addRoute(t, r, "2001:db8:5::/48", fib6.Attrs{Metric: 1024, Nexthop: nexthop.Nexthop{Link: ls[0].Index}})
	addRoute(t, r, "2001:db8:6::/48", fib6.Attrs{Metric: 1024, Nexthop: nexthop.Nexthop{Link: ls[0].Index},
		PrefSrc: netip.MustParseAddr("2001:db8:92::1")})
	for dst, want := range map[string]string{"2001:db8:5::1": "2001:db8:91::1", "2001:db8:6::1": "2001:db8:92::1"} {
		k := decideKey(dst, "")
		res := r.Decider.Decide(&k)
		if got, ok := r.Decider.RouteSource(&res, netip.MustParseAddr(dst)); !ok || got.String() != want {
			t.Errorf("route get %s: src %v, want %s", dst, got, want)
		}
	}
}
