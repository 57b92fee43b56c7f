package control

import (
	"regexp"
	"strings"
	"testing"

	"urouter/control/wire"
)

// TestVLANGrammar: `type vlan` as iproute2 6.1 reads it and Linux 6.18's
// 8021q refuses it (vlan_validate, vlan_newlink, vlan_check_real_dev,
// vlan_dev_open, vlan_dev_change_mtu), on a TAP parent; what -d and -j
// show; `link show type vlan`; save names the parent before its VLAN
// links, and the VLAN links' sysctl directories as sysctl names them.
func TestVLANGrammar(t *testing.T) {
	r, e0 := newEtherRouter(t)
	cases := []struct {
		cmd    string
		status int
		stderr string
	}{
		{"link add link E0 name E0.100 type vlan id 100", 0, ""},
		{"link add E0.200 link E0 type vlan protocol 802.1ad id 200", 0, ""},
		{"link add link E0.200 name E0.200.7 mtu 1496 type vlan id 7 reorder_hdr off", 0, ""},
		{"link add link E0 name x type vlan id 100", 2, "Error: 8021q: VLAN device already exists.\n"},
		{"link add link E0 name x type vlan protocol 802.1ad id 100", 0, ""},
		{"link add link E0 name y type vlan id 4095", 2, "Error: 8021q: Invalid VLAN id.\n"},
		{"link add link E0 name y type vlan id 5000", 2, "Error: 8021q: Invalid VLAN id.\n"},
		{"link add link E0 name y type vlan id 65536", 255, "Error: argument \"65536\" is wrong: id is invalid\n"},
		{"link add link E0 name y type vlan id 5 protocol ipv6", 2, "Error: 8021q: Invalid VLAN protocol.\n"},
		{"link add link E0 name y type vlan id 5 protocol foo", 255, "Error: argument \"foo\" is wrong: protocol is invalid\n"},
		{"link add link E0 name y type vlan", 2, "Error: 8021q: VLAN id not specified.\n"},
		{"link add name y type vlan id 5", 2, "Error: 8021q: link not specified.\n"},
		{"link add link nosuch name y type vlan id 5", 1, "Cannot find device \"nosuch\"\n"},
		{"link add link nosuch name y type vlan id 5000 foo", 1, "Cannot find device \"nosuch\"\n"},
		{"link add link lo name y type vlan id 5", 2, "Error: 8021q: VLANs not supported on device.\n"},
		{"link add link d1 name y type vlan id 5", 2, "Error: 8021q: VLANs not supported on device.\n"},
		{"link add link E0 name y mtu 1501 type vlan id 5", 2, "RTNETLINK answers: Invalid argument\n"},
		{"link add link E0 name y address 01:00:00:00:00:01 type vlan id 5", 2, "Error: 8021q: Invalid link address.\n"},
		{"link add link E0 name y type vlan id 5 gvrp maybe", 255, "Error: argument of \"gvrp\" must be \"on\" or \"off\", not \"maybe\"\n"},
		{"link set E0.100 mtu 1501", 2, "RTNETLINK answers: Numerical result out of range\n"},
		{"link set E0 down", 0, ""},
		{"link set E0.100 up", 2, "RTNETLINK answers: Network is down\n"},
		{"link set E0 up", 0, ""},
		{"sysctl -w net.ipv6.conf.E0/100.hop_limit=9", 0, ""},
	}
	if _, e, st := run(r, wire.Options{}, "link add d1 type dummy"); st != 0 {
		t.Fatal(e)
	}
	for _, c := range cases {
		cmd := strings.ReplaceAll(c.cmd, "E0", e0)
		_, errs, st := run(r, wire.Options{}, cmd)
		if st != c.status || errs != c.stderr {
			t.Errorf("%s:\n got %d %q\nwant %d %q", cmd, st, errs, c.status, c.stderr)
		}
	}
	out, _, _ := run(r, wire.Options{Details: true}, "link show type vlan")
	for _, want := range []string{
		": E0.100@E0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000\n" +
			"    link/ether 02:00:00:00:01:01 brd ff:ff:ff:ff:ff:ff\n    vlan protocol 802.1Q id 100 <REORDER_HDR> \n",
		": E0.200@E0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500",
		"    vlan protocol 802.1ad id 200 <REORDER_HDR> \n",
		": E0.200.7@E0.200: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1496",
		"    vlan protocol 802.1Q id 7 <> \n",
	} {
		if want = strings.ReplaceAll(want, "E0", e0); !strings.Contains(out, want) {
			t.Errorf("-d link show type vlan: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, " "+e0+": <") || strings.Contains(out, "d1") {
		t.Errorf("link show type vlan lists other links:\n%s", out)
	}
	out, _, _ = run(r, wire.Options{JSON: true, Details: true}, "link show dev "+e0+".100")
	if want := `"link":"` + e0 + `","ifname":"` + e0 + `.100"`; !strings.Contains(out, want) ||
		!strings.Contains(out, `"linkinfo":{"info_kind":"vlan","info_data":{"protocol":"802.1Q","id":100,"flags":["REORDER_HDR"]}}`) {
		t.Errorf("-j -d link show: want %s and its linkinfo in\n%s", want, out)
	}
	out, _, _ = run(r, wire.Options{}, "save")
	for _, want := range []string{
		"link add E0.100 index \\d+ mtu 1500 link E0 type vlan id 100\n",
		"link add E0.200.7 index \\d+ mtu 1496 link E0.200 type vlan id 7 reorder_hdr off\n",
		"sysctl -q -w net.ipv6.conf.E0/100.hop_limit=9\n",
	} {
		want = strings.ReplaceAll(want, "E0", e0)
		if !matchLine(out, want) {
			t.Errorf("save: no line %q in\n%s", want, out)
		}
	}
	run(r, wire.Options{}, "link del d1")
}

// matchLine reports whether a line of out matches pattern (a regexp of
// the whole line).
func matchLine(out, pattern string) bool {
	re := regexp.MustCompile(`(?m)^` + strings.TrimSuffix(pattern, "\n") + `$`)
	return re.MatchString(out)
}
