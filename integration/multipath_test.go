package integration

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestMultipathForwarding: routes over two TUN egress links, one through a
// nexthop group, one with inline paths; 64 flows (distinct flow labels, as
// Linux's hash policy 0 reads them) spread over both links, every packet
// of a flow on one link; with one link down its flows move to the other
// and the other's stay.
func TestMultipathForwarding(t *testing.T) {
	parallel(t)
	l := newLab(t)
	for _, c := range []string{
		"nexthop add id 1 via 2001:db8:2::2 dev tb",
		"nexthop add id 2 via 2001:db8:3::2 dev tc",
		"nexthop add id 10 group 1/2",
		"route add 2001:db8:77::/48 nhid 10",
		"route add 2001:db8:78::/48 nexthop via 2001:db8:2::2 dev tb nexthop via 2001:db8:3::2 dev tc",
	} {
		if _, e, st := l.d.run(strings.Fields(c)...); st != 0 {
			t.Fatalf("%s: %s", c, e)
		}
	}
	send := rawSender(t, l.h1, "ta")
	onB, onC := listenRaw(t, l.h2, "tb"), listenRaw(t, l.h3, "tc")
	const flows, per = 64, 4
	src := netip.MustParseAddr("2001:db8:1::2")
	// round sends per packets of every flow to dst and returns the link
	// (b or c) each flow's packets came out of.
	round := func(dst string) map[int]string {
		d := netip.MustParseAddr(dst)
		for k := 0; k < per; k++ {
			for i := 0; i < flows; i++ {
				p := udpPacket(src, d, 5000, uint16(7000+i))
				binary.BigEndian.PutUint32(p, 6<<28|uint32(i*7919+1)&0xfffff)
				send(p)
			}
		}
		seen := map[int]string{}
		count := 0
		for _, side := range []struct {
			name string
			get  func(int, time.Duration) [][]byte
		}{{"b", onB}, {"c", onC}} {
			for _, p := range side.get(flows*per, 1500*time.Millisecond) {
				i := int(binary.BigEndian.Uint16(p[42:])) - 7000
				if prev, ok := seen[i]; ok && prev != side.name {
					t.Fatalf("%s: flow %d came out of both links", dst, i)
				}
				seen[i] = side.name
				count++
			}
		}
		if count != flows*per {
			t.Fatalf("%s: %d of %d packets forwarded", dst, count, flows*per)
		}
		return seen
	}
	links := func(m map[int]string) (b, c int) {
		for _, s := range m {
			if s == "b" {
				b++
			} else {
				c++
			}
		}
		return
	}
	before := map[string]map[int]string{}
	for _, dst := range []string{"2001:db8:77::1", "2001:db8:78::1"} {
		before[dst] = round(dst)
		if b, c := links(before[dst]); b < 8 || c < 8 {
			t.Fatalf("%s: 64 flows split %d/%d over the two links", dst, b, c)
		}
	}
	if _, e, st := l.d.run("link", "set", "tc", "down"); st != 0 {
		t.Fatal(e)
	}
	for _, dst := range []string{"2001:db8:77::1", "2001:db8:78::1"} {
		after := round(dst)
		for i, s := range before[dst] {
			if after[i] != "b" {
				t.Errorf("%s: flow %d (was on %s) did not move to tb", dst, i, s)
			}
		}
	}
	out, _, _ := l.d.run("route", "show", "2001:db8:78::/48")
	if want := "\tnexthop via 2001:db8:3::2 dev tc weight 1 dead linkdown \n"; !strings.Contains(out, want) {
		t.Errorf("the path on the down link:\n%s", out)
	}
}
