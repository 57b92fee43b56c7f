package control

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"urouter/control/wire"
	"urouter/router"
)

// newEtherRouter is newTestRouter with a TAP link e0 of the router's, up,
// 2001:db8:91::1/64 on it (root only: CI runs as root).
func newEtherRouter(t *testing.T) (*router.Router, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a TAP (CI runs as root)")
	}
	r := router.New()
	name := fmt.Sprintf("ut%d", os.Getpid()%100000)
	if _, e, st := run(r, wire.Options{Batch: true}, "link add "+name+" type tap address 02:00:00:00:01:01",
		"link set "+name+" up", "address add 2001:db8:91::1/64 dev "+name); st != 0 {
		t.Fatalf("setup: %s", e)
	}
	t.Cleanup(func() { run(r, wire.Options{}, "link del "+name) })
	return r, name
}

// The cases are what iproute2 6.1 prints against Linux 6.18 for the same
// commands on an Ethernet link.
func TestNeighGrammar(t *testing.T) {
	r, e0 := newEtherRouter(t)
	cases := []struct {
		cmd    string
		status int
		stdout string
		stderr string
	}{
		{"neigh add 2001:db8:91::9 lladdr 02:00:00:00:00:09 dev E0", 0, "", ""},
		{"neigh add 2001:db8:91::9 lladdr 02:00:00:00:00:09 dev E0", 2, "", "RTNETLINK answers: File exists\n"},
		{"neigh show dev E0", 0, "2001:db8:91::9 lladdr 02:00:00:00:00:09 PERMANENT \n", ""},
		{"neigh replace 2001:db8:91::c lladdr 02:00:00:00:00:0c dev E0 nud stale router", 0, "", ""},
		{"neigh show 2001:db8:91::c", 0, "2001:db8:91::c dev E0 lladdr 02:00:00:00:00:0c router STALE \n", ""},
		{"-j neigh show dev E0 to 2001:db8:91::9", 0, "[{\"dst\":\"2001:db8:91::9\",\"lladdr\":\"02:00:00:00:00:09\",\"state\":[\"PERMANENT\"]}]\n", ""},
		{"neigh add 2001:db8:91::d lladdr 02:00:00:00:00:0d dev E0 nud noarp", 0, "", ""},
		{"neigh show dev E0 nud noarp", 0, "2001:db8:91::d lladdr 02:00:00:00:00:0d NOARP \n", ""},
		{"neigh show dev E0 to 2001:db8:91::d", 0, "", ""}, // show leaves NOARP out
		{"neigh change 2001:db8:91::77 lladdr 02:00:00:00:00:77 dev E0", 2, "", "RTNETLINK answers: No such file or directory\n"},
		{"neigh del 2001:db8:91::77 dev E0", 2, "", "RTNETLINK answers: No such file or directory\n"},
		{"neigh del 2001:db8:91::9", 255, "", "Device and destination are required arguments.\n"},
		{"neigh add 2001:db8:91::9 dev nosuch", 1, "", "Cannot find device \"nosuch\"\n"},
		{"neigh add 2001:db8:91::a lladdr zz:00:00:00:00:00 dev E0", 1, "", "\"zz\" is invalid lladdr.\n"},
		{"neigh add 2001:db8:91::a lladdr 02:00 dev E0", 2, "", "Error: Invalid link address.\n"},
		{"neigh add 2001:db8:91::a lladdr 02:00:00:00:00:0a dev E0 nud bogus", 255, "", "Error: argument \"bogus\" is wrong: nud state is bad\n"},
		{"neigh add 2001:db8:91::b dev E0", 2, "", "Error: No link layer address given.\n"},
		{"neigh flush", 1, "", "Flush requires arguments.\n"},
		{"-s neigh flush dev E0", 0, "\n*** Round 1, deleting 1 entries ***\n*** Flush is complete after 1 round ***\n", ""},
		{"-s neigh flush dev E0", 0, "Nothing to flush.\n", ""},
		{"neigh show dev E0", 0, "2001:db8:91::9 lladdr 02:00:00:00:00:09 PERMANENT \n", ""}, // flush keeps PERMANENT
		{"neigh del 2001:db8:91::9 dev E0", 0, "", ""},
		{"neigh show dev E0 nud all", 0, "2001:db8:91::d lladdr 02:00:00:00:00:0d NOARP \n", ""},
		{"neigh add 2001:db8:91::9 lladdr 02:00:00:00:00:09 dev lo", 2, "", "RTNETLINK answers: Operation not supported\n"},
		{"neigh blah", 255, "", "Command \"blah\" is unknown, try \"ip neigh help\".\n"},
		{"ntable change name ndisc_cache dev E0 retrans 500 base_reachable 2000 queue 5", 0, "", ""},
		{"ntable change name ndisc_cache dev E0 base_reachable abc", 255, "", "Error: argument \"abc\" is wrong: \"base_reachable\" value is invalid\n"},
		{"ntable change name arp_cache dev E0 retrans 500", 2, "", "Error: the router has one neighbour table, ndisc_cache\n"},
		{"ra set dev E0 on max-interval 30 preference high mtu 1500 rdnss 2001:db8::53", 0, "", ""},
		{"ra prefix add 2001:db8:91::/64 dev E0 valid 3600 preferred 1800 no-autonomous", 0, "", ""},
		{"ra show dev E0", 0, "ra set dev E0 on max-interval 30 min-interval 10 lifetime 90 preference high hoplimit 64 mtu 1500 managed off other off rdnss 2001:db8::53 rdnss-lifetime 1200\n" +
			"ra prefix add 2001:db8:91::/64 dev E0 valid 3600 preferred 1800 no-autonomous\n", ""},
		{"ra prefix add 2001:db8:92::/64 dev E0 valid 100 preferred 200", 2, "", "Error: preferred lifetime is longer than the valid lifetime\n"},
		{"ra set dev lo on", 2, "", "Error: lo has no neighbour discovery (not an Ethernet link)\n"},
		{"ra set dev E0 max-interval 2", 255, "", "Error: argument \"2\" is wrong: \"max-interval\" value is invalid\n\n"},
		{"link add x0 type host", 255, "", "Not enough information: \"dev\" of the host interface is required.\n"},
		{"link add x0 type tap address 01:00:00:00:00:01", 2, "", "Error: a multicast address is no link's own\n"},
	}
	for _, c := range cases {
		cmd := strings.ReplaceAll(c.cmd, "E0", e0)
		var o wire.Options
		args := strings.Fields(cmd)
		for len(args) > 0 && strings.HasPrefix(args[0], "-") {
			switch args[0] {
			case "-j":
				o.JSON = true
			case "-s":
				o.Stats++
			}
			args = args[1:]
		}
		out, errs, st := run(r, o, strings.Join(args, " "))
		want := strings.ReplaceAll(c.stdout, "E0", e0)
		if st != c.status || out != want || errs != strings.ReplaceAll(c.stderr, "E0", e0) {
			t.Errorf("%s:\n got %d %q %q\nwant %d %q %q", cmd, st, out, errs, c.status, want, c.stderr)
		}
	}
	out, _, _ := run(r, wire.Options{}, "ntable show dev "+e0)
	if !strings.Contains(out, "base_reachable 2000 retrans 500 \n") || !strings.Contains(out, " queue 5 \n") {
		t.Errorf("ntable show after change:\n%s", out)
	}
	out, _, _ = run(r, wire.Options{}, "link show "+e0)
	if !strings.Contains(out, "<BROADCAST,MULTICAST,UP,LOWER_UP>") || !strings.Contains(out, "state UP") ||
		!strings.Contains(out, "link/ether 02:00:00:00:01:01 brd ff:ff:ff:ff:ff:ff") {
		t.Errorf("link show of a TAP link:\n%s", out)
	}
	out, _, _ = run(r, wire.Options{}, "address show dev "+e0)
	if !strings.Contains(out, "inet6 fe80::ff:fe00:101/64 scope link") {
		t.Errorf("the link-local address from the MAC (modified EUI-64) is missing:\n%s", out)
	}
}
