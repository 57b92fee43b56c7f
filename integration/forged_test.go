package integration

import (
	"encoding/binary"
	"encoding/json"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestForgedND: a host on lan1 sends what a router must not believe: a
// Router Advertisement making itself the default router with a prefix to
// autoconfigure from, a Redirect, a Neighbour Advertisement of the
// router's own address, and a solicitation with a hop limit below 255.
// urouter's routes, addresses and neighbour entries stay as they were,
// and each is counted under its reason (`link show -s`).
func TestForgedND(t *testing.T) {
	parallel(t)
	l := newEtherLab(t, nil)
	hostMAC, err := net.ParseMAC(l.mac[l.e1])
	if err != nil {
		t.Fatal(err)
	}
	// the host talks to the router first, so that its entries exist
	if _, _, st := l.in(l.e1, "ping", "-6", "-c", "2", "-i", "0.2", "2001:db8:a1::1"); st != 0 {
		t.Fatal("e1 cannot ping the router")
	}
	before := l.routerView(t)
	drops0 := linkDrops(t, l.d, "lan1")

	send := icmpSender(t, l.e1, "eth0")
	allNodes := netip.MustParseAddr("ff02::1")
	router := netip.MustParseAddr("2001:db8:a1::1")
	ra := make([]byte, 16, 64) // type 134, code, checksum; hop limit, flags, lifetime; reachable; retrans
	ra[0], ra[4] = 134, 64
	binary.BigEndian.PutUint16(ra[6:], 1800)
	ra = append(ra, 1, 1) // source link-layer address
	ra = append(ra, hostMAC...)
	pi := make([]byte, 32) // Prefix Information: 2001:db8:66::/64, on-link, autonomous
	pi[0], pi[1], pi[2], pi[3] = 3, 4, 64, 0xc0
	binary.BigEndian.PutUint32(pi[4:], 86400)
	binary.BigEndian.PutUint32(pi[8:], 14400)
	copy(pi[16:], netip.MustParseAddr("2001:db8:66::").AsSlice())
	ra = append(ra, pi...)
	redirect := make([]byte, 40) // type 137: target, destination
	redirect[0] = 137
	copy(redirect[8:], netip.MustParseAddr("fe80::bad").AsSlice())
	copy(redirect[24:], netip.MustParseAddr("2001:db8:77::1").AsSlice())
	na := make([]byte, 24, 32) // type 136, override, target: the router's address
	na[0], na[4] = 136, 0x20
	copy(na[8:], router.AsSlice())
	na = append(append(na, 2, 1), hostMAC...) // target link-layer address
	ns := make([]byte, 24, 32)                // type 135 for the router's address
	ns[0] = 135
	copy(ns[8:], router.AsSlice())
	ns = append(append(ns, 1, 1), hostMAC...)
	for _, m := range []struct {
		what   string
		msg    []byte
		to     netip.Addr
		hops   int
		reason string
	}{
		{"a forged RA", ra, allNodes, 255, "ra_ignored"},
		{"a Redirect", redirect, router, 255, "redirect_ignored"},
		{"an NA of the router's address", na, allNodes, 255, "dad_conflict"},
		{"an NS with hop limit 64", ns, router, 64, "nd_hop_limit"},
	} {
		send(m.msg, m.to, m.hops)
		waitUntil(t, m.what+" counted as "+m.reason, func() bool { return linkDrops(t, l.d, "lan1")[m.reason] > drops0[m.reason] })
	}
	time.Sleep(200 * time.Millisecond) // anything they would have changed, changed
	if after := l.routerView(t); after != before {
		t.Errorf("forged ND changed the router:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	l.d.stop() // its log is read once it has written it all
	if log := l.d.log.String(); !strings.Contains(log, "advertised our address 2001:db8:a1::1 on lan1") {
		t.Errorf("the NA of the router's address was not logged:\n%s", log)
	}
}

// routerView is what forged ND must not change: the routes, the
// addresses, and which neighbours the router knows (their states move on
// their own).
func (l *etherLab) routerView(t *testing.T) string {
	t.Helper()
	routes, _, _ := l.d.run("route", "show", "table", "all")
	addrs, _, _ := l.d.run("-br", "address", "show")
	out, _, _ := l.d.run("-j", "neigh", "show")
	var ns []struct {
		Dst    string `json:"dst"`
		Dev    string `json:"dev"`
		LLAddr string `json:"lladdr"`
	}
	if err := json.Unmarshal([]byte(out), &ns); err != nil {
		t.Fatalf("neigh show -j: %v\n%s", err, out)
	}
	var neigh []string
	for _, n := range ns {
		neigh = append(neigh, n.Dst+" "+n.Dev+" "+n.LLAddr)
	}
	slices.Sort(neigh)
	return routes + addrs + strings.Join(neigh, "\n")
}

// linkDrops are a link's drop counts by reason (`link show -s -j`).
func linkDrops(t *testing.T, d *daemon, link string) map[string]uint64 {
	t.Helper()
	return linkStats64(t, d, link).Drops
}

// stats64 is what `link show -s -j` says beyond Linux's counters: the
// router's drops by reason, and its CoPP classes' counts.
type stats64 struct {
	Drops map[string]uint64    `json:"drops"`
	CoPP  map[string]coppCount `json:"copp"`
}

func linkStats64(t *testing.T, d *daemon, link string) stats64 {
	t.Helper()
	o, e, st := d.run("-s", "-j", "link", "show", link)
	var ls []struct {
		Stats stats64 `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(o), &ls); st != 0 || err != nil || len(ls) != 1 {
		t.Fatalf("link show -s -j %s: %v %s%s", link, err, o, e)
	}
	return ls[0].Stats
}
