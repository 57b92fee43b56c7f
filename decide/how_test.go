package decide_test

import (
	"net/netip"
	"testing"

	"urouter/decide"
	"urouter/fib6"
	"urouter/nexthop"
)

// TestLinkPreference: how a lookup with a link chooses among one prefix's
// routes, as Linux 6.18 answered `ip -6 route get` for the same routes:
// an oif without a source is strict (other links' routes and reject
// routes, which are on lo, are passed over, higher metrics tried), with a
// source it only prefers; an iif prefers too; a link-local or loopback
// destination is always strict.
func TestLinkPreference(t *testing.T) {
	r, ls := newRouter(t, 2)
	d0, d1 := ls[0].Index, ls[1].Index
	addAddr(t, r, ls[0], "2001:db8:91::1/64")
	addAddr(t, r, ls[1], "2001:db8:92::1/64")
	addRoute(t, r, "2001:db8:1::/48", fib6.Attrs{Metric: 10, Type: fib6.Prohibit})
	addRoute(t, r, "2001:db8:1::/48", fib6.Attrs{Metric: 10, Nexthop: nexthop.Nexthop{Link: d1}})
	addRoute(t, r, "2001:db8:1::/48", fib6.Attrs{Metric: 20, Nexthop: nexthop.Nexthop{Link: d0}})
	addRoute(t, r, "fe80::/64", fib6.Attrs{Metric: 256, Nexthop: nexthop.Nexthop{Link: d0}})
	addRoute(t, r, "fe80::/64", fib6.Attrs{Metric: 256, Nexthop: nexthop.Nexthop{Link: d1}})
	lo := r.Lo.Index
	cases := []struct {
		dst, src string
		iif, oif int32
		verdict  decide.Verdict
		link     int32
		metric   uint32
	}{
		{dst: "2001:db8:1::1", verdict: decide.Prohibit},
		{dst: "2001:db8:1::1", oif: d1, verdict: decide.Forward, link: d1, metric: 10},
		{dst: "2001:db8:1::1", oif: d0, verdict: decide.Forward, link: d0, metric: 20},
		{dst: "2001:db8:1::1", oif: lo, verdict: decide.Prohibit},
		{dst: "2001:db8:1::1", src: "2001:db8:a::1", oif: d0, verdict: decide.Prohibit},
		{dst: "2001:db8:1::1", src: "2001:db8:a::1", oif: d1, verdict: decide.Forward, link: d1, metric: 10},
		{dst: "2001:db8:1::1", iif: d1, verdict: decide.Forward, link: d1, metric: 10},
		{dst: "2001:db8:1::1", iif: d0, verdict: decide.Prohibit},
		{dst: "2001:db8:1::1", iif: lo, verdict: decide.Prohibit},
		{dst: "fe80::5", verdict: decide.Forward, link: d0, metric: 256},
		{dst: "fe80::5", iif: d1, verdict: decide.Forward, link: d1, metric: 256},
		{dst: "fe80::5", src: "2001:db8:a::1", oif: d1, verdict: decide.Forward, link: d1, metric: 256},
		{dst: "fe80::5", iif: lo, verdict: decide.NoRoute},
		{dst: "::1", src: "2001:db8:a::1", verdict: decide.Local, link: lo},
		{dst: "::1", src: "2001:db8:a::1", oif: d0, verdict: decide.NoRoute},
		{dst: "::1", oif: lo, verdict: decide.Local, link: lo},
	}
	for _, c := range cases {
		k := decideKey(c.dst, c.src)
		k.Iif, k.Oif = c.iif, c.oif
		res := r.Decider.Decide(&k)
		if res.Verdict != c.verdict || c.link != 0 && res.Path.Link != c.link || c.metric != 0 && res.Route.Metric != c.metric {
			t.Errorf("%s from %q iif %d oif %d: verdict %d %v, want %d link %d metric %d",
				c.dst, c.src, c.iif, c.oif, res.Verdict, res.Route, c.verdict, c.link, c.metric)
		}
	}
	// the batch the forwarded packets take chooses alike
	keys := []decide.Key{decideKey("2001:db8:1::1", ""), decideKey("fe80::5", ""), decideKey("2001:db8:1::1", "2001:db8:a::1")}
	for i := range keys {
		keys[i].Iif = d1
	}
	out := make([]decide.Result, len(keys))
	var b decide.Batch
	r.Decider.DecideBatch(&b, keys, out)
	for i := range keys {
		if one := r.Decider.Decide(&keys[i]); out[i].Route != one.Route || out[i].Path != one.Path {
			t.Errorf("key %d: batch %+v, single %+v", i, out[i], one)
		}
	}
}

// TestMultipathOif: a strict lookup takes the path out of its link
// whatever the hash; one with a source takes the hash's path, as Linux's
// fib6_select_path does since 6.15 (from the first sibling).
func TestMultipathOif(t *testing.T) {
	r, ls := newRouter(t, 2)
	d0, d1 := ls[0].Index, ls[1].Index
	addAddr(t, r, ls[0], "2001:db8:91::1/64")
	addAddr(t, r, ls[1], "2001:db8:92::1/64")
	addRoute(t, r, "2001:db8:e::/48", via(d0, "2001:db8:91::2"))
	addRoute(t, r, "2001:db8:e::/48", via(d1, "2001:db8:92::2"))
	spread := map[int32]int{}
	for i := 0; i < 400; i++ {
		src := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0xa, 14: byte(i >> 8), 15: byte(i)})
		k := decide.KeyOf(netip.MustParseAddr("2001:db8:e::1"), src)
		free := r.Decider.Decide(&k)
		k.Oif = d1
		if loose := r.Decider.Decide(&k); loose.Path != free.Path {
			t.Fatalf("from %s oif d1: took %v, the hash %v", src, loose.Path, free.Path)
		}
		spread[free.Path.Link]++
		k = decide.KeyOf(netip.MustParseAddr("2001:db8:e::1"), netip.Addr{})
		k.FlowLabel, k.Oif = uint32(i), d0 // flows of every hash, strictly
		if strict := r.Decider.Decide(&k); strict.Path.Link != d0 || strict.Group == nil {
			t.Fatalf("flow %d oif d0: took %+v", i, strict)
		}
	}
	if spread[d0] < 100 || spread[d1] < 100 {
		t.Errorf("400 sources over two paths: %v", spread)
	}
}
