package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const bgpShared = "2001:db8:b000::/64"

// TestBGPUnnumbered: R (AS 65000) peers with P1 (AS 65001) and P2 (AS
// 65002) over their links' link-local addresses alone, each side learning
// the other's from its router advertisements (BGP unnumbered). Both
// sessions come up; the prefix both peers announce has two paths, one
// through each peer's link-local address, and each peer's own prefix one;
// the host's pings reach all three across R. P1's bgpd killed, its prefix
// goes and the shared one keeps the path through P2; P1's bgpd restarted,
// both paths are back. In urouter mode lan1's mirror is a TUN and lan2's
// a TAP, so the RAs cross both kinds.
func TestBGPUnnumbered(t *testing.T) {
	parallel(t)
	inModes(t, func(t *testing.T, kernel bool, fig func(string, any)) {
		l := newFabricLab(t, kernel, fabricOpts{base: "ubgp", peers: 2, mirror2: "type tap"})
		if1, if2 := l.ifname(1), l.ifname(2)
		l.shows = []string{"show bgp ipv6 unicast summary", "show bgp ipv6 unicast", "show interface"}
		// zebra's RAs tell the other side the link-local address to
		// connect to: every second, not every 10 s as bgpd asks
		ra := "interface %s\n ipv6 nd ra-interval 1\n no ipv6 nd suppress-ra\n"
		l.writeZebra(fmt.Sprintf(ra, if1)+fmt.Sprintf(ra, if2), ra)
		unnumbered := "interface remote-as external"
		l.router.write("bgpd", bgpConf(65000, "network 2001:db8:d3::/64\n  maximum-paths 2", nil, [2]string{if1, unnumbered}, [2]string{if2, unnumbered}))
		for i, p := range l.peers {
			own := fmt.Sprintf("2001:db8:b%d::", i+1)
			for _, a := range []string{"2001:db8:b000::1/128", own + "1/128"} {
				mustRun(t, "ip", "-n", p.ns, "addr", "add", a, "dev", "lo")
			}
			p.write("bgpd", bgpConf(65001+i, "network "+bgpShared+"\n  network "+own+"/64", nil, [2]string{"eth0", unnumbered}))
		}
		l.startFRR("bgpd")

		l.waitFor("both BGP sessions Established", 30*time.Second, func() bool { return l.router.established(if1, if2) })
		fig("both sessions Established after", time.Since(l.started))
		ecmp := []string{l.via(1), l.via(2)}
		slices.Sort(ecmp)
		l.waitRoutes(fig, "the routes through both peers", 10*time.Second, bgpShared, func() bool {
			return slices.Equal(l.nexthops("bgp", bgpShared), ecmp) &&
				slices.Equal(l.nexthops("bgp", "2001:db8:b1::/64"), []string{l.via(1)}) &&
				slices.Equal(l.nexthops("bgp", "2001:db8:b2::/64"), []string{l.via(2)})
		})
		for _, dst := range []string{"2001:db8:b1::1", "2001:db8:b2::1", "2001:db8:b000::1"} {
			if err := l.ping(dst); err != nil {
				t.Fatalf("%v\n%s", err, l.state())
			}
		}

		l.peers[0].kill("bgpd")
		fig("P1's prefix withdrawn after its bgpd killed", l.waitFor("P1's routes to go", 10*time.Second, func() bool {
			return !strings.Contains(l.routes("bgp"), "2001:db8:b1::/64") &&
				slices.Equal(l.nexthops("bgp", bgpShared), []string{l.via(2)})
		}))
		if err := l.ping("2001:db8:b000::1"); err != nil {
			t.Fatalf("with P1's bgpd gone: %v\n%s", err, l.state())
		}

		l.peers[0].start("bgpd")
		fig("both paths back after its restart", l.waitFor("P1's routes to come back", 30*time.Second, func() bool {
			return slices.Equal(l.nexthops("bgp", bgpShared), ecmp) &&
				slices.Equal(l.nexthops("bgp", "2001:db8:b1::/64"), []string{l.via(1)})
		}))
		if err := l.ping("2001:db8:b1::1"); err != nil {
			t.Fatalf("after P1's bgpd restarted: %v\n%s", err, l.state())
		}
	})
}

// bgpConf is bgpd's configuration for AS as: an eBGP session to each of
// neighbours (its name, then how `neighbor NAME` defines it: "interface
// remote-as external", "remote-as 65001"), with each of per more for each
// ("bfd profile fast"), and af lines more in its IPv6 unicast address
// family. Hold time 6 s; a lost session is tried again every second; no
// IPv4; networks announced whether or not the RIB has them (R's host
// prefix is urouter's alone in urouter mode).
func bgpConf(as int, af string, per []string, neighbours ...[2]string) string {
	var nb, act strings.Builder
	for _, n := range neighbours {
		fmt.Fprintf(&nb, " neighbor %s %s\n neighbor %s timers connect 1\n", n[0], n[1], n[0])
		for _, p := range per {
			fmt.Fprintf(&nb, " neighbor %s %s\n", n[0], p)
		}
		fmt.Fprintf(&act, "  neighbor %s activate\n", n[0])
	}
	return fmt.Sprintf("router bgp %d\n bgp router-id 192.0.2.%d\n bgp log-neighbor-changes\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n"+
		" no bgp network import-check\n bgp bestpath as-path multipath-relax\n timers bgp 2 6\n%s"+
		" address-family ipv6 unicast\n  %s\n%s exit-address-family\n", as, as-65000+1, nb.String(), af, act.String())
}
