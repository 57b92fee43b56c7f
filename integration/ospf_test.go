package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestOSPF: OSPFv3 (multicast hellos and flooding to ff02::5 and ff02::6)
// runs over a mirrored link: FRR's ospf6d beside urouter forms a full
// adjacency with BIRD across urouter's link, learns BIRD's prefixes, and
// zebra gives them to urouter over FPM; a host's traffic to them crosses
// urouter.
//
//	uro-op BIRD (OSPFv3) 2001:db8:e1::2 ==veth== lan1 [urouter in uro-or, km1 km2; zebra, ospf6d] lan2 ==veth== uro-oh host 2001:db8:e2::2
func TestOSPF(t *testing.T) {
	parallel(t)
	needFRR(t)
	r, p, h := newNetns(t, "uro-or"), newNetns(t, "uro-op"), newNetns(t, "uro-oh")
	for i, ns := range []string{p, h} {
		dev, sub := "r"+string(rune('1'+i)), "2001:db8:e"+string(rune('1'+i))+"::"
		mustRun(t, "ip", "-n", r, "link", "add", dev, "type", "veth", "peer", "name", "eth0", "netns", ns)
		mustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0")
		mustRun(t, "ip", "-n", ns, "addr", "add", sub+"2/64", "dev", "eth0", "nodad")
		mustRun(t, "ip", "-n", ns, "link", "set", "eth0", "up")
		mustRun(t, "ip", "-n", ns, "-6", "route", "add", "default", "via", sub+"1")
	}
	mustRun(t, "ip", "-n", p, "addr", "add", "2001:db8:ff::1/128", "dev", "lo")
	d := startDaemonFlags(t, r, []string{"--fpm", "127.0.0.1:2620"},
		"link add lan1 type host dev r1", "link add lan2 type host dev r2", "link set lan1 up", "link set lan2 up",
		"address add 2001:db8:e1::1/64 dev lan1", "address add 2001:db8:e2::1/64 dev lan2",
		"link set lan1 mirror km1", "link set lan2 mirror km2")
	l := &frrLab{t: t, r: r, dir: t.TempDir(), d: d}
	if err := os.Chmod(l.dir, 0o755); err != nil { // FRR's daemons drop to user frr
		t.Fatal(err)
	}
	files := map[string]string{
		"zebra.conf": "hostname uro-or\nfpm address 127.0.0.1 port 2620\n",
		"ospf6d.conf": "hostname uro-or\ninterface km1\n ipv6 ospf6 area 0.0.0.0\n ipv6 ospf6 network broadcast\n" +
			" ipv6 ospf6 hello-interval 1\n ipv6 ospf6 dead-interval 4\nrouter ospf6\n ospf6 router-id 192.0.2.1\n",
		"bird.conf": "router id 192.0.2.2;\nprotocol device { }\n" +
			"protocol static s6 { ipv6; route 2001:db8:ff::1/128 blackhole; route 2001:db8:fe::/48 blackhole; }\n" +
			"protocol ospf v3 o6 { ipv6 { import all; export all; }; area 0 { interface \"eth0\" { type broadcast; hello 1; dead 4; }; }; }\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(l.dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l.startZebra()
	l.frr("ospf6d")
	startIn(t, p, "bird", "-f", "-c", filepath.Join(l.dir, "bird.conf"), "-s", filepath.Join(l.dir, "bird.ctl"))

	want := regexp.MustCompile(`(?m)^2001:db8:ff::1 nhid \d+ via fe80::\S+ dev lan1 proto ospf metric \d+`)
	var routes string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		routes, _, _ = d.run("route", "show")
		if want.MatchString(routes) && strings.Contains(routes, "2001:db8:fe::/48") {
			break
		}
		if time.Now().After(deadline) {
			nb, _, _ := runCmd("ip", "netns", "exec", r, "vtysh", "--vty_socket", l.dir, "-c", "show ipv6 ospf6 neighbor")
			bird, _, _ := runCmd("ip", "netns", "exec", p, "birdc", "-s", filepath.Join(l.dir, "bird.ctl"), "show", "ospf", "neighbors")
			ms, _, _ := d.run("-s", "link", "show", "lan1")
			t.Fatalf("urouter did not get BIRD's prefixes over OSPFv3:\n%s\nospf6d:\n%s\nBIRD:\n%s\n%s", routes, nb, bird, ms)
		}
	}
	nb, _, _ := runCmd("ip", "netns", "exec", r, "vtysh", "--vty_socket", l.dir, "-c", "show ipv6 ospf6 neighbor")
	if !strings.Contains(nb, "Full") {
		t.Errorf("ospf6d's neighbour is not Full:\n%s", nb)
	}
	o, e, st := runCmd("ip", "netns", "exec", h, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", "2001:db8:ff::1")
	if st != 0 || !strings.Contains(o, "ttl=63") {
		t.Fatalf("ping through urouter to the OSPF prefix: %s%s", o, e)
	}
	t.Logf("ospf6d: %s", strings.TrimSpace(nb))
}
