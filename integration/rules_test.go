package integration

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

// TestPolicyForwarding: two hosts behind one link (2001:db8:1::a and ::b
// on h1), a rule sends A's packets to table 10, which leaves by tb, while
// B's take main's route out of tc; an iif and port rule sends one port
// range to tc whoever sends it; an unreachable and a prohibit rule answer
// B with the errors a Linux router sends. For 600 random flows the link
// each leaves by is the one `route get ... iif ta` names.
func TestPolicyForwarding(t *testing.T) {
	parallel(t)
	l := newLab(t)
	for _, a := range []string{"2001:db8:1::a/64", "2001:db8:1::b/64"} {
		mustRun(t, "ip", "-n", l.h1, "addr", "add", a, "dev", "ta", "nodad")
	}
	for _, c := range []string{
		"route add 2001:db8:50::/48 via 2001:db8:2::2 dev tb table 10",
		"route add 2001:db8:50::/48 via 2001:db8:3::2 dev tc",
		"route add 2001:db8:50::/48 via 2001:db8:3::2 dev tc table 20",
		"rule add pref 100 from 2001:db8:1::a lookup 10",
		"rule add pref 50 iif ta ipproto udp dport 7070-7099 lookup 20",
		"rule add pref 60 from 2001:db8:1::b to 2001:db8:51::/48 unreachable",
		"rule add pref 61 from 2001:db8:1::b to 2001:db8:52::/48 prohibit",
	} {
		if _, e, st := l.d.run(append([]string{"-6"}, strings.Fields(c)...)...); st != 0 {
			t.Fatalf("%s: %s", c, e)
		}
	}
	out, _, _ := l.in(l.h1, "ping", "-6", "-c", "1", "-W", "2", "-I", "2001:db8:1::b", "2001:db8:51::1")
	if !strings.Contains(out, "Destination unreachable: No route") {
		t.Errorf("an unreachable rule:\n%s", out)
	}
	out, _, _ = l.in(l.h1, "ping", "-6", "-c", "1", "-W", "2", "-I", "2001:db8:1::b", "2001:db8:52::1")
	if !strings.Contains(out, "Destination unreachable: Administratively prohibited") {
		t.Errorf("a prohibit rule:\n%s", out)
	}

	rnd := rand.New(rand.NewPCG(5, 6))
	flows := make([]udpFlow, 600)
	for i := range flows {
		src := netip.MustParseAddr([]string{"2001:db8:1::a", "2001:db8:1::b", "2001:db8:1::c"}[rnd.IntN(3)])
		d := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0x50, 8: byte(i >> 8), 9: byte(i), 15: 1}
		dport := uint16(7000 + rnd.IntN(100)) // the ports listenRaw keeps
		flows[i] = udpFlow{src, netip.AddrFrom16(d), uint16(1024 + rnd.IntN(60000)), dport}
	}
	per, lost := leaveBy(t, l, flows, func(f udpFlow) string {
		return fmt.Sprintf("route get %s from %s iif ta ipproto udp sport %d dport %d", f.dst, f.src, f.sport, f.dport)
	})
	if per["tb"] < 100 || per["tc"] < 200 || lost > 20 {
		stats, _, _ := l.d.run("-s", "link", "show")
		t.Errorf("flows by link %v, %d not captured: want both tables used, nearly all seen\n%s", per, lost, stats)
	}
}
