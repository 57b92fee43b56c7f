package control

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
	"urouter/control/wire"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"
)

// TestCoPPSysctl: the CoPP knobs through `sysctl`, as sysctl(8) reads,
// writes and refuses them.
func TestCoPPSysctl(t *testing.T) {
	r := newTestRouter(t)
	cases := []struct {
		cmd            string
		status         int
		stdout, stderr string
	}{
		{"sysctl net.ipv6.copp.echo.rate", 0, "net.ipv6.copp.echo.rate = 1000\n", ""},
		{"sysctl -n net.ipv6.copp.routing.burst", 0, "100000\n", ""},
		{"sysctl -w net.ipv6.copp.echo.rate=20", 0, "net.ipv6.copp.echo.rate = 20\n", ""},
		{"sysctl -w net.ipv6.copp.echo.burst=abc", 1, "", "sysctl: setting key \"net.ipv6.copp.echo.burst\": Invalid argument\n"},
		{"sysctl -w net.ipv6.copp.echo.burst=0", 1, "", "sysctl: setting key \"net.ipv6.copp.echo.burst\": Invalid argument\n"},
		{"sysctl -w net.ipv6.copp.other.rate=-5", 1, "", "sysctl: setting key \"net.ipv6.copp.other.rate\": Invalid argument\n"},
		{"sysctl net.ipv6.copp.echo.rate net.ipv6.copp.echo.burst net.ipv6.copp.other.rate", 0,
			"net.ipv6.copp.echo.rate = 20\nnet.ipv6.copp.echo.burst = 1000\nnet.ipv6.copp.other.rate = 2000\n", ""},
		{"sysctl net.ipv6.copp.bogus.rate", 1, "", "sysctl: cannot stat /proc/sys/net/ipv6/copp/bogus/rate: No such file or directory\n"},
	}
	for _, c := range cases {
		out, errs, st := run(r, wire.Options{}, c.cmd)
		if st != c.status || out != c.stdout || errs != c.stderr {
			t.Errorf("%s:\n got %d %q %q\nwant %d %q %q", c.cmd, st, out, errs, c.status, c.stdout, c.stderr)
		}
	}
	all, _, _ := run(r, wire.Options{}, "sysctl -a")
	for _, cl := range []string{"nd", "routing", "echo", "other"} {
		for _, k := range []string{"rate", "burst"} {
			if !strings.Contains(all, "\nnet.ipv6.copp."+cl+"."+k+" = ") {
				t.Errorf("sysctl -a leaves out net.ipv6.copp.%s.%s", cl, k)
			}
		}
	}
}

// TestCoPPLinkStats: echo requests beyond the echo class's burst are
// policed, and `link show -s` says so per class, in text and JSON.
func TestCoPPLinkStats(t *testing.T) {
	r, e0 := newEtherRouter(t)
	if _, e, st := run(r, wire.Options{Batch: true}, "sysctl -q -w net.ipv6.copp.echo.rate=1", "sysctl -q -w net.ipv6.copp.echo.burst=2"); st != 0 {
		t.Fatal(e)
	}
	send := tapSender(t, e0)
	for i := 0; i < 7; i++ {
		send(echoFrame(t, uint16(i)))
	}
	// a second may pass between the first and the last: one more
	done := func(out string) bool {
		return strings.Contains(out, "    copp echo passed 2 dropped 5\n") || strings.Contains(out, "    copp echo passed 3 dropped 4\n")
	}
	var out string
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		out, _, _ = run(r, wire.Options{Stats: 1}, "link show "+e0)
		if done(out) || time.Now().After(deadline) { // all seven counted, not the first drop
			break
		}
	}
	if !done(out) {
		t.Fatalf("link show -s after 7 echo requests at burst 2:\n%s", out)
	}
	if strings.Contains(out, "copp routing") {
		t.Errorf("a class that saw nothing has a line:\n%s", out)
	}
	js, _, _ := run(r, wire.Options{Stats: 1, JSON: true}, "link show "+e0)
	var links []struct {
		Stats struct {
			Drops map[string]uint64 `json:"drops"`
			CoPP  map[string]struct {
				Passed  uint64 `json:"passed"`
				Dropped uint64 `json:"dropped"`
			} `json:"copp"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(js), &links); err != nil || len(links) != 1 {
		t.Fatalf("link show -s -j: %v\n%s", err, js)
	}
	c := links[0].Stats.CoPP
	if len(c) != 6 || c["echo"].Passed+c["echo"].Dropped != 7 || c["echo"].Dropped < 4 ||
		links[0].Stats.Drops["policed"] != c["echo"].Dropped {
		t.Errorf("link show -s -j: %s", js)
	}
	for _, cl := range []string{"nd", "routing", "echo", "other"} {
		if !strings.Contains(js, `"`+cl+`":{"passed":`) {
			t.Errorf("JSON lacks class %s: %s", cl, js)
		}
	}
}

// tapSender writes Ethernet frames into the router's TAP from the
// kernel's side of it.
func tapSender(t *testing.T, dev string) func([]byte) {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	return func(f []byte) {
		if err := unix.Sendto(fd, f, 0, &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}); err != nil {
			t.Fatal(err)
		}
	}
}

// echoFrame is an echo request from a host on the TAP's link to the
// router's 2001:db8:91::1, framed for the router's MAC.
func echoFrame(t *testing.T, seq uint16) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 0x99}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 1, 1},
		EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, SrcIP: net.ParseIP("2001:db8:91::99"), DstIP: net.ParseIP("2001:db8:91::1"),
		NextHeader: layers.IPProtocolICMPv6, HopLimit: 64}
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}
	if err := ic.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, ic, &layers.ICMPv6Echo{Identifier: 5, SeqNumber: seq}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
