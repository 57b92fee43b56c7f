package decide_test

import (
	"net/netip"
	"testing"

	"urouter/decide"
	"urouter/fib6"
	"urouter/nexthop"
)

// TestVRFDecision: with d0 and d1 in VRF red (table 10) and d2 in the
// default one, each holding the same prefix, a flow is looked up in the
// table of the link it asks to leave by, else of the link it came in by
// (l3mdev_update_flow), through the l3mdev rule; an oif that is the VRF
// itself names only the table; a miss in the VRF's table falls through
// to main (fib6_rule_action's -EAGAIN); the local table's rule comes
// first, so an address of the default VRF is local from red too; the batch decides as Decide; and
// the source is chosen among the flow's VRF's addresses only.
func TestVRFDecision(t *testing.T) {
	r, ls := newRouter(t, 3)
	red, err := r.AddVRF("red", 0, 10, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls[:2] {
		if err := r.SetMaster(l, red); err != nil {
			t.Fatal(err)
		}
	}
	addAddr(t, r, ls[0], "2001:db8:1::1/64") // red
	addAddr(t, r, ls[2], "2001:db8:1::9/64") // default
	addRoute(t, r, "2001:db8:77::/48", fib6.Attrs{Metric: 1024, Nexthop: nexthop.Nexthop{Link: ls[2].Index}})
	cases := []struct {
		name     string
		iif, oif int32
		dst      string
		table    uint32
		link     int32
		verdict  decide.Verdict
	}{
		{"in by a member", ls[1].Index, 0, "2001:db8:1::5", 10, ls[0].Index, decide.Forward},
		{"in by the VRF", red.Index, 0, "2001:db8:1::5", 10, ls[0].Index, decide.Forward},
		{"in by the default", ls[2].Index, 0, "2001:db8:1::5", fib6.TableMain, ls[2].Index, decide.Forward},
		{"out by the VRF", 0, red.Index, "2001:db8:1::5", 10, ls[0].Index, decide.Forward},
		{"out by a member", 0, ls[0].Index, "2001:db8:1::5", 10, ls[0].Index, decide.Forward},
		{"own, no link", 0, 0, "2001:db8:1::5", fib6.TableMain, ls[2].Index, decide.Forward},
		{"to red's address", ls[1].Index, 0, "2001:db8:1::1", 10, ls[0].Index, decide.Local},
		// rule 0 (local) comes before the l3mdev rule, as in Linux: the
		// default's address is the router's from red too
		{"to the default's address from red", ls[1].Index, 0, "2001:db8:1::9", fib6.TableLocal, ls[2].Index, decide.Local},
		{"a miss in red falls to main", ls[1].Index, 0, "2001:db8:77::1", fib6.TableMain, ls[2].Index, decide.Forward},
	}
	var keys []decide.Key
	for _, c := range cases {
		k := decide.KeyOf(netip.MustParseAddr(c.dst), netip.MustParseAddr("2001:db8:1::5"))
		k.Iif, k.Oif = c.iif, c.oif
		res := r.Decider.Decide(&k)
		if res.Verdict != c.verdict || res.Table != c.table || res.Path.Link != c.link {
			t.Errorf("%s: verdict %d table %d link %d, want %d %d %d", c.name, res.Verdict, res.Table, res.Path.Link, c.verdict, c.table, c.link)
		}
		if c.oif == 0 && c.iif != 0 {
			keys = append(keys, k)
		}
	}
	var b decide.Batch
	out := make([]decide.Result, len(keys))
	r.Decider.DecideBatch(&b, keys, out)
	for i := range keys {
		want := r.Decider.Decide(&keys[i])
		if out[i].Verdict != want.Verdict || out[i].Table != want.Table || out[i].Path != want.Path {
			t.Errorf("batch key %d: %+v, Decide says %+v", i, out[i], want)
		}
	}
	dst := netip.MustParseAddr("2001:db8:1::5")
	for _, c := range []struct {
		dev  int32
		want string
	}{{ls[1].Index, "2001:db8:1::1"}, {red.Index, "2001:db8:1::1"}, {ls[2].Index, "2001:db8:1::9"}, {0, "2001:db8:1::9"}} {
		if got, _ := r.Decider.SourceFor(dst, c.dev); got.String() != c.want {
			t.Errorf("source towards %s by link %d: %s, want %s", dst, c.dev, got, c.want)
		}
	}
	// with an address of its own, d1 is its own source first, though
	// d0's shares more of the destination (ipv6_get_saddr_master)
	addAddr(t, r, ls[1], "2001:db8:2::1/64")
	for _, c := range []struct {
		dev  int32
		want string
	}{{ls[1].Index, "2001:db8:2::1"}, {ls[0].Index, "2001:db8:1::1"}, {red.Index, "2001:db8:1::1"}} {
		if got, _ := r.Decider.SourceFor(dst, c.dev); got.String() != c.want {
			t.Errorf("source towards %s by link %d: %s, want %s", dst, c.dev, got, c.want)
		}
	}
}
