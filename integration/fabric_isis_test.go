package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestISIS: R and P1 run IS-IS (IPv6, level 2) over their link; the
// adjacency comes up on both sides, R routes P1's prefixes through P1's
// link-local address, P1 routes the host's prefix back through R's, and
// the host's pings reach P1's loopback across R. In urouter mode the IS-IS
// PDUs (not IP: LLC frames to a multicast MAC) cross urouter's link to a
// TAP mirror.
func TestISIS(t *testing.T) {
	parallel(t)
	inModes(t, func(t *testing.T, kernel bool, fig func(string, any)) {
		l := newFabricLab(t, kernel, fabricOpts{base: "uisis", peers: 1, mirror: "type tap", hostMirror: true})
		l.shows = []string{"show isis neighbor", "show isis database detail", "show running-config", "show isis route", "show interface"}
		p := l.peers[0]
		mustRun(t, "ip", "-n", p.ns, "addr", "add", "2001:db8:c1::1/128", "dev", "lo")
		mustRun(t, "ip", "-n", p.ns, "addr", "add", "2001:db8:c2::1/64", "dev", "lo")
		l.writeZebra("", "")
		l.router.write("isisd", isisConf(1, l.ifname(1), l.ifname(3)))
		p.write("isisd", isisConf(2, "eth0", "lo"))
		l.startFRR("isisd")

		l.waitFor("the IS-IS adjacency Up on both sides", 30*time.Second, func() bool {
			return isisUp(l.router, l.ifname(1)) && isisUp(p, "eth0")
		})
		fig("adjacency Up after", time.Since(l.started))
		via := []string{l.via(1)}
		l.waitRoutes(fig, "R's routes to P1's prefixes", 20*time.Second, "2001:db8:c1::1", func() bool {
			return slices.Equal(l.nexthops("isis", "2001:db8:c1::1"), via) && slices.Equal(l.nexthops("isis", "2001:db8:c2::/64"), via)
		})
		l.waitFor("P1's route back to the host", 10*time.Second, func() bool {
			o, _, _ := runCmd("ip", "-n", p.ns, "-6", "route", "show", "2001:db8:d3::/64", "proto", "isis")
			return strings.Contains(o, "dev eth0")
		})
		if err := l.ping("2001:db8:c1::1"); err != nil {
			t.Fatalf("%v\n%s", err, l.state())
		}
	})
}

// isisConf is isisd's configuration for system id N on link (to the
// other router, point to point) and passive (prefixes only). Point to
// point: no DIS to elect and no CSNP to wait for on a link of two, the
// adjacency is up on the three-way handshake. Hellos every second, held
// 3 s. lsp-gen-interval comes before is-type: the change of is-type
// schedules the LSP's regeneration with the interval then set (FRR 8.4's
// default is 30 s), and that regeneration, pending, absorbs those the
// circuits and the adjacency ask for.
func isisConf(n int, link, passive string) string {
	return fmt.Sprintf("router isis 1\n lsp-gen-interval 1\n net 49.0001.0000.0000.000%d.00\n is-type level-2-only\n"+
		"interface %s\n ipv6 router isis 1\n isis network point-to-point\n isis hello-interval 1\n isis hello-multiplier 3\n"+
		"interface %s\n ipv6 router isis 1\n isis passive\n", n, link, passive)
}

// isisUp says whether node's IS-IS adjacency on ifname is Up.
func isisUp(node *frrNode, ifname string) bool {
	var nb struct {
		Areas []struct {
			Circuits []struct {
				Interface string `json:"interface"`
				State     string `json:"state"`
			} `json:"circuits"`
		} `json:"areas"`
	}
	if node.json("show isis neighbor json", &nb) != nil {
		return false
	}
	for _, a := range nb.Areas {
		for _, c := range a.Circuits {
			if c.Interface == ifname && c.State == "Up" {
				return true
			}
		}
	}
	return false
}
