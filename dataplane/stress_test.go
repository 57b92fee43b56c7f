package dataplane_test

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/nexthop"
)

// TestStressWorkers: workers forward batches while routes are published
// and withdrawn, links go down and up, addresses change and a link is
// removed under them (run with -race): no race, no crash, and after the
// removal no worker writes to the removed link's device.
func TestStressWorkers(t *testing.T) {
	r := newRig(t)
	main := r.r.Tables.Main()
	pkts := [][]byte{
		craft(t, append([]gopacket.SerializableLayer{ipv6(host1, host2, layers.IPProtocolUDP, 64)}, udp(64)...)...),
		craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:77::1"), layers.IPProtocolUDP, 64)}, udp(64)...)...),
		craft(t, ipv6(host1, routerAddr, layers.IPProtocolICMPv6, 64),
			&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}, &layers.ICMPv6Echo{}, gopacket.Payload("x")),
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// once tb is removed, the workers forward 300 more batches in all
	var removed atomic.Bool
	var after atomic.Int64
	enough := make(chan struct{})
	for i := 0; i < 3; i++ {
		w := dataplane.NewTestWorker(r.dp, r.ta, i+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				w.Forward(pkts...)
				if removed.Load() && after.Add(1) == 300 {
					close(enough)
				}
			}
		}()
	}
	var others []int
	for l, fd := range r.peer {
		if l != r.tb {
			others = append(others, fd)
		}
	}
	wg.Add(1)
	go func() { // drain what the workers write (tb's queue may fill: then writes fail, counted)
		defer wg.Done()
		buf := make([]byte, 1<<16)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, fd := range others {
				_, _ = unix.Read(fd, buf) // drained, not read: EAGAIN when empty
			}
		}
	}()
	dst := netip.MustParsePrefix("2001:db8:77::/48")
	for i := range 500 { // some 300 ms under -race
		x := main.Begin()
		// the churn is the point, while workers read: whether each change
		// lands is not what this test checks
		if i%2 == 0 {
			_ = x.Add(fib6.Route{Dst: dst, Attrs: fib6.Attrs{Metric: 1, Nexthop: nexthop.Nexthop{Link: r.tb.Index}}})
		} else {
			_, _ = x.Delete(fib6.Match{Dst: dst})
		}
		x.Commit()
		r.dp.Links.SetUp(r.tb, i%3 != 0) // without the router's flush: routes through a down link stay
		a := netip.MustParsePrefix("2001:db8:1::9/64")
		if i%2 == 0 {
			_ = r.r.AddAddr(r.ta, a) // churn, as above
		} else {
			_, _ = r.r.DelAddr(r.ta, a)
		}
		r.tb.Stats()
	}
	r.dp.Links.SetUp(r.tb, true)
	// delete tb while the workers run: afterwards none may write to it
	fd := r.peer[r.tb]
	if err := r.r.DeleteLink(r.tb); err != nil {
		t.Fatal(err)
	}
	removed.Store(true)
	if r.dp.Links.ByName("tb") != nil {
		t.Fatal("the deleted link is still there")
	}
	for { // what was written before the removal
		if _, err := unix.Read(fd, make([]byte, 1<<16)); err != nil {
			break
		}
	}
	<-enough
	close(stop)
	wg.Wait()
	if n, _ := unix.Read(fd, make([]byte, 1<<16)); n > 0 {
		t.Fatal("a worker wrote to a removed link")
	}
}
