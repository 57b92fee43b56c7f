package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// What users keep of a router's configuration: `urouter save` writes text
// that, given as --config to a daemon on a fresh machine, makes the same
// router (every show the same, and the same save); `daemon --state FILE`
// keeps every change it acknowledged across kill -9, each session's whole
// or not at all, drops a record a crash tore, and refuses a file that is
// not one, naming its line; `status` says whether the router is ready.

// stateShows are the shows a round trip compares.
var stateShows = [][]string{
	{"-d", "link", "show"},
	{"address", "show"},
	{"-6", "route", "show", "table", "all"},
	{"nexthop", "show"},
	{"rule", "show"},
	{"neigh", "show", "nud", "permanent"},
	{"ra", "show"},
	{"sysctl", "-a"},
	{"-j", "save"},
	{"save"},
}

var (
	mirrorIndex = regexp.MustCompile(`(?m)^(\s+mirror \S+) ifindex \d+`)
	expiresN    = regexp.MustCompile(`expires (\d+)`)
)

// showsOf runs every stateShows on d: what a user sees of the router,
// with what another machine numbers otherwise (a mirror's kernel
// ifindex) left out.
func showsOf(t *testing.T, d *daemon) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, c := range stateShows {
		out, errs, st := d.run(c...)
		if st != 0 {
			t.Fatalf("%s: %d %s", strings.Join(c, " "), st, errs)
		}
		if c[0] == "-d" {
			out = mirrorIndex.ReplaceAllString(out, "$1")
		}
		m[strings.Join(c, " ")] = out
	}
	return m
}

// sameButExpires reports why a and b differ, "" if they do not: b was
// shown up to elapsed after a, so its remaining seconds of `expires N`
// may be fewer by that much (and one for rounding), never more; nothing
// else may differ.
func sameButExpires(a, b string, elapsed time.Duration) string {
	na, nb := expiresN.ReplaceAllString(a, "expires N"), expiresN.ReplaceAllString(b, "expires N")
	if na != nb {
		return lineDiff(na, nb)
	}
	xa, xb := expiresN.FindAllStringSubmatch(a, -1), expiresN.FindAllStringSubmatch(b, -1)
	for i := range xa {
		ea, _ := strconv.Atoi(xa[i][1])
		eb, _ := strconv.Atoi(xb[i][1])
		if ea-eb > int(elapsed/time.Second)+1 || eb-ea > 1 {
			return fmt.Sprintf("expires %d, then %d, %.1f s later", ea, eb, elapsed.Seconds())
		}
	}
	return ""
}

// lineDiff lists the lines of a not in b and of b not in a.
func lineDiff(a, b string) string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	ca, cb := count(a), count(b)
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if cb[l] == 0 {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if ca[l] == 0 {
			out = append(out, "+ "+l)
		}
	}
	if len(out) == 0 {
		return "the same lines in another order:\n" + a + "\n---\n" + b
	}
	return strings.Join(out, "\n")
}

// compareShows fails t for each show of got that differs from want's,
// which began to be shown at wantAt.
func compareShows(t *testing.T, what string, want map[string]string, wantAt time.Time, got map[string]string) {
	t.Helper()
	elapsed := time.Since(wantAt)
	for _, c := range stateShows {
		k := strings.Join(c, " ")
		if why := sameButExpires(want[k], got[k], elapsed); why != "" {
			t.Errorf("%s: `%s` differs:\n%s", what, k, why)
		}
	}
}

// waitDAD waits until no address on a link up is tentative: the flag is
// the clock's, not the configuration's.
func waitDAD(t *testing.T, d *daemon) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, _, _ := d.run("address", "show")
		if !tentative(out) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("addresses still tentative after 10 s:\n%s", out)
		}
	}
}

// tentative reports whether address show lists an address in DAD on a
// link that is up (on a link down it stays so, as in Linux).
func tentative(addrs string) bool {
	up := false
	for _, l := range strings.Split(addrs, "\n") {
		if m := linkHead.FindStringSubmatch(l); m != nil {
			up = slices.Contains(strings.Split(m[1], ","), "UP")
		} else if up && strings.Contains(l, " tentative") {
			return true
		}
	}
	return false
}

var linkHead = regexp.MustCompile(`^\d+: \S+: <([^>]*)>`)

// hostVeth makes the veth a host link takes, vA (its peer vB), in ns:
// always with one MAC, which a host link takes from its interface.
func hostVeth(t *testing.T, ns string) {
	t.Helper()
	mustRun(t, "ip", "-n", ns, "link", "add", "vA", "address", "02:00:00:00:0a:0a", "type", "veth", "peer", "name", "vB")
}

// stateGen writes a random configuration as client commands.
type stateGen struct {
	r       *rand.Rand
	batch   []string   // sent as one -batch
	singles [][]string // then one client each
	after   []string   // then as another -batch
	prefix  int        // the next route prefix
}

func (g *stateGen) add(format string, args ...any) {
	g.batch = append(g.batch, fmt.Sprintf(format, args...))
}
func (g *stateGen) one(args ...string)      { g.singles = append(g.singles, args) }
func (g *stateGen) maybe(n int) bool        { return g.r.Intn(n) == 0 }
func (g *stateGen) pick(s ...string) string { return s[g.r.Intn(len(s))] }

// dst is a new /48 for a route.
func (g *stateGen) dst() string {
	g.prefix++
	return fmt.Sprintf("2001:db8:%x::/48", 0x8000+g.prefix)
}

// metric is a route's or an address's metric words, or none.
func (g *stateGen) metric() string {
	if g.maybe(3) {
		return ""
	}
	return fmt.Sprintf(" metric %d", 1+g.r.Intn(2000))
}

// generate writes the configuration of one seed; delDefault deletes a
// default rule.
func (g *stateGen) generate(delDefault bool) {
	knobs := []string{
		"net.ipv6.fib_multipath_hash_policy=" + g.pick("1", "3"),
		"net.ipv6.fib_multipath_hash_fields=0x" + g.pick("37", "3f"),
		"net.ipv6.icmp.ratelimit=250",
		"net.ipv6.route.skip_notify_on_dev_down=1",
		"net.ipv6.conf.default.hop_limit=50",
		"net.ipv6.neigh.default.unres_qlen=64",
	}
	for _, k := range knobs {
		if g.maybe(2) {
			g.add("sysctl -w %s", k)
		}
	}
	// links: a dummy (maybe at an index asked for), another maybe with
	// its MAC, a TUN, a TAP, a host link on the veth
	if g.maybe(2) {
		g.add("link add d0 index %d type dummy", 10+g.r.Intn(10))
	} else {
		g.add("link add d0 type dummy")
	}
	if g.maybe(2) {
		g.add("link add d9 type dummy") // gone again: the indexes after skip its
		g.add("link del d9")
	}
	d1 := "link add d1"
	if g.maybe(2) {
		d1 += fmt.Sprintf(" address 02:00:00:00:d1:%02x", g.r.Intn(256))
	}
	if g.maybe(2) {
		d1 += " mtu 9000"
	}
	g.add("%s type dummy", d1)
	g.add("link add t0 type tun %s", g.pick("queues 2", "gso off", "queues 2 gso off", "mtu 1400 queues 2"))
	p0 := "link add p0 type tap"
	if g.maybe(2) {
		p0 += fmt.Sprintf(" address 02:00:00:00:50:%02x", g.r.Intn(256))
	}
	if g.maybe(3) {
		p0 += " mtu 1400"
	}
	g.add("%s", p0)
	g.add("link add h0 type host dev vA")
	// a link whose name begins with another's and a dot: each has its knobs
	g.add("link add d0.5 type dummy")
	g.add("sysctl -w net.ipv6.conf.d0.5.hop_limit=%d", 10+g.r.Intn(50))
	d1Up := g.maybe(2)
	for _, l := range []string{"d0", "t0", "p0", "h0"} {
		g.add("link set %s up", l)
	}
	if d1Up {
		g.add("link set d1 up")
	}
	switch g.r.Intn(3) {
	case 0:
		g.add("link set p0 mirror km0")
	case 1:
		g.add("link set h0 mirror km0")
	}
	// each link's own knobs
	g.add("sysctl -w net.ipv6.conf.%s.hop_limit=32", g.pick("d0", "t0", "p0", "h0"))
	g.add("sysctl -w net.ipv6.neigh.%s.base_reachable_time_ms=15000", g.pick("p0", "h0"))
	if g.maybe(2) {
		g.add("sysctl -w net.ipv6.neigh.%s.retrans_time_ms=500", g.pick("p0", "h0"))
	}
	if g.maybe(2) {
		g.add("sysctl -w net.ipv6.conf.p0.accept_dad=0")
	}
	if g.maybe(2) {
		g.add("ntable change name ndisc_cache dev %s queue 50 ucast_probes 5", g.pick("p0", "h0"))
	}
	if g.maybe(2) {
		g.add("ntable change name ndisc_cache thresh1 256")
	}
	if g.maybe(2) {
		g.add("link set t0 mtu 1420")
	}
	// addresses, with metrics
	g.add("address add 2001:db8:d0::1/64 dev d0%s", g.metric())
	g.add("address add 2001:db8:70::1/64 dev t0%s", g.metric())
	g.add("address add 2001:db8:50::1/64 dev p0%s", g.metric())
	if g.maybe(2) {
		g.add("address add 2001:db8:51::1/64 dev p0%s", g.metric())
	}
	g.add("address add 2001:db8:40::1/64 dev h0%s", g.metric())
	if d1Up || g.maybe(2) {
		g.add("address add 2001:db8:d1::1/64 dev d1%s", g.metric()) // on a link down too
	}
	if g.maybe(2) {
		g.add("address add 2001:db8:60::1/64 dev d0")
		g.add("address add 2001:db8:61::1/64 dev d0")
		g.add("address del 2001:db8:60::1/64 dev d0")
	}
	if g.maybe(2) {
		g.add("address add 2001:db8:ffff::1/128 dev lo")
	}
	// RA on the TAP, maybe the host link
	g.add("ra set dev p0 max-interval 30 min-interval 10 on")
	g.add("ra prefix add 2001:db8:50::/64 dev p0")
	if g.maybe(2) {
		g.add("ra prefix add 2001:db8:52::/64 dev p0 valid 3600 preferred 1800 no-autonomous")
	}
	if g.maybe(2) {
		g.add("ra set dev h0 preference high mtu 1400 hoplimit 32 managed on rdnss 2001:db8::53 on")
	}
	// nexthops: gateways, a dev-only IPv6 one, a blackhole, groups
	g.add("nexthop add id 1 via 2001:db8:d0::2 dev d0")
	g.add("nexthop add id 2 via 2001:db8:50::2 dev p0")
	g.add("nexthop add id 3 via 2001:db8:40::2 dev h0")
	g.one("-6", "nexthop", "add", "id", "7", "dev", "t0")
	g.one("route", "add", g.dst(), "nhid", "7", "table", "200")
	if g.maybe(2) {
		g.add("nexthop add id 5 blackhole")
	}
	if g.maybe(2) {
		g.add("nexthop add id 6 via fe80::1 dev p0")
	}
	g.add("-6 nexthop add dev t0") // the router's id
	if g.maybe(2) {
		g.add("nexthop add id 30 via 2001:db8:d0::3 dev d0")
		g.add("nexthop del id 30")
		g.add("nexthop replace id 2 via 2001:db8:50::3 dev p0")
	}
	w := func() string {
		if g.maybe(2) {
			return ""
		}
		return fmt.Sprintf(",%d", 2+g.r.Intn(5))
	}
	g.add("nexthop add id 20 group 1%s/2%s/3%s", w(), w(), w())
	g.add("nexthop add id 21 group 1/2/3 type resilient buckets %s idle_timer %d", g.pick("16", "32", "64"), 30+g.r.Intn(100))
	// routes of every type in tables main, 100 and 200
	gws := []string{"via 2001:db8:d0::2 dev d0", "via 2001:db8:50::2 dev p0", "via 2001:db8:40::2 dev h0", "dev t0"}
	for _, table := range []string{"", " table 100", " table 200"} {
		if table == "" && g.maybe(2) {
			table = " table main"
		}
		gw := func() string { return gws[g.r.Intn(len(gws))] }
		g.add("route add %s %s%s%s", g.dst(), gw(), table, g.metric())
		g.add("route add %s dev t0%s", g.dst(), table)
		for _, typ := range []string{"blackhole", "unreachable", "prohibit", "throw"} {
			if !strings.HasSuffix(table, "main") && table != "" && g.maybe(3) {
				continue // main has every type
			}
			g.add("route add %s %s%s%s", typ, g.dst(), table, g.metric())
		}
		g.add("route add %s from 2001:db8:f%x::/64 %s%s", g.dst(), g.r.Intn(16), gw(), table)
		g.add("route add %s%s nexthop via 2001:db8:d0::2 dev d0 weight %d nexthop via 2001:db8:d0::3 dev d0",
			g.dst(), table, 2+g.r.Intn(3))
		sib := g.dst()
		g.add("route add %s via 2001:db8:d0::2 dev d0%s metric 50", sib, table)
		g.one(strings.Fields(fmt.Sprintf("route append %s via 2001:db8:50::2 dev p0%s metric 50", sib, table))...)
		g.add("route add %s nhid %s%s", g.dst(), g.pick("1", "3", "20", "21"), table)
		g.add("route add %s %s%s mtu %d", g.dst(), gw(), table, 1280+g.r.Intn(200))
		g.add("route add %s %s%s expires 300", g.dst(), gw(), table)
		if g.maybe(2) {
			g.add("route add %s via 2001:db8:d0::2 dev d0%s src 2001:db8:d0::1 proto static", g.dst(), table)
		}
		if g.maybe(2) {
			g.add("route add %s via 2001:db8:99::1 dev d0 onlink%s", g.dst(), table)
		}
		if g.maybe(2) {
			gone, changed := g.dst(), g.dst()
			g.add("route add %s dev t0%s", gone, table)
			g.add("route del %s dev t0%s", gone, table)
			g.add("route add %s dev t0%s", changed, table)
			g.add("route replace %s %s%s", changed, gw(), table)
		}
		if table != "" && table != " table main" && g.maybe(2) {
			g.add("route add default via 2001:db8:50::2 dev p0%s", table)
		}
		// a gateway reached by a route of a link alone, not an address's,
		// that sorts after the route through it: saved in the table's
		// order, it did not load
		g.add("route add 2001:db8:1e::/64 dev d0%s", table)
		g.add("route add 2001:db8:1d::/64 via 2001:db8:1e::9 dev d0%s", table)
	}
	// rules: many selectors and every action (after the routes: a
	// gateway is checked against them)
	g.batch, g.after = g.after, g.batch
	defer func() { g.batch, g.after = g.after, g.batch }()
	pref := 100
	rule := func(format string, args ...any) {
		g.add("rule add pref %d %s", pref, fmt.Sprintf(format, args...))
		pref += 10 + g.r.Intn(10)
	}
	rule("from 2001:db8:9%x::/64 to 2001:db8:a::/64 iif d0 table 100", g.r.Intn(16))
	rule("oif p0 ipproto tcp dport 80 sport 1000-2000 table 200")
	rule("tos 0x10 not from 2001:db8::/32 table %s", g.pick("100", "200"))
	rule("table main suppress_prefixlength %d", g.r.Intn(65))
	if g.maybe(2) {
		rule("iif h0 ipproto udp dport 53 lookup 100")
	}
	rule("goto %d", pref+10)
	rule("from 2001:db8:bad::/48 blackhole")
	rule("to 2001:db8:bad::/48 unreachable")
	rule("iif t0 prohibit")
	if g.maybe(2) {
		rule("not to 2001:db8:c::/48 protocol static table 200")
	}
	if delDefault {
		g.add("rule del pref 32766")
	}
	// permanent neighbours, with the router flag
	g.add("neigh add 2001:db8:50::5 lladdr 02:00:00:00:00:55 dev p0 router nud permanent")
	g.add("neigh add 2001:db8:40::5 lladdr 02:00:00:00:00:45 dev h0 nud permanent")
	if g.maybe(2) {
		g.add("neigh add 2001:db8:40::6 lladdr 02:00:00:00:00:46 dev h0 router nud permanent")
	}
}

// TestSaveRoundTrip: a random configuration, built through the client on
// daemon A, saved, and given as --config to daemon B in a fresh netns:
// every show of B is A's, and so is B's save. A's state file, replayed by
// daemon C in another fresh netns, makes the same router too.
func TestSaveRoundTrip(t *testing.T) {
	needRoot(t)
	base := time.Now().UnixNano()
	if s := os.Getenv("UROUTER_SAVE_SEED"); s != "" {
		base, _ = strconv.ParseInt(s, 10, 64)
	}
	for i := range 3 {
		seed := base + int64(i)
		t.Run(fmt.Sprint("seed", i), func(t *testing.T) {
			t.Logf("seed %d (UROUTER_SAVE_SEED=%d for this run)", seed, base)
			saveRoundTrip(t, seed, i == 1)
		})
	}
}

func saveRoundTrip(t *testing.T, seed int64, delDefault bool) {
	g := &stateGen{r: rand.New(rand.NewSource(seed))}
	g.generate(delDefault)
	dir := t.TempDir()
	state := filepath.Join(dir, "a.state")

	nsA := newNetns(t, "srA")
	hostVeth(t, nsA)
	a := startDaemonFlags(t, nsA, []string{"--state", state})
	runBatch := func(lines []string) {
		batch := filepath.Join(dir, "batch")
		if err := os.WriteFile(batch, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, errs, st := a.run("-batch", batch); st != 0 {
			t.Fatalf("the configuration: %d %s\n%s", st, errs, numbered(lines))
		}
	}
	runBatch(g.batch)
	for _, c := range g.singles {
		if out, errs, st := a.run(c...); st != 0 {
			t.Fatalf("%s: %d %s%s", strings.Join(c, " "), st, out, errs)
		}
	}
	runBatch(g.after)
	waitDAD(t, a)
	wantAt := time.Now()
	want := showsOf(t, a)
	saved := want["save"]
	if !strings.Contains(saved, "route append ") && !strings.Contains(saved, "nexthop via") {
		t.Errorf("the save has no multipath route:\n%s", saved)
	}
	if delDefault && !strings.Contains(saved, "rule del pref 32766") {
		t.Errorf("the save does not delete the default rule it lacks:\n%s", saved)
	}
	a.stop()
	for _, dev := range []string{"t0", "p0", "km0"} {
		if out, _, st := runCmd("ip", "-n", nsA, "link", "show", "dev", dev); st == 0 {
			t.Errorf("A stopped, its kernel device %s stays:\n%s", dev, out)
		}
	}

	// B: the save as --config, on a fresh machine with the same veth
	nsB := newNetns(t, "srB")
	hostVeth(t, nsB)
	b := startDaemonFlags(t, nsB, nil, strings.Split(strings.TrimSuffix(saved, "\n"), "\n")...)
	waitDAD(t, b)
	compareShows(t, "B, from A's save", want, wantAt, showsOf(t, b))
	b.stop()

	// C: A's state file, replayed
	nsC := newNetns(t, "srC")
	hostVeth(t, nsC)
	c := startDaemonFlags(t, nsC, []string{"--state", state})
	waitDAD(t, c)
	compareShows(t, "C, from A's state file", want, wantAt, showsOf(t, c))
	if t.Failed() {
		t.Logf("A's configuration:\n%s\n%q\n%s", strings.Join(g.batch, "\n"), g.singles, strings.Join(g.after, "\n"))
	}
}

// killDaemon ends d as a crash does: SIGKILL to its process group, no
// time to finish a write. It fails t if the daemon had reported a race.
func killDaemon(t *testing.T, d *daemon) {
	t.Helper()
	if err := syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.cmd.Wait() // killed: its status is SIGKILL's
	if strings.Contains(d.log.String(), "DATA RACE") {
		t.Errorf("the daemon reported a data race:\n%s", d.log)
	}
}

// routeBatch is batch b of client c: n routes, one session, in a
// 2001:db8::/32 place of their own. c 0 makes /64s (2001:db8:B:N::),
// others /80s (2001:db8:C:B:N::).
func routeBatch(c, b, n int) string {
	var s strings.Builder
	for i := range n {
		if c == 0 {
			fmt.Fprintf(&s, "route add 2001:db8:%x:%x::/64 dev d0\n", 0x100+b, i)
		} else {
			fmt.Fprintf(&s, "route add 2001:db8:%x:%x:%x::/80 dev d0\n", 0xc000+c, b, i)
		}
	}
	return s.String()
}

// batchRoutes counts the routes of `-6 route show` by client and batch.
func batchRoutes(t *testing.T, d *daemon) map[[2]int]int {
	t.Helper()
	out, errs, st := d.run("-6", "route", "show")
	if st != 0 {
		t.Fatalf("route show: %d %s", st, errs)
	}
	n := map[[2]int]int{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		p, err := netip.ParsePrefix(f[0])
		if err != nil {
			continue
		}
		a := p.Addr().As16()
		w := func(i int) int { return int(a[i])<<8 | int(a[i+1]) }
		switch {
		case p.Bits() == 64 && w(4) >= 0x100 && w(4) < 0xc000:
			n[[2]int{0, w(4) - 0x100}]++
		case p.Bits() == 80 && w(4) > 0xc000:
			n[[2]int{w(4) - 0xc000, w(6)}]++
		}
	}
	return n
}

// batchLog is what a client sent: for each batch, whether it was
// acknowledged (exit status 0).
type batchLog struct {
	mu    sync.Mutex
	acked map[[2]int]bool // every batch sent; true: acknowledged
	size  map[int]int     // each client's routes a batch
}

// sender sends batches of n routes as client c until stop closes, each
// once, numbering them from *next.
func (bl *batchLog) sender(t *testing.T, sock, dir string, c, n int, next *int, stop <-chan struct{}) {
	file := filepath.Join(dir, fmt.Sprintf("batch%d", c))
	bl.mu.Lock()
	bl.size[c] = n
	bl.mu.Unlock()
	for {
		select {
		case <-stop:
			return
		default:
		}
		b := *next
		*next++
		if err := os.WriteFile(file, []byte(routeBatch(c, b, n)), 0o644); err != nil {
			t.Error(err)
			return
		}
		_, _, st := runCmd(urouter, "--socket", sock, "-batch", file)
		bl.mu.Lock()
		bl.acked[[2]int{c, b}] = st == 0
		bl.mu.Unlock()
		if st != 0 {
			time.Sleep(5 * time.Millisecond) // the daemon is down: do not spin
		}
	}
}

// check fails t for a batch the router lacks a route of though it was
// acknowledged, or has some routes of but not all; it returns the
// batches it has whole.
func (bl *batchLog) check(t *testing.T, d *daemon) (whole, acked map[int]int) {
	t.Helper()
	have := batchRoutes(t, d)
	bl.mu.Lock()
	defer bl.mu.Unlock()
	for k, got := range have {
		if _, sent := bl.acked[k]; !sent {
			t.Errorf("client %d batch %d: %d routes of a batch never sent", k[0], k[1], got)
		}
	}
	whole, acked = map[int]int{}, map[int]int{}
	for k, ack := range bl.acked {
		n := bl.size[k[0]]
		if ack {
			acked[k[0]]++
		}
		switch got := have[k]; {
		case ack && got != n:
			t.Errorf("client %d batch %d was acknowledged: %d of its %d routes after the restart", k[0], k[1], got, n)
		case got != 0 && got != n:
			t.Errorf("client %d batch %d: %d of its %d routes after the restart (all or none)", k[0], k[1], got, n)
		case got == n:
			whole[k[0]]++
		}
	}
	return whole, acked
}

// TestStateCrash: a daemon with --state killed with SIGKILL at random
// moments while a client sends batches of 200 routes: after each restart
// from the file alone, every acknowledged batch is there whole, and every
// other whole or not at all. A configuration made by the client is the
// same after a kill (the MACs and nexthop ids the router chose). Then 4
// clients at once, and one kill. status reports the file's records.
func TestStateCrash(t *testing.T) {
	needRoot(t)
	ns := newNetns(t, "stc")
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	sock := filepath.Join(dir, "urouter.sock")
	flags := []string{"--state", state}
	d := startDaemonAt(t, ns, sock, flags)
	setup := filepath.Join(dir, "setup")
	if err := os.WriteFile(setup, []byte("link add d0 type dummy\nlink set d0 up\naddress add 2001:db8:1::1/64 dev d0\n"+
		"link add p0 type tap\nlink set p0 up\n-6 nexthop add dev d0\nnexthop add via 2001:db8:1::2 dev d0\n"+
		"route add 2001:db8:2::/64 nhid 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errs, st := d.run("-batch", setup); st != 0 {
		t.Fatalf("setup: %d %s%s", st, out, errs)
	}
	// A batch that fails keeps the lines that changed something before
	// the failure; a forced one, all but the failed line.
	for _, b := range []struct {
		force bool
		lines string
	}{
		{false, "route add 2001:db8:3::/64 dev d0\nroute add 2001:db8:3::/64 dev d0\nroute add 2001:db8:4::/64 dev d0\n"},
		{true, "route add 2001:db8:5::/64 dev d0\nroute add 2001:db8:5::/64 dev d0\nroute add 2001:db8:6::/64 dev d0\n"},
	} {
		if err := os.WriteFile(setup, []byte(b.lines), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"-batch", setup}
		if b.force {
			args = append([]string{"-force"}, args...)
		}
		if out, errs, st := d.run(args...); st != 1 {
			t.Fatalf("a batch with a failing line: %d %s%s", st, out, errs)
		}
	}
	waitDAD(t, d)
	beforeAt := time.Now()
	before := showsOf(t, d)
	routes := before["-6 route show table all"]
	for p, want := range map[string]bool{"2001:db8:3::/64": true, "2001:db8:4::/64": false, "2001:db8:5::/64": true, "2001:db8:6::/64": true} {
		if strings.Contains(routes, "\n"+p+" dev d0") != want {
			t.Errorf("route %s there: %v, want %v:\n%s", p, !want, want, routes)
		}
	}
	// what only shows, or fails, writes nothing
	size := func() int64 {
		fi, err := os.Stat(state)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	was := size()
	showsOf(t, d)
	for _, c := range [][]string{{"status"}, {"sysctl", "net.ipv6.conf.d0.hop_limit"}, {"route", "add", "2001:db8:7::/64", "dev", "nosuch"}, {"link", "set", "nosuch", "up"}, {"route", "add", "2001:db8:1::/64", "dev", "d0", "bogus"}} {
		d.run(c...)
	}
	if now := size(); now != was {
		t.Errorf("shows and failed commands grew the state file from %d to %d bytes", was, now)
	}
	killDaemon(t, d)
	d = startDaemonAt(t, ns, sock, flags)
	waitDAD(t, d)
	compareShows(t, "after kill -9", before, beforeAt, showsOf(t, d))

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	bl := &batchLog{acked: map[[2]int]bool{}, size: map[int]int{}}
	next := 0
	const kills, n = 20, 200
	for k := range kills {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { defer close(done); bl.sender(t, sock, dir, 0, n, &next, stop) }()
		time.Sleep(time.Duration(20+r.Intn(281)) * time.Millisecond)
		killDaemon(t, d)
		close(stop)
		<-done
		d = startDaemonAt(t, ns, sock, flags)
		whole, acked := bl.check(t, d)
		if t.Failed() {
			t.Fatalf("after kill %d of %d", k+1, kills)
		}
		if k == kills-1 {
			t.Logf("%d kills: %d batches sent, %d acknowledged, %d whole after the last restart", kills, next, acked[0], whole[0])
			if acked[0] < kills/4 {
				t.Errorf("%d batches acknowledged in %d kills: the test did not test", acked[0], kills)
			}
		}
	}

	// 4 clients at once, small batches, then a kill
	const clients, small = 4, 10
	stop := make(chan struct{})
	var wg sync.WaitGroup
	nexts := make([]int, clients+1)
	for c := 1; c <= clients; c++ {
		wg.Add(1)
		go func() { defer wg.Done(); bl.sender(t, sock, dir, c, small, &nexts[c], stop) }()
	}
	time.Sleep(2 * time.Second)
	killDaemon(t, d)
	close(stop)
	wg.Wait()
	d = startDaemonAt(t, ns, sock, flags)
	whole, acked := bl.check(t, d)
	for c := 1; c <= clients; c++ {
		t.Logf("client %d: %d batches of %d sent in 2 s, %d acknowledged, %d whole after the restart", c, nexts[c], small, acked[c], whole[c])
		if acked[c] < 3 {
			t.Errorf("client %d: %d batches acknowledged in 2 s: the test did not test", c, acked[c])
		}
	}

	// status: ready, with what the file held
	out, errs, st := d.run("status")
	if st != 0 || !strings.HasPrefix(out, "status ready\n") {
		t.Errorf("status: %d %s%s", st, out, errs)
	}
	file, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	records, lines := len(seals(file)), 0
	for _, l := range strings.Split(strings.TrimSuffix(string(file), "\n"), "\n") {
		// seals, the header and the numbers of sessions' lines (#@seq)
		// are not lines run
		if !strings.HasPrefix(l, "#@urouter ") && !strings.HasPrefix(l, "# urouter state") && !strings.HasPrefix(l, "#@seq ") {
			lines++
		}
	}
	jout, _, _ := d.run("-j", "status")
	var js struct {
		Ready bool `json:"ready"`
		State struct {
			File    string `json:"file"`
			Records int    `json:"records"`
			Lines   int    `json:"lines"`
			Errors  int    `json:"errors"`
		} `json:"state"`
	}
	if err := json.Unmarshal([]byte(jout), &js); err != nil {
		t.Fatalf("-j status: %v\n%s", err, jout)
	}
	if !js.Ready || js.State.File != state || js.State.Records != records || js.State.Lines != lines || js.State.Errors != 0 {
		t.Errorf("-j status: %s; the file has %d records, %d lines", jout, records, lines)
	}
	if want := fmt.Sprintf("state %s: %d records, %d lines, 0 errors", state, records, lines); !strings.Contains(out, want) {
		t.Errorf("status does not say %q:\n%s", want, out)
	}
}

// startFails runs a daemon with flags in ns that must not start: it gives
// the daemon's exit status and stderr, and fails t unless it ended within
// 10 s.
func startFails(t *testing.T, ns string, flags ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sock := filepath.Join(t.TempDir(), "urouter.sock")
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, urouter, "daemon", "--socket", sock}, flags...)...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the daemon had not stopped in 10 s: %s%s", out.String(), errs.String())
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), errs.String()
}

// seals are the byte offsets just past each seal line of a state file.
func seals(data []byte) []int {
	var ends []int
	for off := 0; off < len(data); {
		end := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			end = off + i + 1
		}
		if bytes.HasPrefix(data[off:end], []byte("#@urouter ")) {
			ends = append(ends, end)
		}
		off = end
	}
	return ends
}

// lineAt is the 1-based line of data at byte offset off.
func lineAt(data []byte, off int) int { return bytes.Count(data[:off], []byte("\n")) + 1 }

func mustSave(t *testing.T, d *daemon) string {
	t.Helper()
	out, errs, st := d.run("save")
	if st != 0 {
		t.Fatalf("save: %d %s", st, errs)
	}
	return out
}

// TestStateHostile: state files a crash, an editor or a mistake made. A
// record torn at the end (cut short, garbage after the last seal, a
// megabyte line) is dropped with a log line, the state is the records'
// before it, and the file is cut back so that what comes after loads. A
// file that is not one stops the start at once, naming the file and the
// line, and is left as it was. A plain config is applied and becomes a
// state file.
func TestStateHostile(t *testing.T) {
	needRoot(t)
	ns := newNetns(t, "sth")
	dir := t.TempDir()
	base := filepath.Join(dir, "base.state")
	p := startDaemonFlags(t, ns, []string{"--state", base},
		"link add d0 type dummy", "link set d0 up", "address add 2001:db8:1::1/64 dev d0",
		"route add 2001:db8:10::/48 via 2001:db8:1::2 dev d0", "route add blackhole 2001:db8:11::/48",
		"rule add pref 100 from 2001:db8:9::/64 lookup 100")
	for _, c := range [][]string{{"route", "add", "2001:db8:12::/48", "dev", "d0", "table", "100"}, {"link", "add", "d1", "type", "dummy"}} {
		if out, errs, st := p.run(c...); st != 0 {
			t.Fatalf("%s: %d %s%s", strings.Join(c, " "), st, out, errs)
		}
	}
	before := mustSave(t, p)
	last := filepath.Join(dir, "last")
	if err := os.WriteFile(last, []byte("route add 2001:db8:13::/48 dev d0 metric 7\nroute add unreachable 2001:db8:14::/48\n"+
		"address add 2001:db8:2::1/64 dev d0\nlink set d1 up\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errs, st := p.run("-batch", last); st != 0 {
		t.Fatalf("the last record: %d %s%s", st, out, errs)
	}
	after := mustSave(t, p)
	p.stop()
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	ends := seals(data)
	if len(ends) != 4 || ends[3] != len(data) || !bytes.HasPrefix(data, []byte("# urouter state")) {
		t.Fatalf("the state file is not a snapshot and three changes:\n%s", data)
	}
	if before == after || !strings.Contains(before, "2001:db8:12::/48") || !strings.Contains(after, "2001:db8:14::/48") {
		t.Fatalf("save before the last record:\n%s\nafter:\n%s", before, after)
	}
	lastStart := ends[2]

	write := func(t *testing.T, b []byte) string {
		f := filepath.Join(t.TempDir(), "state")
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	for _, c := range []struct {
		name string
		file []byte
		want string // the state after the start
		kept []byte // the file once the daemon has started
	}{
		{"cut in the last record", data[:lastStart+(len(data)-lastStart)/2], before, data[:lastStart]},
		{"cut before the last seal's newline", data[:len(data)-1], before, data[:lastStart]},
		{"garbage after the last seal", cat(data, []byte("bogus garbage line\n")), after, data},
		{"a megabyte line", cat(data, bytes.Repeat([]byte("x"), 1<<20)), after, data},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := write(t, c.file)
			d := startDaemonFlags(t, ns, []string{"--state", f})
			if got := mustSave(t, d); got != c.want {
				t.Errorf("the state is not the records' before the torn one:\n%s", lineDiff(c.want, got))
			}
			if got, _ := os.ReadFile(f); !bytes.Equal(got, c.kept) {
				t.Errorf("the file was not cut back to its last seal: %d bytes, want %d", len(got), len(c.kept))
			}
			if out, errs, st := d.run("route", "add", "2001:db8:77::/48", "dev", "d0"); st != 0 {
				t.Fatalf("a change after: %d %s%s", st, out, errs)
			}
			killDaemon(t, d)
			if log := d.log.String(); !strings.Contains(log, "dropped a torn record") || !strings.Contains(log, f) {
				t.Errorf("the daemon did not log the torn record it dropped:\n%s", log)
			}
			d = startDaemonFlags(t, ns, []string{"--state", f})
			if got := mustSave(t, d); !strings.Contains(got, "route add 2001:db8:77::/48 dev d0") {
				t.Errorf("the change after the torn record is lost:\n%s", got)
			}
			d.stop()
			if log := d.log.String(); strings.Contains(log, "torn") || strings.Contains(log, "dropped") {
				t.Errorf("the second start found a torn record:\n%s", log)
			}
		})
	}

	// a snapshot stands for --config: the config is not applied again
	t.Run("a config beside a snapshot", func(t *testing.T) {
		f := write(t, data)
		d := startDaemonFlags(t, ns, []string{"--state", f}, "link add zz type dummy", "route add 2001:db8:99::/48 dev zz")
		if got := mustSave(t, d); got != after {
			t.Errorf("the state is not the file's:\n%s", lineDiff(after, got))
		}
		out, _, _ := d.run("status")
		d.stop()
		if !strings.Contains(out, ": not applied (the state file holds the configuration)") {
			t.Errorf("status does not say the config was not applied:\n%s", out)
		}
		if log := d.log.String(); !strings.Contains(log, "holds the whole configuration: config ") || !strings.Contains(log, " not applied") {
			t.Errorf("the daemon did not log that the config was not applied:\n%s", log)
		}
	})

	// files that are not state files: the start stops, names the line
	snapLine2 := bytes.IndexByte(data[len("# urouter state"):], '\n') + len("# urouter state") + 1
	snapLine2 += bytes.IndexByte(data[snapLine2:], '\n') + 1
	flip := append([]byte(nil), data...)
	flip[ends[0]+3] ^= 0x20 // in record 2: route add -> roUte add
	for _, c := range []struct {
		name string
		file []byte
		line int
		why  string
	}{
		{"an unknown command in the snapshot", cat(data[:snapLine2], []byte("frobnicate foo\n"), data[snapLine2:]), 1, "record 1 does not match its seal"},
		// written whole and renamed, a snapshot is never torn: alone too
		{"an unknown command in a snapshot alone", cat(data[:snapLine2], []byte("frobnicate foo\n"), data[snapLine2:ends[0]]), 1, "record 1 does not match its seal"},
		{"a change flipped before good ones", flip, lineAt(data, ends[0]), "record 2 does not match its seal (crc)"},
		{"a plain config with an unknown command", []byte("link add d0 type dummy\nlink set d0 up\nfrobnicate foo\nroute add 2001:db8:10::/48 dev d0\n"), 3, `Object "frobnicate" is unknown`},
		{"a plain config with a garbage line", []byte("link add d0 type dummy\nlink set d0 up\nroute add 2001:db8:10::/48 dev d0 bogus\n"), 3, "bogus"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := write(t, c.file)
			st, errs := startFails(t, ns, "--state", f)
			if st == 0 {
				t.Errorf("the daemon exited 0")
			}
			if want := fmt.Sprintf("state: %s:%d: ", f, c.line); !strings.Contains(errs, want) || !strings.Contains(errs, c.why) {
				t.Errorf("stderr does not say %q ... %q:\n%s", want, c.why, errs)
			}
			if got, _ := os.ReadFile(f); !bytes.Equal(got, c.file) {
				t.Errorf("the file was changed:\n%s", got)
			}
		})
	}

	// a plain config (a save, and links it adds without a MAC or deletes)
	// is applied, and becomes a state file that keeps what the router
	// chose: the MAC, the indexes after the deleted link's
	t.Run("a plain config", func(t *testing.T) {
		f := write(t, []byte(before+"link add d7 type dummy\nlink add d8 type dummy\nlink del d8\n"))
		d := startDaemonFlags(t, ns, []string{"--state", f})
		got := mustSave(t, d)
		d7 := regexp.MustCompile(`(?m)^link add d7 index 4 mtu 1500 address \S+ type dummy\n`)
		if line := d7.FindString(got); line == "" || strings.Replace(got, line, "", 1) != before {
			t.Errorf("the plain config's state, before and d7 at index 4:\n%s", lineDiff(before, got))
		}
		file, _ := os.ReadFile(f)
		if !bytes.HasPrefix(file, []byte("# urouter state")) || !bytes.Contains(file, []byte("\n#@urouter 1 snapshot ")) || len(seals(file)) != 1 {
			t.Errorf("the plain config was not made a state file of one snapshot:\n%s", file)
		}
		for _, c := range [][]string{{"route", "add", "2001:db8:77::/48", "dev", "d0"}, {"link", "add", "d5", "type", "dummy"}} {
			if out, errs, st := d.run(c...); st != 0 {
				t.Fatalf("a change after: %d %s%s", st, out, errs)
			}
		}
		want := mustSave(t, d)
		if !strings.Contains(want, "link add d5 index 6 ") { // after d8's 5
			t.Errorf("d5 is not at index 6:\n%s", want)
		}
		for range 2 { // the state file as converted, then as it loads
			killDaemon(t, d)
			d = startDaemonFlags(t, ns, []string{"--state", f})
			if got := mustSave(t, d); got != want {
				t.Errorf("after kill -9:\n%s", lineDiff(want, got))
			}
		}
	})
}

// TestStatus: status exits 0 and says "status ready" only when the router
// is: not while a line of its state file failed, nor while zebra has not
// connected to its FPM listener; -j status says the same.
func TestStatus(t *testing.T) {
	needRoot(t)
	ns := newNetns(t, "sts")
	type status struct {
		Ready   bool     `json:"ready"`
		Reasons []string `json:"reasons"`
		Links   struct {
			Up    int `json:"up"`
			SetUp int `json:"set_up"`
		} `json:"links"`
		FPM string `json:"fpm"`
	}
	jstatus := func(t *testing.T, d *daemon) (status, int) {
		t.Helper()
		out, errs, st := d.run("-j", "status")
		var s status
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("-j status: %v: %s%s", err, out, errs)
		}
		return s, st
	}

	d := startDaemonFlags(t, ns, nil, "link add d0 type dummy", "link set d0 up", "link add d1 type dummy")
	out, errs, st := d.run("status")
	if st != 0 || !strings.HasPrefix(out, "status ready\n") || !strings.Contains(out, "links 1 up of 1 set up") {
		t.Errorf("a plain daemon's status: %d %s%s", st, out, errs)
	}
	if s, st := jstatus(t, d); st != 0 || !s.Ready || len(s.Reasons) != 0 || s.Links.Up != 1 || s.Links.SetUp != 1 {
		t.Errorf("-j status: %d %+v", st, s)
	}
	d.stop()

	// a state file with a line the router refuses
	f := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(f, []byte("link add d0 type dummy\nlink add h9 type host dev nosuch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d = startDaemonFlags(t, ns, []string{"--state", f})
	out, errs, st = d.run("status")
	if st != 1 || !strings.HasPrefix(out, "status not ready\n") || !strings.Contains(out, "state "+f+": 1 of its lines failed") {
		t.Errorf("status with a state line failed: %d %s%s", st, out, errs)
	}
	if s, st := jstatus(t, d); st != 1 || s.Ready || len(s.Reasons) != 1 {
		t.Errorf("-j status: %d %+v", st, s)
	}
	d.stop()

	// FPM: not ready until zebra connects, and again once it has gone
	d = startDaemonFlags(t, ns, []string{"--fpm", "127.0.0.1:0"})
	out, errs, st = d.run("status")
	m := regexp.MustCompile(`fpm: zebra has not connected to 127\.0\.0\.1:(\d+)`).FindStringSubmatch(out)
	if st != 1 || !strings.HasPrefix(out, "status not ready\n") || m == nil {
		t.Fatalf("status before zebra connects: %d %s%s", st, out, errs)
	}
	if s, st := jstatus(t, d); st != 1 || s.Ready || len(s.Reasons) != 1 || !strings.Contains(s.Reasons[0], "fpm") {
		t.Errorf("-j status: %d %+v", st, s)
	}
	zebra := startIn(t, ns, "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/"+m[1]+" && exec sleep 60")
	waitUntil(t, "status ready once zebra connected", func() bool { _, _, st := d.run("status"); return st == 0 })
	out, _, _ = d.run("status")
	if !strings.HasPrefix(out, "status ready\n") || !strings.Contains(out, "fpm connected from 127.0.0.1:") {
		t.Errorf("status once zebra connected:\n%s", out)
	}
	if s, st := jstatus(t, d); st != 0 || !s.Ready || !strings.HasPrefix(s.FPM, "connected from") {
		t.Errorf("-j status: %d %+v", st, s)
	}
	zebra.stop()
	waitUntil(t, "status not ready once zebra went", func() bool { _, _, st := d.run("status"); return st == 1 })
}

// numbered is lines with their numbers, as a batch's errors name them.
func numbered(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%3d %s\n", i+1, l)
	}
	return b.String()
}
