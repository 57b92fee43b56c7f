package control

import (
	"fmt"
	"strings"
	"testing"
)

// TestRouteGetMultipath: over a two-member multipath route, route get
// names the member the flow's hash picks, flow by flow, both members get
// flows, and fibmatch prints the whole route with that member first, as
// Linux does.
func TestRouteGetMultipath(t *testing.T) {
	r := newTestRouter(t)
	if _, e, st := run(r, options{batch: true},
		"link add d1 type dummy", "link set d1 up", "address add 2001:db8:92::1/64 dev d1",
		"route add 2001:db8:100::/48 via 2001:db8:91::2 dev d0",
		"route append 2001:db8:100::/48 via 2001:db8:92::2 dev d1"); st != 0 {
		t.Fatal(e)
	}
	devs := map[string]int{}
	for host := 1000; host < 1200; host++ { // Linux's default policy hashes addresses, not ports
		flow := fmt.Sprintf("2001:db8:100::1 from 2001:db8:1::%x ipproto udp sport 5000 dport 53", host)
		out, e, st := run(r, options{}, "route get "+flow)
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
		fm, _, _ := run(r, options{}, "route get fibmatch "+flow)
		other := map[string]string{"d0": "\tnexthop via 2001:db8:92::2 dev d1 weight 1 \n", "d1": "\tnexthop via 2001:db8:91::2 dev d0 weight 1 \n"}[dev]
		if want := "2001:db8:100::/48 metric 1024 pref medium\n\tnexthop via " + via + " dev " + dev + " weight 1 \n" + other; fm != want {
			t.Fatalf("fibmatch %s:\n%s\nwant\n%s", flow, fm, want)
		}
	}
	if devs["d0"] < 50 || devs["d1"] < 50 {
		t.Errorf("200 flows over two members: %v", devs)
	}
}
