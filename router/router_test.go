package router

import (
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/nexthop"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// routes lists a table's routes as "DST dev LINK metric M proto P type T".
func routes(t *fib6.Table, r *Router) []string {
	var out []string
	t.Dump(fib6.Filter{}, func(rt fib6.Route) bool {
		name := "-"
		if l := r.Links.ByIndex(rt.Nexthop.Link); l != nil {
			name = l.Name
		}
		out = append(out, rt.Dst.String()+" dev "+name+" metric "+itoa(rt.Metric)+" proto "+itoa(uint32(rt.Proto))+" "+rt.Type.String())
		return true
	})
	return out
}

func itoa(n uint32) string { return strconv.Itoa(int(n)) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestAddressRoutes: an address brings Linux's routes, in the tables and
// with the metrics and protocol Linux gives them, once its link is up; the
// routes go with the address; a prefix shared by two addresses keeps its
// connected route until the last goes; the same prefix on two links has a
// connected route on each.
func TestAddressRoutes(t *testing.T) {
	r := New()
	d0, err := r.AddDummy("d0", 1500)
	must(t, err)
	d1, err := r.AddDummy("d1", 1500)
	must(t, err)
	must(t, r.AddAddr(d0, pfx("2001:db8:91::1/64"))) // d0 is down: no routes yet
	if got := routes(r.Tables.Main(), r); len(got) != 0 {
		t.Fatalf("routes of a down link: %v", got)
	}
	must(t, r.SetUp(d0, true))
	must(t, r.SetUp(d1, true))
	must(t, r.AddAddr(d0, pfx("2001:db8:91::2/64")))
	must(t, r.AddAddr(d1, pfx("2001:db8:91::3/64")))
	must(t, r.AddAddr(d1, pfx("2001:db8:5::5/128")))
	wantMain := []string{
		"2001:db8:5::5/128 dev d1 metric 256 proto 2 unicast",
		"2001:db8:91::/64 dev d0 metric 256 proto 2 unicast",
		"2001:db8:91::/64 dev d1 metric 256 proto 2 unicast",
	}
	wantLocal := []string{
		"::1/128 dev lo metric 0 proto 2 local",
		"2001:db8:5::5/128 dev d1 metric 0 proto 2 local",
		"2001:db8:91::1/128 dev d0 metric 0 proto 2 local",
		"2001:db8:91::2/128 dev d0 metric 0 proto 2 local",
		"2001:db8:91::3/128 dev d1 metric 0 proto 2 local",
	}
	if got := routes(r.Tables.Main(), r); !slices.Equal(got, wantMain) {
		t.Errorf("main:\n%v\nwant\n%v", got, wantMain)
	}
	if got := routes(r.Tables.Local(), r); !slices.Equal(got, wantLocal) {
		t.Errorf("local:\n%v\nwant\n%v", got, wantLocal)
	}
	if err := r.AddAddr(d0, pfx("2001:db8:91::1/64")); !errors.Is(err, dataplane.ErrAddrExists) {
		t.Errorf("the same address again: %v", err)
	}
	// one of d0's two addresses goes: the prefix stays; then the other
	_, err = r.DelAddr(d0, pfx("2001:db8:91::1/64"))
	must(t, err)
	if got := routes(r.Tables.Main(), r); !slices.Equal(got, wantMain) {
		t.Errorf("after deleting one of two addresses in a prefix: %v", got)
	}
	_, err = r.DelAddr(d0, pfx("2001:db8:91::2/64"))
	must(t, err)
	if got := routes(r.Tables.Main(), r); !slices.Equal(got, []string{wantMain[0], wantMain[2]}) {
		t.Errorf("after deleting the prefix's last address on d0: %v", got)
	}
	if _, err := r.DelAddr(d0, pfx("2001:db8:91::2/64")); !errors.Is(err, dataplane.ErrNoAddr) {
		t.Errorf("deleting an address that is not there: %v", err)
	}
}

// TestLinkDown: a link going down takes every route through it from every
// table and its addresses (keep_addr_on_down 0); up again, it has neither;
// deleting a link does the same and the loopback cannot be deleted. The
// watcher hears every change.
func TestLinkDown(t *testing.T) {
	r := New()
	var events []Event
	r.Watch(func(e Event) { events = append(events, e) })
	d0, err := r.AddDummy("d0", 1500)
	must(t, err)
	must(t, r.SetUp(d0, true))
	must(t, r.AddAddr(d0, pfx("2001:db8:91::1/64")))
	t100 := r.Tables.Ensure(100)
	x := t100.Begin()
	must(t, x.Add(fib6.Route{Dst: pfx("2001:db8:7::/48"), Attrs: fib6.Attrs{Metric: 1024, Nexthop: nexthop.Nexthop{Link: d0.Index}}}))
	x.Commit()
	must(t, r.SetUp(d0, false))
	for _, tab := range r.Tables.All() {
		if got := routes(tab, r); len(got) != 0 && tab.ID() != fib6.TableLocal {
			t.Errorf("table %d keeps %v", tab.ID(), got)
		}
	}
	if got := routes(r.Tables.Local(), r); !slices.Equal(got, []string{"::1/128 dev lo metric 0 proto 2 local"}) {
		t.Errorf("local after link down: %v", got)
	}
	if len(d0.Addrs()) != 0 {
		t.Errorf("addresses after link down: %v", d0.Addrs())
	}
	must(t, r.SetUp(d0, true))
	if got := routes(r.Tables.Main(), r); len(got) != 0 {
		t.Errorf("up again: %v", got)
	}
	if err := r.DeleteLink(r.Lo); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("deleting lo: %v", err)
	}
	must(t, r.DeleteLink(d0))
	if r.Links.ByName("d0") != nil {
		t.Error("d0 is still there")
	}
	var kinds []EventKind
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	want := []EventKind{LinkAdded, LinkChanged, AddrAdded, LinkChanged, AddrDeleted, // up, address, down
		LinkChanged, LinkChanged, LinkDeleted} // up again; delete takes it down first
	if !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
}

// TestExpiryNeverWaits: routes with an expiry time go when it comes; while
// a client holds one table's transaction, routes in the other tables still
// expire on time, and that table's as soon as the client lets it go.
func TestExpiryNeverWaits(t *testing.T) {
	r := New()
	d0, err := r.AddDummy("d0", 1500)
	must(t, err)
	must(t, r.SetUp(d0, true))
	soon := time.Now().Add(300 * time.Millisecond).UnixNano()
	for _, id := range []uint32{100, 200} {
		x := r.Tables.Ensure(id).Begin()
		must(t, x.Add(fib6.Route{Dst: pfx("2001:db8:7::/48"), Attrs: fib6.Attrs{Metric: 1024, Expires: soon,
			Nexthop: nexthop.Nexthop{Link: d0.Index}}}))
		x.Commit()
	}
	clock := &stepClock{at: soon + 1, tick: make(chan time.Time), retries: make(chan chan time.Time, 1)}
	r.expiry = clock
	held := r.Tables.Get(100).Begin() // a client in the middle of a batch
	r.Start()
	defer r.Close()
	clock.tick <- time.Time{} // the first tick after the routes' time
	var retry chan time.Time
	select {
	case retry = <-clock.retries:
	case <-time.After(5 * time.Second):
		t.Fatal("the held table is not tried again")
	}
	if r.Tables.Get(200).Len() != 0 {
		t.Fatal("table 200's route did not expire while table 100 was held")
	}
	if r.Tables.Get(100).Len() != 1 {
		t.Fatal("table 100's route expired inside a transaction it did not hold")
	}
	held.Commit()
	select {
	case retry <- time.Time{}:
	case <-time.After(5 * time.Second):
		t.Fatal("the retry is not waited for")
	}
	r.Close() // the routine done with the retry
	if r.Tables.Get(100).Len() != 0 {
		t.Errorf("table 100's route did not expire once the table was free, by the retry (%v), before the next tick", expireRetry)
	}
}

// stepClock is an expiryClock the test steps: its time stands at at, it
// ticks when the test sends on tick, and each retry it is asked for it
// hands the test, to fire.
type stepClock struct {
	at      int64
	tick    chan time.Time
	retries chan chan time.Time
}

func (c *stepClock) now() int64                        { return c.at }
func (c *stepClock) ticks() (<-chan time.Time, func()) { return c.tick, func() {} }
func (c *stepClock) after(time.Duration) <-chan time.Time {
	r := make(chan time.Time)
	c.retries <- r
	return r
}
