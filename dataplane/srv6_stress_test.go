package dataplane_test

import (
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/nexthop"
	"urouter/seg6"
)

// TestSRv6ChurnStress (run it with -race): a worker forwards H.Encaps,
// End and End.DT6 packets while the routes that carry them are replaced
// (another segment list, End.X for End), deleted and added again, and
// the tunnel source set and cleared, 300 times. Then each leaves as the
// last configuration says.
func TestSRv6ChurnStress(t *testing.T) {
	r := newRig(t)
	withSRv6(t, r)
	encapped := udpTo(t, net.ParseIP("2001:db8:9::1"), 100)
	end, dt6 := srPacket(t, tenant, 1, sidEnd, nextSID), srPacket(t, tenant, 0, sidDT6)
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		n, buf := 0, make([]byte, 1<<16)
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			r.run(encapped, end, dt6, encapped)
			for _, l := range []*dataplane.Link{r.tb, r.tc} {
				for {
					if _, err := unix.Read(r.peer[l], buf); err != nil {
						break
					}
					n++
				}
			}
		}
	}()
	replace := func(table uint32, dst string, nh nexthop.Nexthop) {
		x := r.r.Tables.Ensure(table).Begin()
		err := x.Replace(fib6.Route{Dst: netip.MustParsePrefix(dst), Attrs: fib6.Attrs{Metric: 1024, Nexthop: nh}})
		x.Commit()
		if err != nil {
			t.Fatal(err)
		}
	}
	segs := [][]netip.Addr{{netip.MustParseAddr("2001:db8:2::5"), netip.MustParseAddr("fc00:9::9")}, {netip.MustParseAddr("2001:db8:2::6")}}
	var last netip.Addr
	for i := range 300 {
		e, err := seg6.NewEncap(seg6.ModeEncap, seg6.BuildSRH(segs[i%2]))
		if err != nil {
			t.Fatal(err)
		}
		replace(254, "2001:db8:9::/64", nexthop.Nexthop{Link: r.tb.Index, Encap: &seg6.State{Encap: e}})
		last = segs[i%2][0]
		l := &seg6.Local{Action: seg6.ActionEnd}
		if i%3 == 1 {
			l = &seg6.Local{Action: seg6.ActionEndX, NH6: nextSID}
		}
		if err := l.Check(); err != nil {
			t.Fatal(err)
		}
		replace(254, sidEnd.String()+"/128", nexthop.Nexthop{Link: r.tb.Index, Encap: &seg6.State{Local: l}})
		x := r.r.Tables.Main().Begin()
		_, err = x.Delete(fib6.Match{Dst: netip.PrefixFrom(sidDT6, 128), Metric: 1024})
		x.Commit()
		if err != nil {
			t.Fatal(err)
		}
		dt := &seg6.Local{Action: seg6.ActionEndDT6, Table: 100}
		if err := dt.Check(); err != nil {
			t.Fatal(err)
		}
		replace(254, sidDT6.String()+"/128", nexthop.Nexthop{Link: r.tb.Index, Encap: &seg6.State{Local: dt}})
		src := netip.MustParseAddr("2001:db8:2::99")
		if i%2 == 1 {
			src = netip.IPv6Unspecified()
		}
		r.dp.SetTunnelSource(src)
	}
	close(stop)
	if n := <-done; n == 0 {
		t.Fatal("nothing was forwarded while the routes changed")
	}
	r.recv(r.tb)
	r.recv(r.tc)
	r.run(encapped, end, dt6)
	tb, tc := r.recv(r.tb), r.recv(r.tc)
	if len(tb) != 2 || len(tc) != 1 {
		t.Fatalf("after the churn: %d packets on tb, %d on tc; want 2 and 1", len(tb), len(tc))
	}
	if p := tb[0][dataplane.VnetHdrLen:]; dstOf(p) != last || netip.AddrFrom16([16]byte(p[8:24])) != netip.MustParseAddr("2001:db8:2::1") {
		t.Errorf("H.Encaps after the churn: %v > %v, want the last list's %v from tb's address", netip.AddrFrom16([16]byte(p[8:24])), dstOf(p), last)
	}
}
