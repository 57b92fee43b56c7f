package control

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"urouter/control/wire"
	"urouter/router"
)

// run executes lines in a session of r, as the daemon would for a client
// with these options, and returns what the client would print and the
// exit status.
func run(r *router.Router, o wire.Options, lines ...string) (stdout, stderr string, status int) {
	return runIn(&Session{r: r, opt: o}, lines...)
}

// runIn is run in session s, as the test made it.
func runIn(s *Session, lines ...string) (stdout, stderr string, status int) {
	var out, errs bytes.Buffer
	o := s.opt
	s.out, s.errOut = bufio.NewWriter(&out), func(m string) { errs.WriteString(m + "\n") }
	if o.Batch && o.BatchName == "" {
		s.opt.BatchName = "test.batch"
	}
	status = s.Run(bufio.NewReader(strings.NewReader(strings.Join(lines, "\n") + "\n")))
	_ = s.out.Flush() // a bytes.Buffer takes everything
	return out.String(), errs.String(), status
}

// newTestRouter has a dummy link d0, up, with 2001:db8:91::1/64.
func newTestRouter(t *testing.T) *router.Router {
	t.Helper()
	r := router.New()
	if _, e, st := run(r, wire.Options{Batch: true},
		"link add d0 type dummy", "link set d0 up", "address add 2001:db8:91::1/64 dev d0"); st != 0 {
		t.Fatalf("setup: %s", e)
	}
	return r
}

// Each case's output and status are what iproute2 6.1 (`ip -6`) prints for
// the same command against Linux 6.18 with the same state; see
// integration/oracle_test.go for the side-by-side check with the kernel.
func TestRouteGrammar(t *testing.T) {
	r := newTestRouter(t)
	cases := []struct {
		cmd    string
		status int
		stderr string
	}{
		{"route add 2001:db8:5::/48 via 2001:db8:91::2 dev d0", 0, ""},
		{"route add 2001:db8:5::/48 via 2001:db8:91::3 dev d0", 2, "RTNETLINK answers: File exists\n"},
		{"route del 2001:db8:55::/48", 2, "RTNETLINK answers: No such process\n"},
		{"route add 2001:db8:56::/48 via 2001:db8:92::3 dev d0", 2, "RTNETLINK answers: No route to host\n"},
		{"route add 2001:db8:56::/48 dev nosuch", 1, "Cannot find device \"nosuch\"\n"},
		{"route add 2001:db8:56::/129 dev d0", 1, "Error: inet6 prefix is expected rather than \"2001:db8:56::/129\".\n"},
		{"route add 10.0.0.0/8 dev d0", 1, "Error: inet6 prefix is expected rather than \"10.0.0.0/8\".\n"},
		{"route add 2001:db8:56::1/48 dev d0", 2, "Error: Invalid prefix for given prefix length.\n"},
		{"route add 2001:db8:56::/48 dev d0 foo bar", 255, "Error: either \"to\" is duplicate, or \"foo\" is a garbage.\n"},
		{"route add 2001:db8:66::/48 dev d0 metric abc", 255, "Error: argument \"abc\" is wrong: \"metric\" value is invalid\n\n"},
		{"route add 2001:db8:66::/48 via zzz dev d0", 1, "Error: inet6 address is expected rather than \"zzz\".\n"},
		{"route add 2001:db8:66::/48 dev d0 table abc", 255, "Error: argument \"abc\" is wrong: \"table\" value is invalid\n\n"},
		{"route add 2001:db8:66::/48 dev d0 proto abc", 255, "Error: argument \"abc\" is wrong: \"protocol\" value is invalid\n\n"},
		{"route add 2001:db8:66::/48 dev d0 mtu abc", 255, "Error: argument \"abc\" is wrong: \"mtu\" value is invalid\n\n"},
		{"route add 2001:db8:71::/48", 2, "RTNETLINK answers: No such device\n"},
		{"route add local 2001:db8:72::/48", 2, "RTNETLINK answers: No such device\n"},
		{"route blah", 255, "Command \"blah\" is unknown, try \"ip route help\".\n"},
		{"blah", 1, "Object \"blah\" is unknown, try \"ip help\".\n"},
		{"route get 2001:db8:ff00::1", 2, "RTNETLINK answers: Network is unreachable\n"},
		{"route flush", 1, "\"ip route flush\" requires arguments.\n"},
		// abbreviations iproute2 accepts
		{"route ad 2001:db8:80::/48 dev d0 metri 5", 0, ""},
		{"r a 2001:db8:82::/48 dev d0 pro static", 0, ""},
		{"r a 2001:db8:83::/48 dev d0 t 100", 0, ""},
		{"r a 2001:db8:88::/48 dev d0 prio 8", 0, ""},
		{"r a to 2001:db8:86::/48 dev d0", 0, ""},
		{"r a u 2001:db8:87::/48 metric 5 preference 7", 0, ""},
		{"ro ap 2001:db8:8c::/48 dev d0", 0, ""},
		{"rou repl 2001:db8:8d::/48 dev d0", 0, ""},
		{"r d 2001:db8:8d::/48", 0, ""},
		{"r a 2001:db8:90::1 dev d0", 0, ""},
		// and those it does not
		{"r a 2001:db8:84::/48 de d0", 255, "Error: either \"to\" is duplicate, or \"de\" is a garbage.\n"},
		{"r a 2001:db8:85::/48 dev d0 mt 1400", 255, "Error: either \"to\" is duplicate, or \"mt\" is a garbage.\n"},
		{"r a 2001:db8:89::/48 dev d0 e 5", 255, "Error: either \"to\" is duplicate, or \"e\" is a garbage.\n"},
		// a down link refuses routes, as Linux does
		{"link add d1 type dummy", 0, ""},
		{"route add 2001:db8:70::/48 dev d1", 2, "Error: Nexthop device is not up.\n"},
		{"route add 2001:db8:70::/48 via 2001:db8:91::5", 0, ""},
		{"route append 2001:db8:70::/48 via 2001:db8:91::5", 2, "RTNETLINK answers: File exists\n"},
		{"route change 2001:db8:99::/48 dev d0", 2, "Error: Can not replace route - no match found.\n"},
	}
	for _, c := range cases {
		_, e, st := run(r, wire.Options{}, c.cmd)
		if st != c.status || e != c.stderr {
			t.Errorf("%q: status %d, stderr %q; want %d, %q", c.cmd, st, e, c.status, c.stderr)
		}
	}
	out, _, _ := run(r, wire.Options{}, "route show 2001:db8:87::/48", "route show 2001:db8:83::/48 table 100",
		"route show 2001:db8:80::/48", "route show 2001:db8:82::/48", "route show 2001:db8:90::1",
		"route show 2001:db8:70::/48")
	want := "unreachable 2001:db8:87::/48 dev lo metric 7 pref medium\n" +
		"2001:db8:83::/48 dev d0 metric 1024 pref medium\n" +
		"2001:db8:80::/48 dev d0 metric 5 pref medium\n" +
		"2001:db8:82::/48 dev d0 proto static metric 1024 pref medium\n" +
		"2001:db8:90::1 dev d0 metric 1024 pref medium\n" +
		"2001:db8:70::/48 via 2001:db8:91::5 dev d0 metric 1024 pref medium\n"
	if out != want {
		t.Errorf("show:\n%s\nwant:\n%s", out, want)
	}
}

// outputRouter is newTestRouter with a route of every kind the output
// tests print.
func outputRouter(t *testing.T) *router.Router {
	t.Helper()
	r := newTestRouter(t)
	for _, c := range []string{
		"route add 2001:db8:5::/48 via 2001:db8:91::2 dev d0",
		"route add unreachable 2001:db8:6::/48",
		"route add 2001:db8:7::/48 dev d0 metric 10 mtu 1400 proto static",
		"route add 2001:db8:8::/48 from 2001:db8:aa::/48 dev d0",
		"route add blackhole 2001:db8:9::/48 table 100",
		"route add 2001:db8:b::1/128 dev d0",
		"route add prohibit 2001:db8:c::/48 proto 99",
		"route add throw 2001:db8:d::/48",
		"route add 2001:db8:73::/48 via 2001:db8:92::5 dev d0 onlink",
		"route add 2001:db8:74::/48 via fe80::1 dev d0",
		"route append 2001:db8:74::/48 via fe80::2 dev d0",
		"route add ::/0 via fe80::1 dev d0",
	} {
		if _, e, st := run(r, wire.Options{}, c); st != 0 {
			t.Fatalf("%s: %s", c, e)
		}
	}
	return r
}

func TestRouteOutput(t *testing.T) {
	r := outputRouter(t)
	text, _, _ := run(r, wire.Options{}, "route show")
	want := `default via fe80::1 dev d0 metric 1024 pref medium
2001:db8:5::/48 via 2001:db8:91::2 dev d0 metric 1024 pref medium
unreachable 2001:db8:6::/48 dev lo metric 1024 pref medium
2001:db8:7::/48 dev d0 proto static metric 10 mtu 1400 pref medium
2001:db8:8::/48 from 2001:db8:aa::/48 dev d0 metric 1024 pref medium
2001:db8:b::1 dev d0 metric 1024 pref medium
prohibit 2001:db8:c::/48 dev lo proto openr metric 1024 pref medium
throw 2001:db8:d::/48 dev lo metric 1024 pref medium
2001:db8:73::/48 via 2001:db8:92::5 dev d0 metric 1024 onlink pref medium
2001:db8:74::/48 metric 1024 pref medium
	nexthop via fe80::1 dev d0 weight 1 
	nexthop via fe80::2 dev d0 weight 1 
2001:db8:91::/64 dev d0 proto kernel metric 256 pref medium
`
	if text != want {
		t.Errorf("route show:\n%s\nwant:\n%s", text, want)
	}
}

func TestRouteOutputJSON(t *testing.T) {
	r := outputRouter(t)
	js, _, _ := run(r, wire.Options{JSON: true}, "route show 2001:db8:7::/48", "route show 2001:db8:74::/48")
	wantJS := `[{"dst":"2001:db8:7::/48","dev":"d0","protocol":"static","metric":10,"flags":[],"metrics":[{"mtu":1400}],"pref":"medium"}]
[{"dst":"2001:db8:74::/48","metric":1024,"flags":[],"pref":"medium","nexthops":[{"gateway":"fe80::1","dev":"d0","weight":1,"flags":[]},{"gateway":"fe80::2","dev":"d0","weight":1,"flags":[]}]}]
`
	if js != wantJS {
		t.Errorf("-j route show:\n%s\nwant:\n%s", js, wantJS)
	}
	pretty, _, _ := run(r, wire.Options{JSON: true, Pretty: true}, "route show table 100")
	wantPretty := `[ {
        "type": "blackhole",
        "dst": "2001:db8:9::/48",
        "dev": "lo",
        "metric": 1024,
        "flags": [ ],
        "pref": "medium"
    } ]
`
	if pretty != wantPretty {
		t.Errorf("-j -p route show table 100:\n%s\nwant:\n%s", pretty, wantPretty)
	}
}

func TestRouteOutputTables(t *testing.T) {
	r := outputRouter(t)
	all, _, _ := run(r, wire.Options{}, "route show table all")
	for _, line := range []string{
		"blackhole 2001:db8:9::/48 dev lo table 100 metric 1024 pref medium\n",
		"local 2001:db8:91::1 dev d0 table local proto kernel metric 0 pref medium\n",
		"local ::1 dev lo table local proto kernel metric 0 pref medium\n",
	} {
		if !strings.Contains(all, line) {
			t.Errorf("route show table all lacks %q", line)
		}
	}
	details, _, _ := run(r, wire.Options{Details: true}, "route show 2001:db8:5::/48")
	if details != "unicast 2001:db8:5::/48 via 2001:db8:91::2 dev d0 proto boot scope global metric 1024 pref medium\n" {
		t.Errorf("-d: %q", details)
	}
}

func TestRouteOutputSelectors(t *testing.T) {
	r := outputRouter(t)
	for cmd, want := range map[string]string{
		"route get 2001:db8:5::1":                            "2001:db8:5::1 from :: via 2001:db8:91::2 dev d0 src 2001:db8:91::1 metric 1024 pref medium\n",
		"route get 2001:db8:8::1 from 2001:db8:aa::5":        "2001:db8:8::1 from 2001:db8:aa::5 dev d0 src 2001:db8:91::1 metric 1024 pref medium\n",
		"route get 2001:db8:91::1":                           "local 2001:db8:91::1 from :: dev lo table local proto kernel src 2001:db8:91::1 metric 0 pref medium\n",
		"route get 2001:db8:5::1 from 2001:db8:91::1 iif d0": "2001:db8:5::1 from 2001:db8:91::1 via 2001:db8:91::2 dev d0 metric 1024 iif d0 pref medium\n",
		"route show root 2001:db8:70::/44":                   "2001:db8:73::/48 via 2001:db8:92::5 dev d0 metric 1024 onlink pref medium\n2001:db8:74::/48 metric 1024 pref medium\n\tnexthop via fe80::1 dev d0 weight 1 \n\tnexthop via fe80::2 dev d0 weight 1 \n",
		"route show match 2001:db8:5:1::/64":                 "default via fe80::1 dev d0 metric 1024 pref medium\n2001:db8:5::/48 via 2001:db8:91::2 dev d0 metric 1024 pref medium\n",
		"route show proto static":                            "2001:db8:7::/48 dev d0 metric 10 mtu 1400 pref medium\n",
		"route show type unreachable":                        "unreachable 2001:db8:6::/48 dev lo metric 1024 pref medium\n",
	} {
		got, e, st := run(r, wire.Options{}, cmd)
		if got != want || st != 0 {
			t.Errorf("%s: %q (%s, %d)\nwant %q", cmd, got, e, st, want)
		}
	}
	for cmd, want := range map[string]string{
		"route get 2001:db8:6::1": "RTNETLINK answers: No route to host\n",
		"route get 2001:db8:c::1": "RTNETLINK answers: Permission denied\n",
		"route show table 4444":   "Error: ipv6: FIB table does not exist.\nDump terminated\n",
	} {
		if _, e, st := run(r, wire.Options{}, cmd); e != want || st != 2 {
			t.Errorf("%s: %q %d, want %q", cmd, e, st, want)
		}
	}
}

func TestBatch(t *testing.T) {
	r := newTestRouter(t)
	lines := []string{
		"route add 2001:db8:60::/48 dev d0",
		"route add 2001:db8:61::/48 dev d0 # with a comment",
		"# a comment line",
		"",
		"route add 2001:db8:60::/48 dev d0",
		"route add 2001:db8:62::/48 dev d0",
	}
	_, e, st := run(r, wire.Options{Batch: true, BatchName: "/tmp/b1"}, lines...)
	if st != 1 || e != "RTNETLINK answers: File exists\nCommand failed /tmp/b1:5\n" {
		t.Errorf("batch: %d %q", st, e)
	}
	out, _, _ := run(r, wire.Options{}, "route show root 2001:db8:60::/46")
	if out != "2001:db8:60::/48 dev d0 metric 1024 pref medium\n2001:db8:61::/48 dev d0 metric 1024 pref medium\n" {
		t.Errorf("a batch stops at its first error, with the lines before it applied:\n%s", out)
	}
	_, e, st = run(r, wire.Options{Batch: true, Force: true, BatchName: "/tmp/b1"}, lines...)
	if st != 1 || strings.Count(e, "Command failed") != 3 {
		t.Errorf("-force: %d %q", st, e)
	}
	out, _, _ = run(r, wire.Options{}, "route show 2001:db8:62::/48")
	if out == "" {
		t.Errorf("-force goes on after errors")
	}
	_, e, st = run(r, wire.Options{Batch: true, Force: true, BatchName: "-"}, "route add 2001:db8:63::/48 dev d0 bogus", "route add 2001:db8:64::/48 dev d0")
	if st != 255 || e != "Error: either \"to\" is duplicate, or \"bogus\" is a garbage.\n" {
		t.Errorf("parse error in a batch: %d %q", st, e)
	}
	if out, _, _ := run(r, wire.Options{}, "route show 2001:db8:64::/48"); out != "" {
		t.Errorf("a parse error ends even a forced batch, as ip's exit(-1): %q", out)
	}
}

// TestRejectsChangeNothing: a refused command leaves every table as it was.
func TestRejectsChangeNothing(t *testing.T) {
	r := newTestRouter(t)
	run(r, wire.Options{}, "route add 2001:db8:5::/48 via 2001:db8:91::2 dev d0")
	before, _, _ := run(r, wire.Options{}, "route show table all")
	gens := map[uint32]uint64{}
	for _, tb := range r.Tables.All() {
		gens[tb.ID()] = tb.Generation()
	}
	for _, c := range []string{
		"route add 2001:db8:5::/48 dev d0", "route add 2001:db8:5::1/48 dev d0", "route add 2001:db8::/129 dev d0",
		"route add 2001:db8:6::/48 dev nosuch", "route add 2001:db8:6::/48 dev d0 metric x",
		"route add 2001:db8:6::/48 via 2001:db8:99::1", "route del 2001:db8:7::/48", "link add d0 type dummy",
		"address add 2001:db8:91::1/64 dev d0", "address del 2001:db8:92::1/64 dev d0", "link set nosuch up",
		"route add 2001:db8:6::/48 dev d0 table 300 bogus",
	} {
		if _, _, st := run(r, wire.Options{}, c); st == 0 {
			t.Errorf("%s: accepted", c)
		}
	}
	after, _, _ := run(r, wire.Options{}, "route show table all")
	if after != before {
		t.Errorf("rejected commands changed the routes:\n%s\nbefore:\n%s", after, before)
	}
	for _, tb := range r.Tables.All() {
		if g, ok := gens[tb.ID()]; !ok || g != tb.Generation() {
			t.Errorf("table %d changed (generation %d -> %d)", tb.ID(), g, tb.Generation())
		}
	}
}

func TestLinkAndAddress(t *testing.T) {
	r := newTestRouter(t)
	out, _, _ := run(r, wire.Options{}, "route show table all")
	for _, l := range []string{"2001:db8:91::/64 dev d0 proto kernel metric 256 pref medium\n",
		"local 2001:db8:91::1 dev d0 table local proto kernel metric 0 pref medium\n"} {
		if !strings.Contains(out, l) {
			t.Errorf("address add should add %q", l)
		}
	}
	// a user route to the connected prefix coexists with metric 1024
	if _, e, st := run(r, wire.Options{}, "route add 2001:db8:91::/64 dev d0"); st != 0 {
		t.Errorf("user route beside the connected one: %s", e)
	}
	run(r, wire.Options{}, "route add 2001:db8:5::/48 via 2001:db8:91::2 dev d0 table 7")
	// down: every route through the link goes, and so do its addresses
	run(r, wire.Options{}, "link set d0 down")
	out, _, _ = run(r, wire.Options{}, "route show table all")
	if strings.Contains(out, " d0 ") {
		t.Errorf("link down left routes through it:\n%s", out)
	}
	if a, _, _ := run(r, wire.Options{}, "address show dev d0"); strings.Contains(a, "inet6") {
		t.Errorf("link down left addresses: %s", a)
	}
	run(r, wire.Options{}, "link set d0 up", "address add 2001:db8:91::1/64 dev d0")
	ls, _, _ := run(r, wire.Options{}, "link show d0")
	if !strings.HasPrefix(ls, "2: d0: <BROADCAST,NOARP,UP,LOWER_UP> mtu 1500 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000\n    link/ether ") {
		t.Errorf("link show: %q", ls)
	}
	if _, e, st := run(r, wire.Options{}, "link set d0 mtu 1000"); st != 2 || e != "Error: mtu less than device minimum.\n" {
		t.Errorf("mtu below IPv6's minimum: %d %q", st, e)
	}
	run(r, wire.Options{}, "link set d0 mtu 9000")
	if ls, _, _ := run(r, wire.Options{}, "link show d0"); !strings.Contains(ls, " mtu 9000 ") {
		t.Errorf("mtu not set: %s", ls)
	}
	as, _, _ := run(r, wire.Options{}, "address show dev d0")
	l2 := strings.SplitAfter(ls, "\n")[1] // ip address shows the link-layer line too
	if as != "2: d0: <BROADCAST,NOARP,UP,LOWER_UP> mtu 9000 qdisc noqueue state UNKNOWN group default qlen 1000\n"+l2+"    inet6 2001:db8:91::1/64 scope global \n       valid_lft forever preferred_lft forever\n" {
		t.Errorf("address show: %q", as)
	}
	if _, e, st := run(r, wire.Options{}, "address add 2001:db8:91::1/64 dev d0"); st != 2 || e != "Error: ipv6: address already assigned.\n" {
		t.Errorf("duplicate address: %d %q", st, e)
	}
	run(r, wire.Options{}, "address del 2001:db8:91::1/64 dev d0")
	out, _, _ = run(r, wire.Options{}, "route show table all")
	if strings.Contains(out, "proto kernel metric 256") || strings.Contains(out, "local 2001:db8:91::1") {
		t.Errorf("address del left its routes:\n%s", out)
	}
	if _, e, st := run(r, wire.Options{}, "link del d0"); st != 0 {
		t.Errorf("link del: %s", e)
	}
	if _, e, st := run(r, wire.Options{}, "link show d0"); st != 1 || e != "Device \"d0\" does not exist.\n" {
		t.Errorf("deleted link: %d %q", st, e)
	}
}

// TestGatewayThroughEarlierLine: a batch line may use a gateway that an
// earlier line of the same batch made reachable, and not one an earlier
// line took away, as `ip -batch` applies each line before the next.
func TestGatewayThroughEarlierLine(t *testing.T) {
	r := newTestRouter(t)
	_, e, st := run(r, wire.Options{Batch: true},
		"route add 2001:db8:77::/64 dev d0",
		"route add 2001:db8:1::/48 via 2001:db8:77::1",
		"route add 2001:db8:2::/48 via 2001:db8:77::1",
		"route del 2001:db8:77::/64",
		"route add 2001:db8:3::/48 via 2001:db8:77::1")
	if st != 1 || e != "RTNETLINK answers: No route to host\nCommand failed test.batch:5\n" {
		t.Fatalf("status %d, errors %q", st, e)
	}
	out, _, _ := run(r, wire.Options{}, "route show root 2001:db8::/32")
	want := "2001:db8:1::/48 via 2001:db8:77::1 dev d0 metric 1024 pref medium\n" +
		"2001:db8:2::/48 via 2001:db8:77::1 dev d0 metric 1024 pref medium\n" +
		"2001:db8:91::/64 dev d0 proto kernel metric 256 pref medium\n"
	if out != want {
		t.Fatalf("routes:\n%s\nwant:\n%s", out, want)
	}
}

// TestBatchDeleteForgetsPaths: a route deleted in a batch takes with it
// what the paths through it were checked against, for a multipath route
// as for a single path (as Linux applies each line before the next).
func TestBatchDeleteForgetsPaths(t *testing.T) {
	for _, path := range []string{"via 2001:db8:99::2", "nexthop via 2001:db8:99::2 nexthop via 2001:db8:91::3"} {
		r := newTestRouter(t)
		_, e, st := run(r, wire.Options{Batch: true}, "route add 2001:db8:99::/64 dev d0",
			"route add 2001:db8:5::/48 "+path, "route del 2001:db8:99::/64", "route add 2001:db8:6::/48 "+path)
		if want := "RTNETLINK answers: No route to host\nCommand failed test.batch:4\n"; st != 1 || e != want {
			t.Errorf("%s: status %d, stderr %q; want 1, %q", path, st, e, want)
		}
	}
}

// applyConfig runs the config file at path on r, as the daemon's
// --config does (server.ApplyConfig), what it shows discarded.
func applyConfig(r *router.Router, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read only
	return RunConfig(r, path, f, max(wire.FileSize(f), 0), io.Discard)
}
