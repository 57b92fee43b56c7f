package control

import (
	"strings"
	"testing"

	"urouter/control/wire"
	"urouter/router"
)

// briefRouter has lo, d0 (up, two addresses, one with a metric) and d1
// (down, none), with MACs of their own.
func briefRouter(t *testing.T) *router.Router {
	t.Helper()
	r := router.New()
	if _, e, st := run(r, wire.Options{Batch: true},
		"link add d0 address 02:00:00:00:00:01 type dummy", "link set d0 up mtu 9000",
		"address add 2001:db8:1::1/64 dev d0", "address add 2001:db8:2::1/64 dev d0 metric 5",
		"link add d1 address 02:00:00:00:00:02 type dummy"); st != 0 {
		t.Fatalf("setup: %s", e)
	}
	return r
}

// TestBriefAndOneline: -brief and -oneline as iproute2 6.1 prints them
// (print_linkinfo_brief, print_addrinfo, ipaddr_list_flush_or_save and
// _SL_ in ip/ipaddress.c): a link's name and state in columns of 16 and
// 14, then its MAC and flags (ip link) or its addresses (ip addr); -o
// joins a record's lines with "\" and prints an address a line, after
// its link's index and name, without the link's own lines; -6 addr
// leaves out the links without an address and, but with -d, the link/
// line, and prints the links from the inet6 family's message (no qdisc,
// group nor brd) unless it names one; in JSON, an address a selector
// passes over is {}, as print_selected_addrinfo leaves it. integration/brief_oracle_test.go
// holds the same to the kernel's ip.
func TestBriefAndOneline(t *testing.T) {
	r := briefRouter(t)
	lo := "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000"
	d0 := "2: d0: <BROADCAST,NOARP,UP,LOWER_UP> mtu 9000 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000"
	d1 := "3: d1: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN mode DEFAULT group default qlen 1000"
	valid := "       valid_lft forever preferred_lft forever"
	cases := []struct {
		o    wire.Options
		cmd  string
		want string
	}{
		{wire.Options{Brief: true}, "link show",
			"lo               UNKNOWN        00:00:00:00:00:00 <LOOPBACK,UP,LOWER_UP> \n" +
				"d0               UNKNOWN        02:00:00:00:00:01 <BROADCAST,NOARP,UP,LOWER_UP> \n" +
				"d1               DOWN           02:00:00:00:00:02 <BROADCAST,NOARP> \n"},
		{wire.Options{Brief: true, Oneline: true, Stats: 1, Details: true}, "link show d1",
			"d1               DOWN           02:00:00:00:00:02 <BROADCAST,NOARP> \n"},
		{wire.Options{Brief: true}, "address show",
			"lo               UNKNOWN        ::1/128 \n" +
				"d0               UNKNOWN        2001:db8:2::1/64 metric 5 2001:db8:1::1/64 \n" +
				"d1               DOWN           \n"},
		{wire.Options{Brief: true, Inet6: true}, "address show",
			"lo               UNKNOWN        ::1/128 \n" +
				"d0               UNKNOWN        2001:db8:2::1/64 metric 5 2001:db8:1::1/64 \n"},
		{wire.Options{Brief: true}, "address show dev d0 to 2001:db8:1::/48",
			"d0               UNKNOWN        2001:db8:1::1/64 \n"},
		{wire.Options{Brief: true, JSON: true}, "link show d0",
			`[{"ifname":"d0","operstate":"UNKNOWN","address":"02:00:00:00:00:01","flags":["BROADCAST","NOARP","UP","LOWER_UP"]}]` + "\n"},
		{wire.Options{Brief: true, JSON: true}, "address show",
			`[{"ifname":"lo","operstate":"UNKNOWN","addr_info":[{"local":"::1","prefixlen":128}]},` +
				`{"ifname":"d0","operstate":"UNKNOWN","addr_info":[{"local":"2001:db8:2::1","prefixlen":64,"metric":5},{"local":"2001:db8:1::1","prefixlen":64}]},` +
				`{"ifname":"d1","operstate":"DOWN","addr_info":[]}]` + "\n"},
		{wire.Options{Oneline: true}, "link show",
			lo + `\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00` + "\n" +
				d0 + `\    link/ether 02:00:00:00:00:01 brd ff:ff:ff:ff:ff:ff` + "\n" +
				d1 + `\    link/ether 02:00:00:00:00:02 brd ff:ff:ff:ff:ff:ff` + "\n"},
		{wire.Options{Oneline: true, Stats: 1}, "link show d1",
			d1 + `\    link/ether 02:00:00:00:00:02 brd ff:ff:ff:ff:ff:ff\    RX:  bytes packets errors dropped  missed   mcast           \` +
				`             0       0      0       0       0       0 \    TX:  bytes packets errors dropped carrier collsns           \` +
				`             0       0      0       0       0       0 ` + "\n"},
		{wire.Options{Oneline: true}, "address show",
			`1: lo    inet6 ::1/128 scope host \` + valid + "\n" +
				`2: d0    inet6 2001:db8:2::1/64 metric 5 scope global \` + valid + "\n" +
				`2: d0    inet6 2001:db8:1::1/64 scope global \` + valid + "\n"},
		{wire.Options{Oneline: true, JSON: true}, "address show dev d0 to 2001:db8:1::/48",
			`[{"addr_info":[{},{"index":2,"dev":"d0","family":"inet6","local":"2001:db8:1::1","prefixlen":64,"scope":"global",` +
				`"valid_life_time":4294967295,"preferred_life_time":4294967295}]}]` + "\n"},
		{wire.Options{Oneline: true, JSON: true}, "address show dev d1", `[{"addr_info":[]}]` + "\n"},
		{wire.Options{Inet6: true}, "address show",
			"1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 state UNKNOWN qlen 1000\n" +
				"    inet6 ::1/128 scope host \n" + valid + "\n" +
				"2: d0: <BROADCAST,NOARP,UP,LOWER_UP> mtu 9000 state UNKNOWN qlen 1000\n" +
				"    inet6 2001:db8:2::1/64 metric 5 scope global \n" + valid + "\n" +
				"    inet6 2001:db8:1::1/64 scope global \n" + valid + "\n"},
		{wire.Options{Inet6: true, Details: true}, "address show scope host",
			"1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 state UNKNOWN qlen 1000\n" +
				"    link/loopback 00:00:00:00:00:00\n" +
				"    inet6 ::1/128 scope host \n" + valid + "\n"},
		{wire.Options{Inet6: true, JSON: true}, "address show scope host",
			`[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP","LOWER_UP"],"mtu":65536,"operstate":"UNKNOWN","txqlen":1000,` +
				`"addr_info":[{"family":"inet6","local":"::1","prefixlen":128,"scope":"host","valid_life_time":4294967295,"preferred_life_time":4294967295}]}]` + "\n"},
		{wire.Options{Inet6: true}, "address show dev d0 to 2001:db8:1::/48",
			"2: d0: <BROADCAST,NOARP,UP,LOWER_UP> mtu 9000 qdisc noqueue state UNKNOWN group default qlen 1000\n" +
				"    inet6 2001:db8:1::1/64 scope global \n" + valid + "\n"},
		{wire.Options{Inet6: true, JSON: true}, "address show dev d1", "[]\n"},
		{wire.Options{Brief: true, JSON: true}, "address show dev d0 to 2001:db8:1::/48",
			`[{"ifname":"d0","operstate":"UNKNOWN","addr_info":[{},{"local":"2001:db8:1::1","prefixlen":64}]}]` + "\n"},
		{wire.Options{}, "address show dev d1",
			"3: d1: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN group default qlen 1000\n" +
				"    link/ether 02:00:00:00:00:02 brd ff:ff:ff:ff:ff:ff\n"},
	}
	for _, c := range cases {
		out, errs, st := run(r, c.o, c.cmd)
		if out != c.want || errs != "" || st != 0 {
			t.Errorf("%+v %s:\n got %q %q %d\nwant %q", c.o, c.cmd, out, errs, st, c.want)
		}
	}
	// a link that has been up keeps the qdisc it got then (noop before)
	if _, e, st := run(r, wire.Options{Batch: true}, "link set d1 up", "link set d1 down"); st != 0 {
		t.Fatal(e)
	}
	if out, _, _ := run(r, wire.Options{}, "link show d1"); !strings.Contains(out, " mtu 1500 qdisc noqueue state DOWN ") {
		t.Errorf("link show d1, up once:\n%s", out)
	}
}

// TestBriefNeigh: print_neigh_brief's columns (39 and 16), the link's
// left out when `dev` names it, the MAC only where print_neigh prints it;
// -oneline changes nothing of a neighbour (ipneigh.c has no _SL_).
func TestBriefNeigh(t *testing.T) {
	r, e0 := newEtherRouter(t)
	if _, e, st := run(r, wire.Options{Batch: true},
		"neigh add 2001:db8:91::9 lladdr 02:00:00:00:00:09 dev "+e0,
		"neigh add 2001:db8:91::a dev "+e0+" nud incomplete"); st != 0 {
		t.Fatal(e)
	}
	pad := strings.Repeat(" ", 16-len(e0))
	cases := []struct {
		o    wire.Options
		cmd  string
		want string
	}{
		{wire.Options{Brief: true}, "neigh show",
			"2001:db8:91::9                          " + e0 + pad + " 02:00:00:00:00:09\n" +
				"2001:db8:91::a                          " + e0 + pad + " \n"},
		{wire.Options{Brief: true, Stats: 1}, "neigh show dev " + e0 + " to 2001:db8:91::9",
			"2001:db8:91::9                          02:00:00:00:00:09\n"},
		{wire.Options{Brief: true, JSON: true}, "neigh show",
			`[{"dst":"2001:db8:91::9","dev":"` + e0 + `","lladdr":"02:00:00:00:00:09"},{"dst":"2001:db8:91::a","dev":"` + e0 + `"}]` + "\n"},
		{wire.Options{Oneline: true}, "neigh show",
			"2001:db8:91::9 dev " + e0 + " lladdr 02:00:00:00:00:09 PERMANENT \n" +
				"2001:db8:91::a dev " + e0 + " INCOMPLETE \n"},
	}
	for _, c := range cases {
		out, errs, st := run(r, c.o, c.cmd)
		if out != c.want || errs != "" || st != 0 {
			t.Errorf("%+v %s:\n got %q %q %d\nwant %q", c.o, c.cmd, out, errs, st, c.want)
		}
	}
}
