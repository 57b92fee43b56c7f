package feed

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"urouter/fib6"
	"urouter/nexthop"
	"urouter/router"
)

// TestFeedStress (run it with -race): zebra's sessions come and go (some
// cut mid-frame, some replaced by the next connection) while they add and
// delete routes and nexthops, a user edits other routes and nexthop
// objects of the same table and registry, lookups run, and the status and
// counters are read. A last session then says one known table and, once
// it settles, the feed's routes are exactly that table and the user's are
// untouched.
func TestFeedStress(t *testing.T) {
	r, ap := testRouter(t)
	settle := 150 * time.Millisecond
	f := listen(t, ap, Timers{Settle: settle, Hold: 2 * settle})
	userNh := nexthop.Spec{ID: 1000, Family: nexthop.FamilyInet6, Nexthop: nexthop.Nexthop{Gateway: gw1, Link: 2}}
	if _, err := r.Nexthops.Add(userNh, false); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	zebra := make(chan struct{}) // closed after its sessions
	go func() { restartingZebra(t, f.Addr().String(), 100); close(zebra) }()
	wg.Go(func() { userEdits(t, r, userNh, stop) })
	wg.Go(func() { // readers
		for {
			select {
			case <-stop:
				return
			default:
			}
			r.Tables.Main().Lookup(netip.MustParseAddr("2001:db8:1005::1"), netip.Addr{})
			f.Status()
			ap.Owned()
			ap.LastError()
			_ = ap.Stats.Routes.Load()
		}
	})
	<-zebra
	close(stop)
	wg.Wait()

	// The last session: a known table.
	c, err := net.Dial("tcp", f.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	var b []byte
	want := map[string]bool{}
	for i := 0; i < 400; i += 3 {
		b = append(b, frame(stressRoute(i, 12))...)
		want[stressPrefix(i)] = true
	}
	write(t, c, slices.Concat(stressNexthops(), b))
	waitFor(t, "the last session to settle", func() bool { return f.Status().Settled })
	got, users := map[string]bool{}, 0
	r.Tables.Main().Dump(fib6.Filter{}, func(rt fib6.Route) bool {
		switch rt.Proto {
		case 186:
			got[rt.Dst.String()] = true
			if rt.Object == nil || rt.Object.ID() != 12 {
				t.Errorf("%s: %v", rt.Dst, rt.Object)
			}
		case fib6.ProtoStatic:
			users++
		}
		return true
	})
	if len(got) != len(want) {
		t.Errorf("the feed's routes: %d, want %d", len(got), len(want))
	}
	for p := range want {
		if !got[p] {
			t.Errorf("%s missing", p)
		}
	}
	if users != 64 {
		t.Errorf("the user's routes: %d, want 64", users)
	}
	if o := r.Nexthops.Get(1000); o == nil {
		t.Error("the user's nexthop object was swept")
	}
	t.Logf("%d connections, %d messages, %d swept, %d malformed", f.Connects.Load(), ap.Stats.Messages.Load(), ap.Stats.Swept.Load(), ap.Stats.Malformed.Load())
}

func stressPrefix(i int) string { return fmt.Sprintf("2001:db8:%x::/48", 0x1000+i) }

// stressRoute is zebra's RTM_NEWROUTE of stressPrefix(i) through nexthop nh.
func stressRoute(i int, nh uint32) []byte {
	x := newRoute(stressPrefix(i))
	x.nhid = nh
	return x.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE)
}

// stressNexthops are the objects each session of zebra starts with: two
// gateways and a group of both.
func stressNexthops() []byte {
	return slices.Concat(frame(nhObj{id: 10, gw: gw1, oif: kidx}.encode(unix.RTM_NEWNEXTHOP)),
		frame(nhObj{id: 11, gw: gw2, oif: kidx}.encode(unix.RTM_NEWNEXTHOP)),
		frame(nhObj{id: 12, group: []GroupEntry{{10, 1}, {11, 1}}}.encode(unix.RTM_NEWNEXTHOP)))
}

// restartingZebra connects to the feed at addr sessions times, adds and
// deletes random routes, and now and then cuts a session mid-frame or
// leaves it open for the next connection to replace.
func restartingZebra(t *testing.T, addr string, sessions int) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for range sessions {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := c.Write(stressNexthops()); err != nil {
			t.Error(err)
		}
		for k := 0; k < 20; k++ {
			var b []byte
			for j := 0; j < 50; j++ {
				i := rnd.IntN(400)
				switch rnd.IntN(4) {
				case 0:
					b = append(b, frame(newRoute(stressPrefix(i)).encode(unix.RTM_DELROUTE, 0))...)
				default:
					b = append(b, frame(stressRoute(i, uint32(10+rnd.IntN(3))))...)
				}
			}
			cut := rnd.IntN(10) == 0
			if cut {
				b = b[:len(b)-3] // cut mid-frame
			}
			if _, err := c.Write(b); err != nil {
				t.Error(err)
			}
			if cut {
				break
			}
		}
		if rnd.IntN(3) > 0 {
			_ = c.Close()
		} // else left open: the next connection replaces it
	}
}

// userEdits replaces the user's routes and adds and deletes a nexthop
// object of the same table and registry as the feed, until stop.
func userEdits(t *testing.T, r *router.Router, userNh nexthop.Spec, stop chan struct{}) {
	user := func(i int) netip.Prefix { return netip.MustParsePrefix(fmt.Sprintf("2001:db8:ff%02x::/48", i)) }
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		x := r.Tables.Main().Begin()
		rt := fib6.Route{Dst: user(n % 64)}
		rt.Metric, rt.Type, rt.Proto, rt.Object = 1024, fib6.Unicast, fib6.ProtoStatic, r.Nexthops.Get(1000)
		if err := x.Replace(rt); err != nil {
			t.Error(err)
		}
		x.Commit()
		s := userNh
		s.ID = 1001
		if _, err := r.Nexthops.Add(s, true); err != nil {
			t.Error(err)
		}
		if err := r.DeleteNexthop(1001); err != nil {
			t.Error(err)
		}
	}
}
