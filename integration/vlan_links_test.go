package integration

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// vlanLab is a router on one trunk to an access switch: VLANs 100 and 200
// (802.1Q), QinQ 300 (802.1ad) around 10, and the untagged LAN, each with
// a host. Where the kernel has 8021q, the hosts' side is kernel VLAN
// devices on the trunk's far end, moved into the hosts' namespaces;
// where it has not (these machines), it is tools/tagswitch's tc BPF
// programs on a switch namespace between the trunk and the hosts' veths.
type vlanLab struct {
	r, sw  string            // the router's and the switch's namespaces
	hosts  map[string]string // by VLAN name (100, 200, 300.10, untagged): namespace
	trunk  string            // the trunk's far end, in sw (tcpdump's)
	d      *daemon
	kernel bool // the hosts are on kernel VLAN devices
}

var tagswitchBuild = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(filepath.Dir(plain), "tagswitch")
	out, err := exec.Command("go", "build", "-o", bin, "../tools/tagswitch").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building tools/tagswitch: %v\n%s", err, out)
	}
	return bin, nil
})

// kernelHas8021q reports whether the kernel makes VLAN devices.
func kernelHas8021q(t *testing.T) bool {
	ns := newNetns(t, "uro-8021q")
	mustRun(t, "ip", "-n", ns, "link", "add", "p0", "type", "veth", "peer", "name", "p1") // no dummy driver here either
	_, _, st := runCmd("ip", "-n", ns, "link", "add", "link", "p0", "name", "p0.5", "type", "vlan", "id", "5")
	return st == 0
}

// The lab's VLANs: the router's link (none for a tag it has no link
// for), the hosts' tags (tagswitch's spelling), the subnet and the host's
// address in it, the MTU (QinQ's inner one is 8 bytes short: the trunk's
// veth takes one tag beyond its MTU, as Linux's is_skb_forwardable does,
// and AF_PACKET none of 802.1ad's, packet_extra_vlan_len_allowed).
var labVLANs = []struct{ name, link, tags, net, host, mtu string }{
	{"untagged", "lan1", "untagged", "2001:db8:e1", "::2", "1500"},
	{"100", "lan1.100", "q100", "2001:db8:e100", "::2", "1500"},
	{"200", "lan1.200", "q200", "2001:db8:e200", "::2", "1500"},
	{"300.10", "lan1.300.10", "ad300,q10", "2001:db8:e310", "::2", "1492"},
	{"stray", "", "q300", "2001:db8:e1", "::9", "1500"}, // 802.1Q 300: no link of the router's
}

func newVLANLab(t *testing.T) *vlanLab {
	t.Helper()
	needRoot(t)
	l := &vlanLab{r: newNetns(t, "uro-vr"), sw: newNetns(t, "uro-vs"), hosts: map[string]string{}, kernel: kernelHas8021q(t)}
	mustRun(t, "ip", "-n", l.r, "link", "add", "trunk", "type", "veth", "peer", "name", "swt", "netns", l.sw)
	mustRun(t, "ip", "netns", "exec", l.sw, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
	mustRun(t, "ip", "-n", l.sw, "link", "set", "swt", "up")
	l.trunk = "swt"
	for _, v := range labVLANs {
		l.hosts[v.name] = newNetns(t, "uro-vh")
	}
	if l.kernel {
		l.kernelHosts(t)
	} else {
		l.switchHosts(t, "untagged")
	}
	for _, v := range labVLANs {
		h := l.hosts[v.name]
		mustRun(t, "ip", "netns", "exec", h, "sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0")
		mustRun(t, "ip", "-n", h, "link", "set", "eth0", "mtu", v.mtu)
		mustRun(t, "ip", "-n", h, "addr", "add", v.net+v.host+"/64", "dev", "eth0", "nodad")
		mustRun(t, "ip", "-n", h, "link", "set", "eth0", "up")
		mustRun(t, "ip", "-n", h, "-6", "route", "add", "default", "via", v.net+"::1")
	}
	config := []string{
		"link add lan1 type host dev trunk",
		"link add link lan1 name lan1.100 type vlan id 100",
		"link add link lan1 name lan1.200 type vlan id 200",
		"link add link lan1 name lan1.300 type vlan protocol 802.1ad id 300",
		"link add link lan1.300 name lan1.300.10 mtu 1492 type vlan id 10",
		"sysctl -w net.ipv6.conf.all.keep_addr_on_down=1",
		"link set lan1 up",
	}
	for _, v := range labVLANs {
		if v.link != "" {
			config = append(config, "address add "+v.net+"::1/64 dev "+v.link)
		}
	}
	l.d = startDaemon(t, l.r, config...)
	return l
}

// switchHosts puts each host on a port of the switch namespace, tagged by
// tagswitch; the untagged LAN's host sends its frames with a priority tag
// (VID 0) when untagged says "q0".
func (l *vlanLab) switchHosts(t *testing.T, untagged string) {
	var ports []string
	for _, v := range labVLANs {
		port := "sw" + strings.ReplaceAll(v.name, ".", "")
		if _, _, st := runCmd("ip", "-n", l.sw, "link", "show", port); st != 0 {
			mustRun(t, "ip", "-n", l.hosts[v.name], "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", l.sw)
			mustRun(t, "ip", "-n", l.sw, "link", "set", port, "up")
		}
		tags := v.tags
		if tags == "untagged" {
			tags = untagged
		}
		ports = append(ports, port+"="+tags)
	}
	bin, err := tagswitchBuild()
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, "ip", append([]string{"netns", "exec", l.sw, bin, "swt"}, ports...)...)
}

// kernelHosts makes each host's eth0 a kernel VLAN device of the trunk's
// far end, and the far end itself the untagged LAN's host's (moved last,
// after the VLAN devices made on it).
func (l *vlanLab) kernelHosts(t *testing.T) {
	for _, v := range labVLANs[1:] {
		dev := "v" + strings.ReplaceAll(v.name, ".", "")
		switch v.tags {
		case "ad300,q10":
			mustRun(t, "ip", "-n", l.sw, "link", "add", "link", "swt", "name", "v300", "type", "vlan", "protocol", "802.1ad", "id", "300")
			mustRun(t, "ip", "-n", l.sw, "link", "set", "v300", "up")
			mustRun(t, "ip", "-n", l.sw, "link", "add", "link", "v300", "name", dev, "type", "vlan", "id", "10")
		default:
			mustRun(t, "ip", "-n", l.sw, "link", "add", "link", "swt", "name", dev, "type", "vlan", "id", strings.TrimPrefix(v.tags, "q"))
		}
		mustRun(t, "ip", "-n", l.sw, "link", "set", dev, "netns", l.hosts[v.name])
		mustRun(t, "ip", "-n", l.hosts[v.name], "link", "set", dev, "name", "eth0")
	}
	h := l.hosts["untagged"]
	mustRun(t, "ip", "-n", l.sw, "link", "set", "swt", "netns", h)
	mustRun(t, "ip", "-n", h, "link", "set", "swt", "name", "eth0")
	l.sw, l.trunk = h, "eth0"
}

// ping6 pings dst from namespace ns and reports whether it was answered.
func (l *vlanLab) ping(ns, dst string) (string, bool) {
	out, errs, st := runCmd("ip", "netns", "exec", ns, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", dst)
	return out + errs, st == 0
}

// linkState is link's operstate and flags as the router shows them.
func (l *vlanLab) linkState(t *testing.T, link string) (string, []string) {
	out, _, _ := l.d.run("-j", "link", "show", "dev", link)
	var ls []struct {
		Operstate string   `json:"operstate"`
		Flags     []string `json:"flags"`
	}
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) != 1 {
		t.Fatalf("link show %s: %v\n%s", link, err, out)
	}
	return ls[0].Operstate, ls[0].Flags
}

// TestVLANLinks: one trunk to the router carries VLANs 100 and 200, QinQ
// (802.1ad 300 around 802.1Q 10) and the untagged LAN, each a LAN of
// kernel hosts. Every host reaches every other through the router (ping,
// traceroute6 through the router's address on the sender's VLAN, TCP with
// iperf3); each host's neighbour entry for its gateway has the router's
// MAC; tcpdump on the trunk sees the tags; a frame of a tag the router
// has no link for (802.1Q 300: its 802.1ad 300 is another) is dropped and
// counted, one with a priority tag is the untagged LAN's. The parent set
// down closes its VLAN links (M-DOWN, and no setting them up), set up
// opens them; its carrier lost makes them LOWERLAYERDOWN.
func TestVLANLinks(t *testing.T) {
	parallel(t)
	l := newVLANLab(t)
	if l.kernel {
		t.Log("hosts on kernel VLAN devices (8021q)")
	} else {
		t.Log("hosts tagged by tools/tagswitch's tc BPF programs (this kernel has no 8021q)")
	}
	for _, a := range labVLANs[:4] {
		for _, b := range labVLANs[:4] {
			dst := b.net + "::1"
			if a != b {
				dst = b.net + b.host
			}
			if out, ok := l.ping(l.hosts[a.name], dst); !ok {
				t.Errorf("from VLAN %s to %s: %s", a.name, dst, out)
			}
		}
	}
	out, _, _ := runCmd("ip", "netns", "exec", l.hosts["100"], "traceroute6", "-n", "-q", "1", "-w", "2", "2001:db8:e200::2")
	if !regexp.MustCompile(`(?m)^ 1  2001:db8:e100::1 .*\n 2  2001:db8:e200::2 `).MatchString(out) {
		t.Errorf("traceroute6 from VLAN 100 to 200:\n%s", out)
	}
	l.checkNeighbours(t)
	l.checkTcpdump(t)
	for _, c := range [][2]string{{"100", "200"}, {"untagged", "300.10"}} {
		l.iperf(t, c[0], c[1])
	}
	l.checkStrayTags(t)
	l.checkParent(t)
	l.checkTrunkReplaced(t)
}

// checkTrunkReplaced: the trunk's veth deleted, its VLAN links wait with
// their parent (LOWERLAYERDOWN under NOTPRESENT); a new veth of its name
// (tagged again) is attached, and its socket reads tags again: VLAN 100
// reaches 200.
func (l *vlanLab) checkTrunkReplaced(t *testing.T) {
	if l.kernel {
		t.Log("the trunk replaced: with tagswitch alone (the kernel's VLAN devices would go with it)")
		return
	}
	mustRun(t, "ip", "-n", l.r, "link", "del", "trunk")
	waitUntil(t, "lan1 to wait", func() bool { st, _ := l.linkState(t, "lan1"); return st == "NOTPRESENT" })
	if st, _ := l.linkState(t, "lan1.100"); st != "LOWERLAYERDOWN" {
		t.Errorf("lan1.100 %s while its parent waits, want LOWERLAYERDOWN", st)
	}
	mustRun(t, "ip", "-n", l.r, "link", "add", "trunk", "type", "veth", "peer", "name", "swt", "netns", l.sw)
	mustRun(t, "ip", "-n", l.sw, "link", "set", "swt", "up")
	l.switchHosts(t, "untagged")
	l.pingWithin(t, "100", "2001:db8:e200::2", "VLAN 100 to 200 over a new trunk")
}

// checkNeighbours: each host's entry for its gateway has the MAC of the
// router's link, the trunk's.
func (l *vlanLab) checkNeighbours(t *testing.T) {
	out, _, _ := l.d.run("-j", "link", "show", "dev", "lan1")
	var ls []struct {
		Address string `json:"address"`
	}
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) != 1 {
		t.Fatalf("link show lan1: %v\n%s", err, out)
	}
	for _, v := range labVLANs[:4] {
		got := mustRun(t, "ip", "-n", l.hosts[v.name], "-6", "neigh", "show", v.net+"::1")
		if !strings.Contains(got, "lladdr "+ls[0].Address) {
			t.Errorf("VLAN %s's host has for its gateway %q, want the router's MAC %s", v.name, got, ls[0].Address)
		}
	}
}

// checkTcpdump: tcpdump on the trunk's far end, filtering vlan 100, sees
// the echo requests and replies of VLAN 100 with their tag.
func (l *vlanLab) checkTcpdump(t *testing.T) {
	dump := startIn(t, l.sw, "tcpdump", "-l", "-e", "-n", "-c", "2", "-i", l.trunk, "vlan 100 and icmp6 and ip6[40] == 129")
	waitUntil(t, "tcpdump to listen", func() bool { return strings.Contains(dump.out.String(), "listening on") })
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(dump.out.String(), "2 packets captured") && time.Now().Before(deadline) {
		l.ping(l.hosts["100"], "2001:db8:e200::2")
	}
	out := dump.out.String()
	if !strings.Contains(out, "ethertype 802.1Q (0x8100), length 122: vlan 100, p 0, ethertype IPv6 (0x86dd), 2001:db8:e200::2 > 2001:db8:e100::2: ICMP6, echo reply") {
		t.Errorf("tcpdump -e vlan 100 on the trunk:\n%s", out)
	}
}

// iperf runs TCP from VLAN a's host to VLAN b's for 2 s.
func (l *vlanLab) iperf(t *testing.T, a, b string) {
	var dst string
	for _, v := range labVLANs {
		if v.name == b {
			dst = v.net + v.host
		}
	}
	srv := startIn(t, l.hosts[b], "iperf3", "-s", "-1")
	defer srv.stop()
	waitUntil(t, "iperf3 to listen", func() bool {
		o, _, _ := runCmd("ip", "netns", "exec", l.hosts[b], "ss", "-Htln", "sport", "= :5201")
		return strings.Contains(o, "5201")
	})
	out, errs, st := runCmd("ip", "netns", "exec", l.hosts[a], "iperf3", "-6", "-c", dst, "-t", "2", "-J")
	bps, ok := iperfReceived(out)
	if st != 0 || !ok || bps < 50e6 {
		t.Errorf("iperf3 from VLAN %s to %s: %.0f bit/s (%d)\n%s%s", a, b, bps, st, out, errs)
	}
	t.Logf("TCP from VLAN %s to %s through the trunk: %.2f Gbit/s", a, b, bps/1e9)
}

// checkStrayTags: the echo requests of a host on 802.1Q 300 (the router has
// 802.1ad 300 only) are not answered and are counted unknown_vlan on the
// trunk's link; a host sending with a priority tag is the untagged LAN's.
func (l *vlanLab) checkStrayTags(t *testing.T) {
	before := dropCount(t, l.d, "lan1", "unknown_vlan")
	if out, ok := l.ping(l.hosts["stray"], "2001:db8:e1::1"); ok {
		t.Errorf("a host tagged 802.1Q 300 was answered: %s", out)
	}
	if after := dropCount(t, l.d, "lan1", "unknown_vlan"); after < before+2 {
		t.Errorf("unknown_vlan on lan1 went from %.0f to %.0f after two echo requests tagged 300", before, after)
	}
	if l.kernel {
		t.Log("a priority-tagged host: tagswitch's alone (a kernel VLAN device 0 takes no untagged replies)")
		return
	}
	l.switchHosts(t, "q0")
	if out, ok := l.ping(l.hosts["untagged"], "2001:db8:e100::2"); !ok {
		t.Errorf("a host sending with a priority tag: %s", out)
	}
	l.switchHosts(t, "untagged")
}

// dropCount is a link's count of drops for reason.
func dropCount(t *testing.T, d *daemon, link, reason string) float64 {
	out, _, _ := d.run("-s", "-j", "link", "show", "dev", link)
	var ls []struct {
		Stats struct {
			Drops map[string]float64 `json:"drops"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) != 1 {
		t.Fatalf("link show -s %s: %v\n%s", link, err, out)
	}
	return ls[0].Stats.Drops[reason]
}

// checkParent: the parent set down closes its VLAN links, which cannot be
// set up until it is, and set up opens them; its carrier lost makes them
// LOWERLAYERDOWN, and back UP; traffic crosses again.
func (l *vlanLab) checkParent(t *testing.T) {
	state := func(link, want string, flag string) {
		t.Helper()
		waitUntil(t, link+" "+want+" "+flag, func() bool {
			st, flags := l.linkState(t, link)
			return st == want && (flag == "" || slices.Contains(flags, flag))
		})
	}
	if _, e, st := l.d.run("link", "set", "lan1", "down"); st != 0 {
		t.Fatal(e)
	}
	state("lan1.100", "DOWN", "M-DOWN")
	state("lan1.300.10", "DOWN", "M-DOWN")
	if _, e, st := l.d.run("link", "set", "lan1.100", "up"); st != 2 || e != "RTNETLINK answers: Network is down\n" {
		t.Errorf("a VLAN link set up under its parent down: %d %q", st, e)
	}
	if _, e, st := l.d.run("link", "set", "lan1", "up"); st != 0 {
		t.Fatal(e)
	}
	state("lan1.100", "UP", "")
	state("lan1.300.10", "UP", "")
	mustRun(t, "ip", "-n", l.sw, "link", "set", l.trunk, "down")
	state("lan1.100", "LOWERLAYERDOWN", "NO-CARRIER")
	mustRun(t, "ip", "-n", l.sw, "link", "set", l.trunk, "up")
	state("lan1.100", "UP", "LOWER_UP")
	l.pingWithin(t, "100", "2001:db8:e310::2", "VLAN 100 to QinQ after the parent's bounces")
}

// pingWithin pings dst from VLAN from's host until it is answered, for up
// to 10 s (each ping waits up to 2 s).
func (l *vlanLab) pingWithin(t *testing.T, from, dst, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		out, ok := l.ping(l.hosts[from], dst)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, out)
		}
	}
}
