package control

import (
	"strings"
	"testing"

	"urouter/control/wire"
	"urouter/router"
)

// TestSRv6Grammar: encap seg6 and encap seg6local as iproute2 6.1 reads
// them and Linux 6.18 refuses them; how route show, -j, -s and save
// print them, and save's lines making the same routes again; sr tunsrc.
func TestSRv6Grammar(t *testing.T) {
	r := router.New()
	for _, c := range []struct {
		cmd    string
		status int
		stderr string
	}{
		{"link add d1 type dummy", 0, ""},
		{"link set d1 up", 0, ""},
		{"address add 2001:db8:1::1/64 dev d1", 0, ""},
		{"route add 2001:db8:9::/64 encap seg6 mode encap segs fc00::1,fc00::2 dev d1", 0, ""},
		{"route add 2001:db8:a::/64 encap seg6 mode inline segs fc00::1 via 2001:db8:1::2 dev d1", 0, ""},
		{"route add 2001:db8:b::/64 encap seg6 mode encap.red segs fc00::3 dev d1", 0, ""},
		{"route add fc00:1::1/128 encap seg6local action End flavors psp dev d1", 0, ""},
		{"route add fc00:1::2/128 encap seg6local action End flavors next-csid lblen 48 dev d1", 0, ""},
		{"route add fc00:1::3/128 encap seg6local action End.DT6 table 100 count dev d1", 0, ""},
		{"route add fc00:1::4/128 encap seg6local action End.X nh6 2001:db8:1::2 oif d1 dev d1", 0, ""},
		{"route add fc00:1::5/128 encap seg6local action End.B6.Encaps srh segs fc00::7,fc00::8 dev d1", 0, ""},
		{"route add fc00:1::6/128 encap seg6local action End.T table 10 dev d1", 0, ""},
		{"route add fc00:1::7/128 encap seg6local action End.DX6 nh6 2001:db8:1::9 dev d1", 0, ""},
		{"route add 2001:db8:d::/64 nexthop encap seg6 mode encap segs fc00::a via 2001:db8:1::2 dev d1 " +
			"nexthop encap seg6 mode encap.red segs fc00::b,fc00::c via 2001:db8:1::3 dev d1 weight 2", 0, ""},
		{"route add 2001:db8:e::/64 nexthop encap seg6 mode encap segs fc00::a dev d1 nexthop via 2001:db8:1::3 dev d1", 2,
			"Error: Device only routes can not be added for IPv6 using the multipath API.\n"},
		{"route add 2001:db8:e::/64 nexthop encap seg6 mode encap segs fc00::a hmac 3 via 2001:db8:1::2 dev d1 nexthop via 2001:db8:1::3 dev d1", 2,
			"Error: SRv6 HMAC is not supported by this router\n"},
		// refusals: iproute2's
		{"route add fc00:2::/64 encap seg6 segs fc00::1 mode encap dev d1", 255, "Error: argument \"fc00::1\" is wrong: \"segs\" provided before \"mode\"\n\n"},
		{"route add fc00:2::/64 encap seg6 mode tunnel segs fc00::1 dev d1", 255, "Error: argument \"tunnel\" is wrong: \"mode\" value is invalid\n\n"},
		{"route add fc00:2::/64 encap seg6 mode encap mode inline segs fc00::1 dev d1", 255, "Error: either \"mode\" is duplicate, or \"inline\" is a garbage.\n"},
		{"route add fc00:2::/64 encap seg6 mode encap segs fc00::1,x dev d1", 1, "Error: inet6 address is expected rather than \"x\".\n"},
		{"route add fc00:2::/64 encap seg6local dev d1", 255, "Missing action type\n"},
		{"route add fc00:2::/64 encap seg6local action Foo dev d1", 255, "Error: argument \"Foo\" is wrong: \"action\" value is invalid\n\n"},
		{"route add fc00:2::/64 encap seg6local action End flavors xyz dev d1", 255, "Error: argument \"xyz\" is wrong: invalid \"flavors\" attribute\n\n"},
		{"route add fc00:2::/64 encap bogus x dev d1", 255, "Error: argument \"bogus\" is wrong: \"encap type\" value is invalid\n\n"},
		{"route add fc00:2::/64 encap seg6", 255, "Command line is not complete. Try option \"help\"\n"},
		{"route add fc00:2::/64 encap seg6local action End oif nosuch dev d1", 1, "Cannot find device \"nosuch\"\n"},
		// refusals: the kernel's
		{"route add fc00:2::/64 encap seg6 hmac 0 dev d1", 2, "RTNETLINK answers: Invalid argument\n"}, // no mode: -1
		{"route add fc00:2::/64 encap seg6local action End.X flavors psp nh6 fc00::1 dev d1", 2, "Error: Unsupported Flavor operation(s)\n"},
		{"route add fc00:2::/64 encap seg6local action End flavors next-csid lblen 12 dev d1", 2, "Error: Invalid Locator Block/Node Function lengths\n"},
		{"route add fc00:2::/64 encap seg6local action End.DT6 table 10 vrftable 20 dev d1", 2, "Error: table or vrftable must be specified\n"},
		{"route add fc00:2::/64 encap seg6local action End.DT6 vrftable 20 dev d1", 2, "Error: Strict mode for VRF is disabled\n"},
		{"route add fc00:2::/64 encap seg6local action End.BM srh segs fc00::1 dev d1", 2, "RTNETLINK answers: Invalid argument\n"},
		{"route add fc00:2::/64 encap seg6local action End.X dev d1", 2, "RTNETLINK answers: Invalid argument\n"},
		{"route add fc00:2::/64 encap seg6 mode encap segs fc00::1 hmac 7 dev d1", 2, "Error: SRv6 HMAC is not supported by this router\n"},
		{"route add fc00:2::/64 nhid 1 encap seg6 mode encap segs fc00::1", 2, "Error: Nexthop specification and nexthop id are mutually exclusive.\n"},
		{"nexthop add id 7 encap seg6local action End.T table 20 dev d1", 2, "RTNETLINK answers: Invalid argument\n"}, // an IPv4 nexthop
		{"-6 nexthop add id 7 encap seg6local action End.T table 20 dev d1", 0, ""},
		{"nexthop add id 8 encap seg6 mode encap segs fc00::9 via 2001:db8:1::2 dev d1", 0, ""},
		{"nexthop add id 9 group 7/8", 0, ""},
		{"route add 2001:db8:c::/64 nhid 8", 0, ""},
		{"nexthop add id 10 group 7 encap seg6local action End count", 2, "Error: No other attributes can be set in nexthop groups.\n"},
		{"nexthop add id 10 blackhole encap seg6local action End", 2, "Error: Blackhole attribute can not be used with gateway, oif, encap or fdb.\n"},
		{"sysctl -w net.vrf.strict_mode=1", 0, ""},
		{"route add fc00:2::/64 encap seg6local action End.DT6 vrftable 20 dev d1", 2, "Error: Table has no associated VRF device\n"},
		{"sr tunsrc set fc00::99", 0, ""},
		{"sr tunsrc set x", 1, "Error: inet6 address is expected rather than \"x\".\n"},
		{"sr foo", 255, "Error: argument \"foo\" is wrong: unknown\n"},
	} {
		_, errs, st := run(r, wire.Options{}, c.cmd)
		if st != c.status || errs != c.stderr {
			t.Errorf("%s:\n got %d %q\nwant %d %q", c.cmd, st, errs, c.status, c.stderr)
		}
	}
	checkSRv6Shows(t, r)
}

// checkSRv6Shows: what route show, -s and -j print of TestSRv6Grammar's
// routes, and save's lines making them again.
func checkSRv6Shows(t *testing.T, r *router.Router) {
	out, _, _ := run(r, wire.Options{Stats: 1}, "route show")
	for _, want := range []string{
		"2001:db8:9::/64  encap seg6 mode encap segs 2 [ fc00::1 fc00::2 ] dev d1 metric 1024 pref medium\n",
		"2001:db8:a::/64  encap seg6 mode inline segs 2 [ fc00::1 :: ] via 2001:db8:1::2 dev d1 metric 1024 pref medium\n",
		"2001:db8:b::/64  encap seg6 mode encap.red segs 1 [ fc00::3 ] dev d1 metric 1024 pref medium\n",
		"fc00:1::1  encap seg6local action End flavors psp dev d1 metric 1024 pref medium\n",
		"fc00:1::2  encap seg6local action End flavors next-csid lblen 48 nflen 16 dev d1 metric 1024 pref medium\n",
		"fc00:1::3  encap seg6local action End.DT6 table 100 packets 0 bytes 0 errors 0 dev d1 metric 1024 pref medium\n",
		"fc00:1::4  encap seg6local action End.X nh6 2001:db8:1::2 oif d1 dev d1 metric 1024 pref medium\n",
		"fc00:1::5  encap seg6local action End.B6.Encaps segs 2 [ fc00::7 fc00::8 ] dev d1 metric 1024 pref medium\n",
		"2001:db8:d::/64 metric 1024 pref medium\n" +
			"\tnexthop  encap seg6 mode encap segs 1 [ fc00::a ] via 2001:db8:1::2 dev d1 weight 1 \n" +
			"\tnexthop  encap seg6 mode encap.red segs 2 [ fc00::b fc00::c ] via 2001:db8:1::3 dev d1 weight 2 \n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("route show -s: no %q in\n%s", want, out)
		}
	}
	out, _, _ = run(r, wire.Options{}, "route get 2001:db8:9::1", "route get fc00:1::1")
	for _, want := range []string{
		"2001:db8:9::1 from ::  encap seg6 mode encap segs 2 [ fc00::1 fc00::2 ] dev d1 src 2001:db8:1::1 metric 1024 pref medium\n",
		"fc00:1::1 from ::  encap seg6local action End flavors psp dev d1 src 2001:db8:1::1 metric 1024 pref medium\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("route get: no %q in\n%s", want, out)
		}
	}
	out, _, _ = run(r, wire.Options{JSON: true}, "route show fc00:1::5", "route show 2001:db8:9::/64", "route show fc00:1::2", "sr tunsrc show")
	for _, want := range []string{
		`"dst":"fc00:1::5","encap":"seg6local","action":"End.B6.Encaps","srh":{"segs":["fc00::7","fc00::8"]},"dev":"d1"`,
		`"dst":"2001:db8:9::/64","encap":"seg6","mode":"encap","segs":["fc00::1","fc00::2"],"dev":"d1"`,
		`"action":"End","flavors":["next-csid"],"lblen":48,"nflen":16,"dev":"d1"`,
		`[{"tunsrc":"fc00::99"}]`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-j: no %s in\n%s", want, out)
		}
	}
	out, _, _ = run(r, wire.Options{}, "nexthop show id 7", "nexthop show id 8", "route show 2001:db8:c::/64")
	for _, want := range []string{
		"id 7  encap seg6local action End.T table 20 dev d1 scope link \n",
		"id 8  encap seg6 mode encap segs 1 [ fc00::9 ] via 2001:db8:1::2 dev d1 scope link \n",
		"2001:db8:c::/64 nhid 8  encap seg6 mode encap segs 1 [ fc00::9 ] via 2001:db8:1::2 dev d1 metric 1024 pref medium\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("nexthop show: no %q in\n%s", want, out)
		}
	}
	saved, _, _ := run(r, wire.Options{}, "save")
	again := router.New()
	if _, errs, st := run(again, wire.Options{}, strings.Split(strings.TrimSpace(saved), "\n")...); st != 0 {
		t.Fatalf("save's lines: %d %s\n%s", st, errs, saved)
	}
	for _, cmd := range []string{"route show", "sr tunsrc show", "nexthop show"} {
		a, _, _ := run(r, wire.Options{}, cmd)
		b, _, _ := run(again, wire.Options{}, cmd)
		if a != b {
			t.Errorf("%s after save's lines:\n%s\nwant\n%s", cmd, b, a)
		}
	}
}
