package feed

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"urouter/decide"
	"urouter/fib6"
	"urouter/router"
)

// TestVRFRoutes: zebra's routes of a VRF carry its table id (rtm_table
// and RTA_TABLE, as netlink_route_multipath_msg_encode writes them; a
// nexthop object names only the member's interface): they land in the
// VRF's table, beside the same prefix in another VRF's and in main, each
// through its own member, and each VRF decides its own way.
func TestVRFRoutes(t *testing.T) {
	r := router.New()
	mirrors := map[int32]int32{}
	var members [3]int32
	for i, vrf := range []string{"red", "blue", ""} {
		l, err := r.AddDummy("d"+string(rune('0'+i)), 1500)
		if err != nil {
			t.Fatal(err)
		}
		if vrf != "" {
			v, err := r.AddVRF(vrf, 0, uint32(10*(i+1)), 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.SetUp(v, true); err != nil {
				t.Fatal(err)
			}
			if err := r.SetMaster(l, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.SetUp(l, true); err != nil {
			t.Fatal(err)
		}
		members[i], mirrors[int32(20+i)] = l.Index, l.Index
	}
	ap := NewApplier(r, func(k int32) int32 { return mirrors[k] })
	red, blue, main := newRoute("2001:db8:99::/64"), newRoute("2001:db8:99::/64"), newRoute("2001:db8:99::/64")
	red.table, red.gw, red.oif = 10, gw1, 20
	blue.table, blue.nhid = 20, 5
	main.gw, main.oif = gw2, 22
	ap.Apply(mustDecode(t, slices.Concat(
		frame(nhObj{id: 5, gw: gw2, oif: 21}.encode(unix.RTM_NEWNEXTHOP)),
		frame(red.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE), blue.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE),
			main.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE)))))
	if n := ap.Stats.Rejected.Load(); n != 0 {
		t.Fatalf("rejected %d: %s", n, ap.LastError())
	}
	for _, c := range []struct {
		table uint32
		want  string
	}{
		{10, "2001:db8:99::/64 proto 186 metric 20 unicast via fe80::1 dev " + strconv.Itoa(int(members[0])) + " weight 1"},
		{20, "2001:db8:99::/64 proto 186 metric 20 unicast nhid 5 via fe80::2 dev " + strconv.Itoa(int(members[1])) + " weight 1"},
		{fib6.TableMain, "2001:db8:99::/64 proto 186 metric 20 unicast via fe80::2 dev " + strconv.Itoa(int(members[2])) + " weight 1"},
	} {
		if got := routes(r, c.table); len(got) != 1 || got[0] != c.want {
			t.Errorf("table %d: %q, want %q", c.table, strings.Join(got, "; "), c.want)
		}
	}
	for _, m := range members {
		k := decide.KeyOf(netip.MustParseAddr("2001:db8:99::1"), netip.Addr{})
		k.Iif = m
		if res := r.Decider.Decide(&k); res.Path.Link != m {
			t.Errorf("a packet in by %d left by %d, want its own VRF's member", m, res.Path.Link)
		}
	}
}
