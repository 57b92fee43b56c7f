package feed

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"urouter/fib6"
	"urouter/router"
)

// The kernel's interface index of the test link's mirror.
const kidx = 7

func testRouter(t testing.TB) (*router.Router, *Applier) {
	t.Helper()
	r := router.New()
	l, err := r.AddDummy("d0", 1500)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetUp(l, true); err != nil {
		t.Fatal(err)
	}
	if err := r.AddAddr(l, netip.MustParsePrefix("2001:db8:1::1/64")); err != nil {
		t.Fatal(err)
	}
	return r, NewApplier(r, func(k int32) int32 {
		if k == kidx {
			return l.Index
		}
		return 0
	})
}

// routes lists table id as "dst proto metric type via..." lines, sorted.
func routes(r *router.Router, id uint32) []string {
	t := r.Tables.Get(id)
	if t == nil {
		return nil
	}
	var out []string
	t.Dump(fib6.Filter{}, func(rt fib6.Route) bool {
		if rt.Proto == fib6.ProtoKernel {
			return true
		}
		s := fmt.Sprintf("%s proto %d metric %d %s", rt.Dst, rt.Proto, rt.Metric, rt.Type)
		if rt.Object != nil {
			s += fmt.Sprintf(" nhid %d", rt.Object.ID())
		}
		for _, p := range rt.Paths() {
			s += fmt.Sprintf(" via %s dev %d weight %d", p.Gateway, p.Link, p.Weight)
		}
		out = append(out, s)
		return true
	})
	slices.Sort(out)
	return out
}

func mustDecode(t testing.TB, b []byte) []Msg {
	t.Helper()
	msgs, used, _, err := DecodeFrames(b, nil)
	if err != nil || used != len(b) {
		t.Fatalf("decode: %v (used %d of %d)", err, used, len(b))
	}
	return msgs
}

var (
	gw1 = netip.MustParseAddr("fe80::1")
	gw2 = netip.MustParseAddr("fe80::2")
)

// TestApply: what zebra sends (nexthop objects, groups, routes through
// them) and what the kernel says (inline gateways, multipath, reject
// routes, other tables) ends in the tables as `ip route` would show it;
// IPv4, route types urouter has no use for and unknown interfaces are
// counted and skipped.
func TestApply(t *testing.T) {
	r, ap := testRouter(t)
	v4 := route{dst: netip.MustParsePrefix("10.0.0.0/8")}
	v4b := v4.encode(unix.RTM_NEWROUTE, 0)
	v4b[16] = unix.AF_INET // rtm_family
	local := newRoute("2001:db8:f::/48")
	local.typ = unix.RTN_LOCAL
	connected := newRoute("2001:db8:1::/64")
	connected.proto, connected.oif = unix.RTPROT_KERNEL, kidx // zebra sends the connected routes too
	unknown := newRoute("2001:db8:e::/48")
	unknown.gw, unknown.oif = gw1, 99
	b := newRoute("2001:db8:b::/48")
	b.gw, b.oif = gw1, kidx
	c := newRoute("2001:db8:c::/48")
	c.paths = []Path{{Gateway: gw1, OIF: kidx, Weight: 1}, {Gateway: gw2, OIF: kidx, Weight: 3}}
	d := newRoute("2001:db8:d::/48")
	d.typ, d.proto = unix.RTN_BLACKHOLE, unix.RTPROT_STATIC
	e := newRoute("2001:db8:a::/48")
	e.nhid = 12
	f := newRoute("2001:db8:100::/48")
	f.table, f.gw, f.oif = 100, gw2, kidx
	g := newRoute("2001:db8:200::/48")
	g.table, g.gw, g.oif = 1000, gw2, kidx // a table id above 255: RTA_TABLE
	stream := slices.Concat(
		frame(nhObj{id: 10, gw: gw1, oif: kidx}.encode(unix.RTM_NEWNEXTHOP),
			nhObj{id: 11, gw: gw2, oif: kidx}.encode(unix.RTM_NEWNEXTHOP)),
		frame(nhObj{id: 12, group: []GroupEntry{{10, 1}, {11, 2}}}.encode(unix.RTM_NEWNEXTHOP)),
		frame(e.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE)),
		frame(b.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE), c.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE),
			d.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE), f.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE),
			g.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE)),
		frame(v4b, local.encode(unix.RTM_NEWROUTE, 0), unknown.encode(unix.RTM_NEWROUTE, 0), connected.encode(unix.RTM_NEWROUTE, 0)),
	)
	ap.Apply(mustDecode(t, stream))
	want := []string{
		"2001:db8:a::/48 proto 186 metric 20 unicast nhid 12 via fe80::1 dev 2 weight 1 via fe80::2 dev 2 weight 2",
		"2001:db8:b::/48 proto 186 metric 20 unicast via fe80::1 dev 2 weight 1",
		"2001:db8:c::/48 proto 186 metric 20 unicast via fe80::1 dev 2 weight 1 via fe80::2 dev 2 weight 3",
		"2001:db8:d::/48 proto 4 metric 20 blackhole",
	}
	if got := routes(r, fib6.TableMain); !slices.Equal(got, want) {
		t.Fatalf("main:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := routes(r, 100); len(got) != 1 || !strings.HasPrefix(got[0], "2001:db8:100::/48") {
		t.Fatalf("table 100: %q", got)
	}
	if got := routes(r, 1000); len(got) != 1 || !strings.HasPrefix(got[0], "2001:db8:200::/48") {
		t.Fatalf("table 1000: %q", got)
	}
	if s := ap.Stats.Skipped.Load(); s != 4 {
		t.Errorf("skipped %d, want 4 (IPv4, local, unknown interface, proto kernel)", s)
	}
	if n := ap.Stats.Rejected.Load(); n != 0 {
		t.Errorf("rejected %d: %s", n, ap.LastError())
	}

	// An update as DELROUTE then NEWROUTE, a replace in place, a deletion
	// of a group member's object (the kernel's semantics: the group
	// shrinks) and of a route.
	b2 := b
	b2.gw = gw2
	bdel := b
	bdel.typ = unix.RTN_UNSPEC // zebra's deletions say no type
	ap.Apply(mustDecode(t, slices.Concat(
		frame(bdel.encode(unix.RTM_DELROUTE, 0)), frame(b2.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE)),
		frame(nhObj{id: 11}.encode(unix.RTM_DELNEXTHOP)),
		frame(d.encode(unix.RTM_DELROUTE, 0)))))
	want = []string{
		"2001:db8:a::/48 proto 186 metric 20 unicast nhid 12 via fe80::1 dev 2 weight 1",
		"2001:db8:b::/48 proto 186 metric 20 unicast via fe80::2 dev 2 weight 1",
		"2001:db8:c::/48 proto 186 metric 20 unicast via fe80::1 dev 2 weight 1 via fe80::2 dev 2 weight 3",
	}
	if got := routes(r, fib6.TableMain); !slices.Equal(got, want) {
		t.Fatalf("after updates:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A route through a nexthop that does not exist is refused, counted,
	// and named.
	e.nhid = 99
	ap.Apply(mustDecode(t, frame(e.encode(unix.RTM_NEWROUTE, 0))))
	if ap.Stats.Rejected.Load() != 1 || !strings.Contains(ap.LastError(), "2001:db8:a::/48") {
		t.Errorf("rejected %d, last error %q", ap.Stats.Rejected.Load(), ap.LastError())
	}
}

// TestMalformed: truncated frames, a wrong version or length, truncated
// and overlong attributes are refused whole; unknown message types and
// attributes are passed over.
func TestMalformed(t *testing.T) {
	good := newRoute("2001:db8:b::/48")
	good.gw, good.oif = gw1, kidx
	msg := good.encode(unix.RTM_NEWROUTE, 0)
	bad := func(name string, b []byte) {
		t.Helper()
		msgs, _, _, err := DecodeFrames(b, nil)
		if err == nil || len(msgs) != 0 {
			t.Errorf("%s: decoded %d messages, err %v", name, len(msgs), err)
		}
	}
	f := frame(msg)
	v := slices.Clone(f)
	v[0] = 2
	bad("version 2", v)
	v = slices.Clone(f)
	v[1] = 2
	bad("type 2", v)
	v = slices.Clone(f)
	v[2], v[3] = 0, 3
	bad("length 3", v)
	v = slices.Clone(f)
	v[2], v[3] = 0, byte(len(f)-2)
	bad("length short of the message", v)
	long := slices.Clone(msg)
	long[0] += 4 // nlmsg_len past the frame
	bad("message past the frame", frame(long))
	attr := slices.Clone(msg)
	attr[16+unix.SizeofRtMsg] = 200 // RTA_DST's length past the message
	bad("attribute past the message", frame(attr))
	gwShort := slices.Clone(msg)
	i := bytes.Index(gwShort, gw1.AsSlice())
	gwShort[i-4] = 8 // RTA_GATEWAY of 4 bytes
	bad("gateway of 4 bytes", frame(gwShort))

	// A frame not yet whole waits for the rest.
	msgs, used, frames, err := DecodeFrames(f[:len(f)-1], nil)
	if err != nil || used != 0 || frames != 0 || len(msgs) != 0 {
		t.Errorf("partial frame: %d %d %d %v", len(msgs), used, frames, err)
	}
	// An unknown message type and an unknown attribute are not errors.
	other := slices.Clone(msg)
	other[4] = 200 // nlmsg_type
	extra := append(slices.Clone(msg), 8, 0, 250, 0, 1, 2, 3, 4)
	extra[0] += 8
	msgs = mustDecode(t, frame(other, extra))
	if len(msgs) != 2 || msgs[0].Kind != Other || msgs[1].Kind != RouteAdd || msgs[1].Route.Gateway != gw1 {
		t.Errorf("unknown type and attribute: %+v", msgs)
	}
}

// listen starts an FPM listener on a port of the loopback's, closed when
// the test ends.
func listen(t *testing.T, ap *Applier, tm Timers) *FPM {
	t.Helper()
	f, err := ListenFPM("127.0.0.1:0", ap, tm)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// write sends b to zebra's peer on c; a failed write fails t.
func write(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// dial connects a fake zebra to f.
func dial(t *testing.T, f *FPM) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", f.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitCount waits until count reaches want, for as long as it moves: a
// loaded machine's race-built applier may take longer than waitFor's
// 5 s over what the sockets still hold (up to ~150,000 messages), but
// it never stops for 5 s.
func waitCount(t *testing.T, what string, count func() uint64, want uint64) {
	t.Helper()
	last, moved := count(), time.Now()
	for ; last != want; time.Sleep(5 * time.Millisecond) {
		if n := count(); n != last {
			last, moved = n, time.Now()
		} else if time.Since(moved) > 5*time.Second {
			t.Fatalf("%s: stuck at %d of %d", what, last, want)
		}
	}
}

// TestFPMSessions: a lost connection keeps the routes; the next session
// replays, and once it settles what it did not replay is swept, with no
// moment where a replayed route is missing; a malformed frame closes the
// connection and changes nothing; a connection cut mid-frame applies
// nothing of that frame; a new connection replaces a lingering one.
func TestFPMSessions(t *testing.T) {
	r, ap := testRouter(t)
	settle := 200 * time.Millisecond
	clock := newStepClock()
	f := listen(t, ap, Timers{Settle: settle, Hold: 3 * settle, clock: clock})
	rt := func(p string) []byte {
		x := newRoute(p)
		x.nhid = 10
		return x.encode(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE)
	}
	nh := frame(nhObj{id: 10, gw: gw1, oif: kidx}.encode(unix.RTM_NEWNEXTHOP))
	main := func() int { return len(routes(r, fib6.TableMain)) }

	c := dial(t, f)
	write(t, c, slices.Concat(nh, frame(rt("2001:db8:a::/48"), rt("2001:db8:b::/48")), frame(rt("2001:db8:c::/48"))))
	waitFor(t, "3 routes", func() bool { return main() == 3 })
	stepUntil(t, clock, settle/4, "the first session to settle", func() bool { return f.Status().Settled })
	_ = c.Close() // zebra goes away: the routes stay
	waitFor(t, "the session to end", func() bool { return !f.Status().Connected })
	clock.advance(2 * settle)
	if main() != 3 {
		t.Fatalf("after the connection was lost: %d routes", main())
	}

	// The replay leaves out 2001:db8:c::/48: it goes once the replay
	// settles, and the others never leave meanwhile.
	replayed := clock.now() // before the dial: the daemon's hold starts at its accept
	msgs := ap.Stats.Messages.Load()
	c = dial(t, f)
	write(t, c, slices.Concat(nh, frame(rt("2001:db8:a::/48"))))
	waitFor(t, "the replay's first messages", func() bool { return ap.Stats.Messages.Load() == msgs+2 })
	clock.advance(settle / 4)
	write(t, c, frame(rt("2001:db8:b::/48")))
	waitFor(t, "the replay's last message", func() bool { return ap.Stats.Messages.Load() == msgs+3 })
	stepUntil(t, clock, settle/4, "the replay's sweep", func() bool {
		if main() < 2 {
			t.Fatalf("during the replay: %q", routes(r, fib6.TableMain))
		}
		return main() == 2
	})
	if got := routes(r, fib6.TableMain); !strings.HasPrefix(got[0], "2001:db8:a::/48") || !strings.HasPrefix(got[1], "2001:db8:b::/48") {
		t.Fatalf("after the sweep: %q", got)
	}
	// a replay shorter than the last session's table waits out the hold
	if d := clock.now().Sub(replayed); d < 3*settle {
		t.Errorf("swept %v after the reconnect, before the hold (%v)", d, 3*settle)
	}

	// Cut mid-frame: nothing of the frame.
	d := frame(rt("2001:db8:d::/48"))
	write(t, c, d[:len(d)-3])
	_ = c.Close()
	waitFor(t, "the session to end", func() bool { return !f.Status().Connected })
	if main() != 2 {
		t.Fatalf("a frame cut short was applied: %q", routes(r, fib6.TableMain))
	}

	// A malformed frame after a good one: the good one applies, the bad
	// one changes nothing and the connection is closed.
	c = dial(t, f)
	badFrame := frame(rt("2001:db8:f::/48"))
	badFrame[0] = 9
	write(t, c, slices.Concat(frame(rt("2001:db8:e::/48")), badFrame))
	buf := make([]byte, 1)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(buf); err == nil {
		t.Fatal("the connection stayed open after a malformed frame")
	}
	if ap.Stats.Malformed.Load() != 1 || main() != 3 || strings.Contains(strings.Join(routes(r, fib6.TableMain), ","), "2001:db8:f::") {
		t.Fatalf("malformed %d, routes %q", ap.Stats.Malformed.Load(), routes(r, fib6.TableMain))
	}

	// A new connection replaces one that lingers.
	old := dial(t, f)
	waitFor(t, "the first connection", func() bool { return f.Connects.Load() == 4 })
	c = dial(t, f)
	defer func() { _ = c.Close() }()
	_ = old.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := old.Read(buf); err == nil {
		t.Fatal("the lingering connection was not closed")
	}
	// the new session begins once the old one has ended, a moment after
	// its connection closed
	waitFor(t, "the new connection in status", func() bool {
		st := f.Status()
		return st.Connected && st.Peer == c.LocalAddr().String()
	})
}

// TestNexthopOrder: a group may come before its members (zebra's replay
// does that) and is added once they are; an id reused for a group where
// a nexthop was is replaced.
func TestNexthopOrder(t *testing.T) {
	r, ap := testRouter(t)
	e := newRoute("2001:db8:a::/48")
	e.nhid = 12
	ap.Apply(mustDecode(t, slices.Concat(
		frame(nhObj{id: 12, group: []GroupEntry{{10, 1}, {11, 1}}}.encode(unix.RTM_NEWNEXTHOP)),
		frame(nhObj{id: 10, gw: gw1, oif: kidx}.encode(unix.RTM_NEWNEXTHOP)),
		frame(nhObj{id: 11, gw: gw2, oif: kidx}.encode(unix.RTM_NEWNEXTHOP)),
		frame(e.encode(unix.RTM_NEWROUTE, 0)))))
	want := "2001:db8:a::/48 proto 186 metric 20 unicast nhid 12 via fe80::1 dev 2 weight 1 via fe80::2 dev 2 weight 1"
	if got := routes(r, fib6.TableMain); len(got) != 1 || got[0] != want || ap.Stats.Rejected.Load() != 0 {
		t.Fatalf("%q (rejected %d: %s)", got, ap.Stats.Rejected.Load(), ap.LastError())
	}
	e.nhid = 10
	ap.Apply(mustDecode(t, slices.Concat(
		frame(nhObj{id: 10, group: []GroupEntry{{11, 1}}}.encode(unix.RTM_NEWNEXTHOP)),
		frame(e.encode(unix.RTM_NEWROUTE, 0)))))
	want = "2001:db8:a::/48 proto 186 metric 20 unicast nhid 10 via fe80::2 dev 2 weight 1"
	if got := routes(r, fib6.TableMain); len(got) != 1 || got[0] != want {
		t.Fatalf("after the id was reused: %q (%s)", got, ap.LastError())
	}
}

// TestZebraCapture: a stream recorded from Debian's FRR 8.4 zebra (two
// BIRD peers, 1,000 prefixes, 100 of them over both, then a withdraw)
// decodes whole and applies with nothing refused; the table holds what
// the stream said last of each prefix, through the nexthop objects it
// named.
func TestZebraCapture(t *testing.T) {
	b, err := os.ReadFile("testdata/zebra-8.4.fpm")
	if err != nil {
		t.Fatal(err)
	}
	r := router.New()
	l, _ := r.AddDummy("d0", 1500)
	if err := r.SetUp(l, true); err != nil {
		t.Fatal(err)
	}
	ap := NewApplier(r, func(int32) int32 { return l.Index }) // every interface of the capture is d0
	msgs := mustDecode(t, b)
	live := map[netip.Prefix]uint32{}
	kinds := map[Kind]int{}
	for _, m := range msgs {
		kinds[m.Kind]++
		switch {
		case m.Skip != "":
		case m.Kind == RouteAdd:
			live[m.Route.Dst] = m.Route.NhID
		case m.Kind == RouteDel:
			delete(live, m.Route.Dst)
		}
	}
	ap.Apply(msgs)
	if n := ap.Stats.Rejected.Load(); n != 0 {
		t.Fatalf("%d refused: %s", n, ap.LastError())
	}
	got := map[netip.Prefix]uint32{}
	r.Tables.Main().Dump(fib6.Filter{}, func(rt fib6.Route) bool {
		if rt.Proto == 186 {
			got[rt.Dst] = rt.Object.ID()
		}
		return true
	})
	if len(got) != len(live) || len(live) < 900 {
		t.Fatalf("%d BGP routes, the stream leaves %d (%v)", len(got), len(live), kinds)
	}
	for p, id := range live {
		if got[p] != id {
			t.Errorf("%s: nhid %d, the stream says %d", p, got[p], id)
		}
	}
	t.Logf("%d messages (%v), %d routes", len(msgs), kinds, len(got))
}
