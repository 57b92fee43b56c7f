package integration

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSharedDecision: the dataplane and `route get` decide with the same
// code. For 1,000 random UDP flows over a two-member multipath route, the
// link each flow leaves by (captured behind tb and tc) is the one
// `route get DST from SRC ipproto udp sport S dport D` names; and the
// ICMPv6 error for an unreachable flow comes from the address `route get`
// gives as src for the way back.
func TestSharedDecision(t *testing.T) {
	parallel(t)
	l := newLab(t)
	for _, c := range []string{
		"route add 2001:db8:100::/48 via 2001:db8:2::2 dev tb",
		"route append 2001:db8:100::/48 via 2001:db8:3::2 dev tc",
	} {
		if _, e, st := l.d.run(strings.Fields(c)...); st != 0 {
			t.Fatalf("%s: %s", c, e)
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	flows := make([]udpFlow, 1000)
	for i := range flows {
		s := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 8: byte(rnd.IntN(256)), 14: byte(i >> 8), 15: byte(i)}
		d := [16]byte{0x20, 0x01, 0x0d, 0xb8, 1, 0, 0, byte(rnd.IntN(256)), 15: byte(1 + rnd.IntN(250))}
		flows[i] = udpFlow{netip.AddrFrom16(s), netip.AddrFrom16(d), uint16(1024 + rnd.IntN(60000)), uint16(7000 + rnd.IntN(100))}
	}
	per, lost := leaveBy(t, l, flows, func(f udpFlow) string {
		return fmt.Sprintf("route get %s from %s ipproto udp sport %d dport %d", f.dst, f.src, f.sport, f.dport)
	})
	if per["tb"] < 300 || per["tc"] < 300 || lost > 20 {
		t.Errorf("flows by link %v, %d not captured: want both members used, nearly all seen", per, lost)
	}

	send := rawSender(t, l.h1, "ta")
	// the error's source is route get's src for the way back
	back, _, _ := l.d.run("route", "get", "2001:db8:1::2")
	i := strings.Index(back, " src ")
	if i < 0 {
		t.Fatalf("route get 2001:db8:1::2: %q", back)
	}
	want := strings.Fields(back[i:])[1]
	errs := listenICMPErrors(t, l.h1, "ta")
	send(udpPacket(netip.MustParseAddr("2001:db8:1::2"), netip.MustParseAddr("2001:db8:66::1"), 5000, 7000))
	got := errs(1, 3*time.Second)
	if len(got) != 1 {
		t.Fatalf("%d errors for a flow to an unreachable route", len(got))
	}
	if src := net.IP(got[0][8:24]).String(); src != want {
		t.Errorf("the error came from %s, route get says src %s", src, want)
	}
}

// udpFlow is a UDP flow a test sends from h1 through the router.
type udpFlow struct {
	src, dst     netip.Addr
	sport, dport uint16
}

// leaveBy sends one packet of each flow from h1 into ta, captures them
// behind tb and tc, and checks that each left by the link `route get`
// names when asked in the words routeGet gives it. It returns how many
// flows left by each link, and how many were not captured.
func leaveBy(t *testing.T, l *lab, flows []udpFlow, routeGet func(udpFlow) string) (per map[string]int, lost int) {
	t.Helper()
	index := map[udpFlow]int{}
	for i, f := range flows {
		index[f] = i
	}
	capB, capC := listenRaw(t, l.h2, "tb"), listenRaw(t, l.h3, "tc")
	send := rawSender(t, l.h1, "ta")
	for _, f := range flows {
		send(udpPacket(f.src, f.dst, f.sport, f.dport))
		time.Sleep(50 * time.Microsecond) // within the receiving kernels' backlog
	}
	took := make([]string, len(flows))
	for link, pkts := range map[string][][]byte{"tb": capB(len(flows), 3*time.Second), "tc": capC(len(flows), time.Second)} {
		for _, p := range pkts {
			f := udpFlow{netip.AddrFrom16([16]byte(p[8:24])), netip.AddrFrom16([16]byte(p[24:40])),
				binary.BigEndian.Uint16(p[40:]), binary.BigEndian.Uint16(p[42:])}
			if i, ok := index[f]; ok {
				took[i] = link
			}
		}
	}
	var batch strings.Builder
	for _, f := range flows {
		batch.WriteString(routeGet(f) + "\n")
	}
	file := filepath.Join(t.TempDir(), "gets")
	if err := os.WriteFile(file, []byte(batch.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, e, st := l.d.run("-6", "-batch", file)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if st != 0 || len(lines) != len(flows) {
		t.Fatalf("route get batch: %d lines, status %d %s", len(lines), st, e)
	}
	per = map[string]int{}
	for i, line := range lines {
		named := ""
		for _, d := range []string{"tb", "tc"} {
			if strings.Contains(line, " dev "+d+" ") {
				named = d
			}
		}
		if took[i] == "" {
			lost++
			continue
		}
		per[took[i]]++
		if took[i] != named {
			t.Errorf("flow %+v left by %s, route get says: %s", flows[i], took[i], line)
		}
	}
	t.Logf("flows by link: %v, not captured: %d", per, lost)
	return per, lost
}

// udpPacket is an IPv6 UDP datagram with a 4-byte payload (the layout
// listenRaw reads the destination port from).
func udpPacket(src, dst netip.Addr, sport, dport uint16) []byte {
	p := make([]byte, 40+12)
	binary.BigEndian.PutUint32(p, 6<<28)
	binary.BigEndian.PutUint16(p[4:], 12)
	p[6], p[7] = 17, 64
	s, d := src.As16(), dst.As16()
	copy(p[8:], s[:])
	copy(p[24:], d[:])
	binary.BigEndian.PutUint16(p[40:], sport)
	binary.BigEndian.PutUint16(p[42:], dport)
	binary.BigEndian.PutUint16(p[44:], 12)
	copy(p[48:], "ping")
	return p // checksum 0: the receiver drops it, the router forwards it
}

// listenICMPErrors captures the ICMPv6 errors (types 1-4) arriving on
// link dev of namespace ns.
func listenICMPErrors(t *testing.T, ns, dev string) func(n int, wait time.Duration) [][]byte {
	return capture(t, ns, dev, func(p []byte) bool { return len(p) >= 48 && p[6] == 58 && p[40] >= 1 && p[40] <= 4 })
}

// TestICMPRateLimit: through the daemon with its default limits, 2,000
// hop-limit-1 packets in one second from each of two sources get each a
// burst of 6 Time Exceeded and then about one per 100 ms, as a Linux
// router's per-destination limit answers; the packets are counted once.
func TestICMPRateLimit(t *testing.T) {
	measures(t)
	l := newLab(t)
	errs := listenICMPErrors(t, l.h1, "ta")
	send := rawSender(t, l.h1, "ta")
	a, b := netip.MustParseAddr("2001:db8:1::2"), netip.MustParseAddr("2001:db8:1::3")
	pa := udpPacket(a, netip.MustParseAddr("2001:db8:2::2"), 5000, 7000)
	pb := udpPacket(b, netip.MustParseAddr("2001:db8:2::2"), 5000, 7000)
	pa[7], pb[7] = 1, 1 // hop limit 1
	start := time.Now()
	for i := 0; i < 2000; i++ {
		for time.Since(start) < time.Duration(i)*time.Second/2000 {
			time.Sleep(100 * time.Microsecond)
		}
		send(pa)
		send(pb)
	}
	got := errs(1000, 300*time.Millisecond)
	per := map[string]int{}
	for _, p := range got {
		if p[40] != 3 {
			t.Errorf("an ICMPv6 type %d", p[40])
		}
		per[net.IP(p[24:40]).String()]++
	}
	for _, dst := range []string{a.String(), b.String()} {
		if n := per[dst]; n < 14 || n > 18 {
			t.Errorf("%s got %d Time Exceeded for 2,000 packets in a second, want 6 + about 10", dst, n)
		}
	}
	stats, _, _ := l.d.run("-s", "link", "show", "ta")
	if !strings.Contains(stats, "drop hop_limit 4000\n") || !strings.Contains(stats, fmt.Sprintf("icmp_ratelimited %d\n", 4000-len(got))) {
		t.Errorf("counters after 4,000 packets, %d errors:\n%s", len(got), stats)
	}
}
