package control

import (
	"fmt"
	"strings"
	"testing"
	"urouter/control/wire"
)

// TestRouteGetMultipath: over a two-member multipath route, route get
// names the member the flow's hash picks, flow by flow, both members get
// flows, and fibmatch prints the whole route with that member first, as
// Linux does.
func TestRouteGetMultipath(t *testing.T) {
	r := newTestRouter(t)
	if _, e, st := run(r, wire.Options{Batch: true},
		"link add d1 type dummy", "link set d1 up", "address add 2001:db8:92::1/64 dev d1",
		"route add 2001:db8:100::/48 via 2001:db8:91::2 dev d0",
		"route append 2001:db8:100::/48 via 2001:db8:92::2 dev d1"); st != 0 {
		t.Fatal(e)
	}
	devs := map[string]int{}
	for host := 1000; host < 1200; host++ { // Linux's default policy hashes addresses, not ports
		flow := fmt.Sprintf("2001:db8:100::1 from 2001:db8:1::%x ipproto udp sport 5000 dport 53", host)
		out, e, st := run(r, wire.Options{}, "route get "+flow)
		if st != 0 {
			t.Fatalf("route get %s: %s", flow, e)
		}
		var via, dev string
		switch {
		case strings.Contains(out, " via 2001:db8:91::2 dev d0 src 2001:db8:91::1 "):
			via, dev = "2001:db8:91::2", "d0"
		case strings.Contains(out, " via 2001:db8:92::2 dev d1 src 2001:db8:92::1 "):
			via, dev = "2001:db8:92::2", "d1"
		default:
			t.Fatalf("route get %s:\n%s", flow, out)
		}
		devs[dev]++
		fm, _, _ := run(r, wire.Options{}, "route get fibmatch "+flow)
		other := map[string]string{"d0": "\tnexthop via 2001:db8:92::2 dev d1 weight 1 \n", "d1": "\tnexthop via 2001:db8:91::2 dev d0 weight 1 \n"}[dev]
		if want := "2001:db8:100::/48 metric 1024 pref medium\n\tnexthop via " + via + " dev " + dev + " weight 1 \n" + other; fm != want {
			t.Fatalf("fibmatch %s:\n%s\nwant\n%s", flow, fm, want)
		}
	}
	if devs["d0"] < 50 || devs["d1"] < 50 {
		t.Errorf("200 flows over two members: %v", devs)
	}
}

// TestRouteLinuxChecks: what Linux 6.18 answered for the same commands
// (integration's oracle asks it side by side): an onlink gateway reached
// in table main by a route out of another link is refused, a default
// route does not count; an append of a second reject route (Linux puts
// them all on lo) is a duplicate; an input route to a multicast prefix
// is for multicast routing to print, which the router has not.
func TestRouteLinuxChecks(t *testing.T) {
	r := newTestRouter(t)
	if _, e, st := run(r, wire.Options{Batch: true},
		"link add d1 type dummy", "link set d1 up", "address add 2001:db8:92::1/64 dev d1"); st != 0 {
		t.Fatal(e)
	}
	for _, c := range []struct{ cmd, stderr string }{
		{"route add 2001:db8:5::/48 via 2001:db8:92::7 dev d0 onlink", "Error: Nexthop has invalid gateway or device mismatch.\n"},
		{"route add 2001:db8:5::/48 via 2001:db8:93::7 dev d0 onlink", ""},
		{"route add default dev d1", ""},
		{"route add 2001:db8:6::/48 via 2001:db8:93::7 dev d0 onlink", ""},
		{"route add 2001:db8:93::/64 dev d1", ""},
		{"route add 2001:db8:7::/48 via 2001:db8:93::7 dev d0 onlink", "Error: Nexthop has invalid gateway or device mismatch.\n"},
		{"route add 2001:db8:7::/48 via 2001:db8:91::1 dev d0 onlink", "Error: Gateway can not be a local address.\n"},
		{"route add unreachable 2001:db8:8::/48", ""},
		{"route append prohibit 2001:db8:8::/48", "RTNETLINK answers: File exists\n"},
		{"route append 2001:db8:8::/48 dev d0", ""},
		{"route append 2001:db8:8::/48 dev d0", "RTNETLINK answers: File exists\n"},
		{"route add ff00::/8 dev d1 table 5", ""},
		{"rule add pref 5 lookup 5", ""},
		{"route get ff02::1 iif d1", ""}, // as Linux without multicast routing (below)
	} {
		if _, e, _ := run(r, wire.Options{}, c.cmd); e != c.stderr {
			t.Errorf("%s: %q, want %q", c.cmd, e, c.stderr)
		}
	}
	if out, _, _ := run(r, wire.Options{}, "route get ff02::1 oif d1"); out != "ff02::1 from :: dev d1 table 5 src 2001:db8:92::1 metric 1024 pref medium\n" {
		t.Errorf("route get ff02::1 oif d1: %q", out)
	}
	// A kernel built with IPv6 multicast routing asks it (ip6mr_get_route)
	// and, finding nothing, answers "Message too long"; one without, as
	// urouter, which routes no multicast, prints the route.
	if out, _, _ := run(r, wire.Options{}, "route get ff02::1 iif d1"); out != "ff02::1 from :: dev d1 table 5 metric 1024 iif d1 pref medium\n" {
		t.Errorf("route get ff02::1 iif d1: %q", out)
	}
}
