package feed

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"urouter/fib6"
)

// encaps are the lightweight tunnels zebra asks for that urouter does
// not do, by iproute2's name: MPLS (1), and SRv6 behaviours Linux would
// refuse (End.DT6 with no table) or urouter does not do (End.DX4).
var encaps = map[string]netlink.Encap{
	"mpls":           &netlink.MPLSEncap{Labels: []int{100, 200}},
	"seg6local-bad":  &netlink.SEG6LocalEncap{Action: nl.SEG6_LOCAL_ACTION_END_DT6},
	"seg6local-dx4":  &netlink.SEG6LocalEncap{Action: nl.SEG6_LOCAL_ACTION_END_DX4, InAddr: net.ParseIP("192.0.2.1")},
	"seg6-hmac-none": &netlink.SEG6Encap{Mode: 7, Segments: []net.IP{net.ParseIP("2001:db8:5::1")}},
}

// encapRefusals are the last refusal each encap of encaps is logged with.
var encapRefusals = map[string]string{
	"mpls":           "lwt encapsulation type not supported: encap mpls",
	"seg6local-bad":  "table or vrftable must be specified",
	"seg6local-dx4":  "SRv6 behaviour not supported by this router",
	"seg6-hmac-none": "invalid SRv6 encapsulation",
}

// TestEncapRefused: a route with an encapsulation, at its top or on one
// path of RTA_MULTIPATH, is refused and counted, not installed without
// it; one that replaces a plain route takes it away (the plain one would
// send the traffic out unencapsulated); a nexthop object likewise, with
// the routes through it. A blackhole's encapsulation moves nothing: it is
// installed. The refusals are logged in one line, not one each.
func TestEncapRefused(t *testing.T) {
	for name, e := range encaps {
		t.Run(name, func(t *testing.T) { testEncapRefused(t, name, e) })
	}
}

func testEncapRefused(t *testing.T, name string, e netlink.Encap) {
	r, ap := testRouter(t)
	var logged []string
	ap.encapLog.out = func(s string) { logged = append(logged, s) }
	replace := unix.NLM_F_CREATE | unix.NLM_F_REPLACE
	plain := newRoute("2001:db8:a::/48")
	plain.gw, plain.oif = gw1, kidx
	mp := newRoute("2001:db8:b::/48")
	mp.paths = []Path{{Gateway: gw1, OIF: kidx, Weight: 1}, {Gateway: gw2, OIF: kidx, Weight: 1}}
	nhRoute := newRoute("2001:db8:c::/48")
	nhRoute.nhid = 10
	ap.Apply(mustDecode(t, frame(plain.encode(unix.RTM_NEWROUTE, replace), mp.encode(unix.RTM_NEWROUTE, replace),
		nhObj{id: 10, gw: gw1, oif: kidx}.encode(unix.RTM_NEWNEXTHOP), nhRoute.encode(unix.RTM_NEWROUTE, replace))))
	if got := routes(r, fib6.TableMain); len(got) != 3 {
		t.Fatalf("plain routes: %q", got)
	}

	top := plain
	top.encap = e
	onPath := mp
	onPath.pathEncap = []netlink.Encap{nil, e}
	fresh := newRoute("2001:db8:d::/48") // a new destination
	fresh.gw, fresh.oif, fresh.encap = gw2, kidx, e
	black := newRoute("2001:db8:f::/48")
	black.typ, black.encap = unix.RTN_BLACKHOLE, e
	ap.Apply(mustDecode(t, frame(top.encode(unix.RTM_NEWROUTE, replace), onPath.encode(unix.RTM_NEWROUTE, replace),
		fresh.encode(unix.RTM_NEWROUTE, replace), nhObj{id: 10, gw: gw2, oif: kidx, encap: e}.encode(unix.RTM_NEWNEXTHOP),
		black.encode(unix.RTM_NEWROUTE, replace))))

	want := []string{"2001:db8:f::/48 proto 186 metric 20 blackhole"}
	if got := routes(r, fib6.TableMain); !slices.Equal(got, want) {
		t.Errorf("after the encapsulated ones:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if ap.r.Nexthops.Get(10) != nil {
		t.Error("nexthop 10 replaced by an encapsulated one is still installed")
	}
	if n := ap.Stats.Rejected.Load(); n != 4 {
		t.Errorf("rejected %d, want 4 (top, a path, a new route, a nexthop): %s", n, ap.LastError())
	}
	if le := ap.LastError(); le != "nexthop add id 10: "+encapRefusals[name] {
		t.Errorf("last error %q", le)
	}
	for _, q := range []route{plain, mp, fresh} {
		if ap.Owns(fib6.TableMain, q.dst, netip.Prefix{}, q.metric) {
			t.Errorf("the feed says it installed %s", q.dst)
		}
	}
	if _, nhs := ap.Owned(); nhs != 0 {
		t.Errorf("owned %d nexthops, want 0", nhs)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "route add 2001:db8:a::/48: "+encapRefusals[name]) {
		t.Errorf("logged %q, want the first refusal alone", logged)
	}
}

// TestLogLimit: lines past the first in an interval are held and said in
// one line at its end, with their count and the last of them; the lines
// of the interval that follows are held for its end likewise.
func TestLogLimit(t *testing.T) {
	var lines []string // out runs in printf, or in advance: this goroutine
	clock := newStepClock()
	l := logLimit{what: "events", every: time.Second, clock: clock, out: func(s string) { lines = append(lines, s) }}
	for i := range 1000 {
		l.printf("event %d", i)
	}
	if len(lines) != 1 || lines[0] != "event 0" {
		t.Fatalf("lines within the interval %q", lines)
	}
	clock.advance(time.Second)
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "999 more events since ") || !strings.HasSuffix(lines[1], ", the last: event 999") {
		t.Fatalf("lines at the interval's end %q", lines)
	}
	for i := range 3 { // the summary took the interval that follows it
		l.printf("later %d", i)
	}
	if len(lines) != 2 {
		t.Errorf("lines after the summary %q", lines)
	}
	clock.advance(time.Second)
	if len(lines) != 3 || !strings.HasPrefix(lines[2], "3 more events since ") || !strings.HasSuffix(lines[2], ", the last: later 2") {
		t.Errorf("lines at the next interval's end %q", lines)
	}
}
