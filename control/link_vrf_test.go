package control

import (
	"strings"
	"testing"

	"urouter/control/wire"
	"urouter/router"
)

// TestVRFGrammar: `type vrf` as iproute2 6.1 reads it and Linux 6.18's
// vrf.c refuses it; master, vrf and nomaster; what link show, -d, -j,
// vrf show, rule show and the `vrf` selectors of route, address and
// neigh show; save names the VRF before its members' addresses.
func TestVRFGrammar(t *testing.T) {
	r := router.New()
	cases := []struct {
		cmd    string
		status int
		stderr string
	}{
		{"vrf show", 0, ""},
		{"link add red type vrf", 2, "Error: VRF table id is missing.\n"},
		{"link add red type vrf table 0", 2, "Error: Invalid VRF table id.\n"},
		{"link add red type vrf table x", 255, "Error: argument \"x\" is wrong: invalid table ID\n\n"},
		{"link add red type vrf tabel 10", 255, "vrf: unknown option \"tabel\"?\n" + vrfHelp + "\n"},
		{"link add red mtu 65576 type vrf table 10", 2, "Error: mtu greater than device maximum.\n"},
		{"link add red type vrf table 10", 0, ""},
		{"link set red mtu 65575", 0, ""},
		{"link add blue type vrf table 20", 0, ""},
		{"link add green type vrf table 20", 0, ""},
		{"link del green", 0, ""},
		{"sysctl -w net.vrf.strict_mode=1", 0, ""},
		{"link add green type vrf table 20", 2, "Error: Table is used by another VRF.\n"},
		{"link add x master red type vrf table 30", 2, "Error: Can not enslave an L3 master device to a VRF.\n"},
		{"link show x", 1, "Device \"x\" does not exist.\n"},
		{"link add d1 type dummy", 0, ""},
		{"link add d2 type dummy", 0, ""},
		{"link set d1 master nosuch", 255, "Error: argument \"nosuch\" is wrong: Device does not exist\n\n"},
		{"link set d1 vrf d2", 255, "Error: argument \"d2\" is wrong: Not a valid VRF name\n\n"},
		{"link set d1 master d2", 2, "RTNETLINK answers: Operation not supported\n"},
		{"link set red master blue", 2, "Error: Can not enslave an L3 master device to a VRF.\n"},
		{"link set lo master red", 2, "Error: Can not enslave loopback device to a VRF.\n"},
		{"link set d1 up master red", 0, ""},
		{"link set d2 vrf blue", 0, ""},
		{"link set d2 up", 0, ""},
		{"link set red up", 0, ""},
		{"address add 2001:db8:1::1/64 dev d1", 0, ""},
		{"address add 2001:db8:1::1/64 dev d2", 0, ""},
		{"route add 2001:db8:9::/64 via 2001:db8:1::2 vrf red", 0, ""},
		// a nexthop on a member: its gateway is checked in the VRF's table
		{"nexthop add id 1 via 2001:db8:1::2 dev d1", 0, ""},
		{"nexthop add id 2 via 2001:db8:1::3 dev d2", 0, ""},
		{"nexthop show vrf d1", 255, "Error: argument \"d1\" is wrong: Invalid VRF\n\n"},
		{"route add 2001:db8:9::/64 via 2001:db8:1::2 vrf nosuch", 255, "Error: argument \"nosuch\" is wrong: Invalid VRF\n\n"},
		{"route show vrf d1", 255, "Error: argument \"d1\" is wrong: Invalid VRF\n\n"},
		{"address show vrf d1", 255, "Error: argument \"d1\" is wrong: Not a valid VRF name\n\n"},
		{"neigh show vrf d1", 255, "Error: argument \"d1\" is wrong: Not a valid VRF name\n\n"},
		{"route get 2001:db8:9::1 vrf d1", 255, "Error: argument \"d1\" is wrong: Invalid VRF\n\n"},
		{"rule add l3mdev table 10 pref 5", 234, "table can not be specified for l3mdev rules\n"},
		{"vrf show nosuch", 1, "Invalid VRF\n"},
	}
	for _, c := range cases {
		_, errs, st := run(r, wire.Options{}, c.cmd)
		if st != c.status || errs != c.stderr {
			t.Errorf("%s:\n got %d %q\nwant %d %q", c.cmd, st, errs, c.status, c.stderr)
		}
	}
	checkVRFShows(t, r)
}

// checkVRFShows: what the shows say of TestVRFGrammar's router.
func checkVRFShows(t *testing.T, r *router.Router) {
	for _, c := range []struct{ cmd, want string }{
		{"vrf show", "Name              Table\n-----------------------\nred                 10\nblue                20\n"},
		{"vrf show red", "red 10\n"},
		{"rule show", "0:\tfrom all lookup local\n1000:\tfrom all lookup [l3mdev-table]\n32766:\tfrom all lookup main\n"},
		{"route show vrf red", "2001:db8:1::/64 dev d1 proto kernel metric 256 pref medium\n" +
			"2001:db8:9::/64 via 2001:db8:1::2 dev d1 metric 1024 pref medium\n"},
		{"route show table 20", "2001:db8:1::/64 dev d2 proto kernel metric 256 pref medium\n" +
			"local 2001:db8:1::1 dev d2 proto kernel metric 0 pref medium\n"},
		{"route get 2001:db8:9::1 vrf red", "2001:db8:9::1 from :: via 2001:db8:1::2 dev d1 table 10 src 2001:db8:1::1 metric 1024 pref medium\n"},
		{"route get 2001:db8:1::1 vrf blue", "local 2001:db8:1::1 from :: dev blue table 20 proto kernel src 2001:db8:1::1 metric 0 pref medium\n"},
		{"link show master red", ": d1: <BROADCAST,NOARP,UP,LOWER_UP> mtu 1500 qdisc noqueue master red state UNKNOWN "},
		{"link show type vrf", ": red: <NOARP,MASTER,UP,LOWER_UP> mtu 65575 qdisc noqueue state UP "},
		{"nexthop show vrf red", "id 1 via 2001:db8:1::2 dev d1 scope link \n"},
		{"nexthop show master blue", "id 2 via 2001:db8:1::3 dev d2 scope link \n"},
	} {
		out, errs, _ := run(r, wire.Options{}, c.cmd)
		if !strings.Contains(out, c.want) {
			t.Errorf("%s:\n got %q %s\nwant %q", c.cmd, out, errs, c.want)
		}
	}
	if out, _, _ := run(r, wire.Options{}, "nexthop show vrf red"); strings.Contains(out, "id 2 ") {
		t.Errorf("nexthop show vrf red lists blue's nexthop:\n%s", out)
	}
	out, _, _ := run(r, wire.Options{}, "link show vrf red")
	if strings.Count(out, "mtu") != 1 || !strings.Contains(out, " d1: ") {
		t.Errorf("link show vrf red lists other links than d1:\n%s", out)
	}
	out, _, _ = run(r, wire.Options{Details: true}, "link show d1", "link show red")
	for _, want := range []string{"    vrf_slave table 10 \n", "    vrf table 10 \n"} {
		if !strings.Contains(out, want) {
			t.Errorf("-d link show: no %q in\n%s", want, out)
		}
	}
	out, _, _ = run(r, wire.Options{JSON: true, Details: true}, "link show d1")
	if !strings.Contains(out, `"master":"red"`) || !strings.Contains(out, `"linkinfo":{"info_slave_kind":"vrf","info_slave_data":{"table":10}}`) {
		t.Errorf("-j -d link show d1: %s", out)
	}
	out, _, _ = run(r, wire.Options{Details: true}, "route get 2001:db8:9::1 iif d1", "route get 2001:db8:9::1")
	for _, want := range []string{
		"rule 1000: from all lookup [l3mdev-table]: matches\n  table 10 (vrf red): 2001:db8:9::/64 via 2001:db8:1::2 dev d1 table 10 proto boot metric 1024: decides\n",
		"rule 1000: from all lookup [l3mdev-table]: no match: it is in no VRF\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("route get -d: no %q in\n%s", want, out)
		}
	}
	if out, _, _ = run(r, wire.Options{}, "status"); !strings.Contains(out, "vrf red table 10 links 1\nvrf blue table 20 links 1\n") {
		t.Errorf("status:\n%s", out)
	}
	out, _, _ = run(r, wire.Options{}, "address show vrf blue")
	if !strings.Contains(out, " d2: ") || strings.Contains(out, " d1: ") {
		t.Errorf("address show vrf blue:\n%s", out)
	}
	checkVRFSave(t, r)
}

// checkVRFSave: save writes the VRF, the member's master before its
// address, no l3mdev rule, and loads back as the same router.
func checkVRFSave(t *testing.T, r *router.Router) {
	out, _, _ := run(r, wire.Options{}, "save")
	for _, want := range []string{
		"link add red index \\d+ mtu 65575 address \\S+ type vrf table 10\n",
		"link set d1 master red\n",
		"address add 2001:db8:1::1/64 dev d1\n",
		"route add 2001:db8:9::/64 via 2001:db8:1::2 dev d1 table 10.*\n",
	} {
		if !matchLine(out, want) {
			t.Errorf("save: no line %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "l3mdev") || strings.Index(out, "master red") > strings.Index(out, "address add") {
		t.Errorf("save writes the VRF's rule, or a member's address before its master:\n%s", out)
	}
	r2 := router.New()
	if _, e, st := run(r2, wire.Options{Batch: true}, strings.Split(strings.TrimSpace(out), "\n")...); st != 0 {
		t.Fatalf("the saved lines do not load: %s", e)
	}
	out2, _, _ := run(r2, wire.Options{}, "save")
	if out2 != out {
		t.Errorf("save of the loaded configuration differs:\n%s\nwant\n%s", out2, out)
	}
}

// TestVRFMovesRoutes: a link's address routes go to its VRF's table when
// it is enslaved and back to main and local when released or when its
// VRF is deleted, as Linux's cycle_netdev moves them; its global
// addresses go unless keep_addr_on_down keeps them.
func TestVRFMovesRoutes(t *testing.T) {
	r := newTestRouter(t) // d0 with 2001:db8:91::1/64
	steps := []struct {
		cmd, show, want string
	}{
		{"link add red type vrf table 10", "route show table 10", ""},
		{"link set d0 master red", "address show dev d0 scope global", ""},
		{"sysctl -w net.ipv6.conf.d0.keep_addr_on_down=1", "", ""},
		{"address add 2001:db8:91::1/64 dev d0", "route show table 10",
			"2001:db8:91::/64 dev d0 proto kernel metric 256 pref medium\nlocal 2001:db8:91::1 dev d0 proto kernel metric 0 pref medium\n"},
		{"link set d0 nomaster", "route show table 10", ""},
		{"", "route show", "2001:db8:91::/64 dev d0 proto kernel metric 256 pref medium\n"},
		{"", "route show table local", "local 2001:db8:91::1 dev d0 proto kernel metric 0 pref medium\n"},
		{"link set d0 master red", "route show", ""},
		{"link del red", "route show", "2001:db8:91::/64 dev d0 proto kernel metric 256 pref medium\n"},
		{"", "link show d0", ": d0: <BROADCAST,NOARP,UP,LOWER_UP> mtu 1500 qdisc noqueue state UNKNOWN"},
		{"", "rule show", "1000:\tfrom all lookup [l3mdev-table]\n"},
	}
	for _, st := range steps {
		if st.cmd != "" {
			if _, e, code := run(r, wire.Options{}, st.cmd); code != 0 {
				t.Fatalf("%s: %s", st.cmd, e)
			}
		}
		if st.show == "" {
			continue
		}
		out, _, _ := run(r, wire.Options{}, st.show)
		if st.want == "" && out != "" || !strings.Contains(out, st.want) {
			t.Errorf("after %q, %s:\n%s\nwant %q", st.cmd, st.show, out, st.want)
		}
	}
}

// TestVRFCapture: `capture dev VRF` captures its members; a VRF with
// none is refused (a capture of no link would be one of every link).
func TestVRFCapture(t *testing.T) {
	r := router.New()
	if _, e, st := run(r, wire.Options{Batch: true}, "link add red type vrf table 10", "link add d1 type dummy", "link add d2 type dummy"); st != 0 {
		t.Fatal(e)
	}
	s := &Session{r: r}
	dev := [][]byte{[]byte("dev"), []byte("red")}
	if _, err := s.parseCapture(dev); err == nil || err.msg != "Error: VRF red has no link to capture." {
		t.Fatalf("capture dev red without members: %v", err)
	}
	run(r, wire.Options{}, "link set d1 master red")
	q, err := s.parseCapture(dev)
	if err != nil || len(q.Spec.Links) != 1 || q.Spec.Links[0].Name != "d1" {
		t.Fatalf("capture dev red: %v %+v", err, q)
	}
}

// TestVRFShow: ipvrf's answers on a router with no VRF, and its words.
func TestVRFShow(t *testing.T) {
	r := router.New()
	for _, c := range []struct {
		cmd, out, errs string
		status         int
	}{
		{"vrf", "Name              Table\n-----------------------\nNo VRF has been configured\n", "", 0},
		{"vrf show default", "default 254\n", "", 0},
		{"vrf show lo", "", "Invalid VRF\n", 1},
		{"vrf show a b", "", "Usage:\tip vrf show [NAME] ...\n\tip vrf exec [NAME] cmd ...\n\tip vrf identify [PID]\n\tip vrf pids [NAME]\n", 255},
		{"vrf zzz", "", "Command \"zzz\" is unknown, try \"ip vrf help\".\n", 255},
		{"vrf exec red true", "", "Error: \"exec\" is not supported by this router.\n", 255},
	} {
		out, errs, st := run(r, wire.Options{}, c.cmd)
		if out != c.out || errs != c.errs || st != c.status {
			t.Errorf("%s:\n got %q %q %d\nwant %q %q %d", c.cmd, out, errs, st, c.out, c.errs, c.status)
		}
	}
	if out, _, _ := run(r, wire.Options{JSON: true}, "vrf show"); out != "[]\n" {
		t.Errorf("-j vrf show: %q", out)
	}
}

// TestVRFVLANMember: a VLAN link in a VRF has one linkinfo with both
// kinds, as print_linktype prints it.
func TestVRFVLANMember(t *testing.T) {
	r, e0 := newEtherRouter(t)
	if _, e, st := run(r, wire.Options{Batch: true}, "link add link "+e0+" name v5 type vlan id 5", "link add red type vrf table 10",
		"link set v5 master red"); st != 0 {
		t.Fatal(e)
	}
	out, _, _ := run(r, wire.Options{JSON: true, Details: true}, "link show v5")
	if want := `"linkinfo":{"info_kind":"vlan","info_data":{"protocol":"802.1Q","id":5,"flags":["REORDER_HDR"]},` +
		`"info_slave_kind":"vrf","info_slave_data":{"table":10}}`; !strings.Contains(out, want) {
		t.Errorf("-j -d link show v5: no %s in\n%s", want, out)
	}
	out, _, _ = run(r, wire.Options{Details: true}, "link show v5")
	if want := "    vlan protocol 802.1Q id 5 <REORDER_HDR> \n    vrf_slave table 10 \n"; !strings.Contains(out, want) {
		t.Errorf("-d link show v5: no %q in\n%s", want, out)
	}
}
