package control

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"urouter/control/wire"
	"urouter/internal/racebuild"
	"urouter/internal/textdiff"
	"urouter/router"
)

// applyOn runs `apply` of config on r (dry: --dry-run).
func applyOn(r *router.Router, config string, dry bool) (stdout, stderr string, status int) {
	config = strings.TrimSuffix(config, "\n")
	o := wire.Options{Apply: true, DryRun: dry, BatchName: "b.conf", Size: int64(len(config) + 1)}
	return runIn(&Session{r: r, opt: o}, config)
}

// paperWith is a router on paper with config's lines.
func paperWith(t *testing.T, config []string) *router.Router {
	t.Helper()
	r := router.NewPaper()
	t.Cleanup(r.Discard)
	if _, e, st := run(r, wire.Options{Batch: true}, config...); st != 0 {
		t.Fatalf("%s\n%s", e, strings.Join(config, "\n"))
	}
	return r
}

// TestApplyRandomPairs: a router with a random configuration A given
// another, B, by apply saves what a router started with B saves; the
// commands --dry-run prints are those apply runs, and B again runs
// none. Routers on paper stand for both (their links touch no kernel).
func TestApplyRandomPairs(t *testing.T) {
	for i := range racebuild.Sized(60, 12) {
		seed := uint64(i)
		a, b := randomConfig(rand.New(rand.NewPCG(seed, 1))), randomConfig(rand.New(rand.NewPCG(seed, 2)))
		want, _, _ := run(paperWith(t, b), wire.Options{}, "save")
		live := paperWith(t, a)
		dry, e, st := applyOn(live, want, true)
		if st != 0 {
			t.Fatalf("seed %d: --dry-run: %s\nA:\n%s\nB:\n%s", seed, e, strings.Join(a, "\n"), want)
		}
		ran, e, st := applyOn(live, want, false)
		if st != 0 || ran != dry {
			t.Fatalf("seed %d: apply: %d %s\nran:\n%s\n--dry-run said:\n%s", seed, st, e, ran, dry)
		}
		if got, _, _ := run(live, wire.Options{}, "save"); got != want {
			t.Fatalf("seed %d: A given B saves otherwise than B:\n%s\nit ran:\n%s", seed, textdiff.Lines(want, got), ran)
		}
		if again, e, st := applyOn(live, want, false); st != 0 || again != "" {
			t.Fatalf("seed %d: B again: %d %s\n%s", seed, st, e, again)
		}
	}
}

// randomConfig is a configuration of dummy, TUN, TAP, VLAN and VRF
// links, their knobs and addresses, RA, nexthops and groups, routes of
// every type in three tables, rules and neighbours, each maybe.
func randomConfig(r *rand.Rand) []string {
	var c []string
	add := func(f string, a ...any) { c = append(c, fmt.Sprintf(f, a...)) }
	maybe := func() bool { return r.IntN(2) == 0 }
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	if maybe() {
		add("sysctl -w net.ipv6.fib_multipath_hash_policy=%s", pick("1", "3"))
	}
	add("link add d0%s type dummy", pick("", " index 10", " index 12"))
	add("link add t0 type tun%s", pick("", " mtu 1400", " queues 2"))
	add("link add p0%s type tap", pick("", " address 02:00:00:00:50:01", " address 02:00:00:00:50:02"))
	if maybe() {
		add("link add link p0 name p0.%d type vlan id %d", 5+r.IntN(2), 5+r.IntN(2))
	}
	if maybe() {
		add("link add red type vrf table 300")
		add("link add d2 type dummy")
		add("link set d2 master red")
	}
	add("link set d0 up") // its gateways are the routes'
	for _, l := range []string{"t0", "p0"} {
		if r.IntN(4) > 0 {
			add("link set %s up", l)
		}
	}
	if maybe() {
		add("sysctl -w net.ipv6.conf.%s.hop_limit=%d", pick("d0", "t0", "p0"), 20+r.IntN(3))
	}
	add("address add 2001:db8:d0::1/64 dev d0%s", pick("", " metric 50", " metric 60"))
	add("address add 2001:db8:50::1/64 dev p0")
	if maybe() {
		add("address add 2001:db8:70::1/64 dev t0")
	}
	if maybe() {
		add("ra set dev p0 %s on", pick("max-interval 30 min-interval 10", "preference high", "managed on"))
		add("ra prefix add 2001:db8:50::/64 dev p0%s", pick("", " no-autonomous"))
	}
	add("nexthop add id 1 via 2001:db8:d0::%d dev d0", 2+r.IntN(2))
	add("nexthop add id 2 via 2001:db8:d0::4 dev d0")
	if maybe() {
		add("nexthop add id 3 blackhole")
	}
	add("nexthop add id 20 group 1%s/2", pick("", ",2", ",3"))
	if maybe() {
		add("nexthop add id 21 group 1/2 type resilient buckets %s", pick("8", "16"))
	}
	for _, table := range []string{"", " table 100", " table 200"} {
		for p := range 6 {
			if r.IntN(3) == 0 {
				continue
			}
			dst := fmt.Sprintf("2001:db8:%x::/48", 0x8000+p)
			switch r.IntN(6) {
			case 0:
				add("route add %s via 2001:db8:d0::%d dev d0%s", dst, 2+r.IntN(3), table)
			case 1:
				add("route add %s dev d0%s metric %d", dst, table, 100+r.IntN(2))
			case 2:
				add("route add %s %s%s", pick("blackhole", "unreachable", "prohibit"), dst, table)
			case 3:
				add("route add %s nhid 20%s", dst, table)
			case 4:
				add("route add %s%s nexthop via 2001:db8:d0::2 dev d0 weight %d nexthop via 2001:db8:d0::3 dev d0", dst, table, 1+r.IntN(2))
			case 5:
				add("route add %s via 2001:db8:d0::2 dev d0%s mtu %d", dst, table, 1300+r.IntN(2))
			}
		}
	}
	if maybe() {
		add("rule add pref 100 from 2001:db8:%x::/48 table 100", r.IntN(2))
	}
	if maybe() {
		add("rule add pref 110 to 2001:db8:9::/48 table 200")
	}
	if maybe() {
		add("rule del pref 32766")
	}
	if maybe() {
		add("neigh add 2001:db8:50::5 lladdr 02:00:00:00:00:%s dev p0 nud permanent", pick("55", "56"))
	}
	return c
}

// TestApplyInPlace: what changes in place changes so (a route's gateway
// by route replace: it is never missing); what a hand-written config
// leaves to the router (a link's index, a random MAC) is kept; a line
// that does not load changes nothing and is named.
func TestApplyInPlace(t *testing.T) {
	base := []string{"link add gone type dummy", "link add d0 type dummy", "link del gone", "link add p0 type tap",
		"link set d0 up", "address add 2001:db8:d0::1/64 dev d0"}
	live := paperWith(t, append(base, "route add 2001:db8:1::/48 via 2001:db8:d0::2 dev d0", "route add 2001:db8:2::/48 dev d0"))
	before, _, _ := run(live, wire.Options{}, "save")
	b := strings.Join(append(base, "route add 2001:db8:1::/48 via 2001:db8:d0::3 dev d0", "route add 2001:db8:2::/48 dev d0"), "\n")
	out, e, st := applyOn(live, b, false)
	want := "route replace 2001:db8:1::/48 via 2001:db8:d0::3 dev d0 table main proto boot metric 1024\n"
	if st != 0 || out != want {
		t.Errorf("a gateway changed: %d %s\nran:\n%s\nwant:\n%s", st, e, out, want)
	}
	after, _, _ := run(live, wire.Options{}, "save")
	if strings.Replace(before, "via 2001:db8:d0::2", "via 2001:db8:d0::3", 1) != after {
		t.Errorf("indexes or MACs the config left to the router changed:\n%s", textdiff.Lines(before, after))
	}
	for _, bad := range []struct{ config, says string }{
		{b + "\nroute add bogus", "Command failed b.conf:9"},
		{b + "\nroute add 2001:db8:3::/48 via 2001:db8:99::1 dev d0", "Command failed b.conf:9"},
		{"link add t9 type tun\nnonsense", "Command failed b.conf:2"},
	} {
		out, e, st := applyOn(live, bad.config, false)
		if st == 0 || out != "" || !strings.Contains(e, bad.says) || !strings.Contains(e, "nothing changed") {
			t.Errorf("apply of\n%s\n: %d %q %q, want %q", bad.config, st, out, e, bad.says)
		}
		if now, _, _ := run(live, wire.Options{}, "save"); now != after {
			t.Errorf("a config that failed changed the router:\n%s", textdiff.Lines(after, now))
		}
	}
	// a client gone mid-send: what came reads as a whole config (here,
	// an empty one, which would delete everything), but is less than the
	// size it said
	cut := &Session{r: live, opt: wire.Options{Apply: true, BatchName: "b.conf", Size: int64(len(b) + 1)}}
	if out, e, st := runIn(cut, ""); st == 0 || out != "" || !strings.Contains(e, "cut short") {
		t.Errorf("a config cut short: %d %q %q", st, out, e)
	}
	if now, _, _ := run(live, wire.Options{}, "save"); now != after {
		t.Errorf("a config cut short changed the router:\n%s", textdiff.Lines(after, now))
	}
}

// TestApplyStress: four clients apply A and B in turn to one router
// while another reads it (run it with -race): the applies take turns,
// each ends with A or B whole, and so does the router.
func TestApplyStress(t *testing.T) {
	a, b := randomConfig(rand.New(rand.NewPCG(7, 1))), randomConfig(rand.New(rand.NewPCG(7, 2)))
	var saves [2]string
	for i, c := range [][]string{a, b} {
		saves[i], _, _ = run(paperWith(t, c), wire.Options{}, "save")
	}
	live := paperWith(t, a)
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				_, _, _ = run(live, wire.Options{}, "route", "show", "table", "all")
			}
		}
	}()
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range racebuild.Sized(20, 5) {
				cfg := saves[(c+i)%2]
				o := wire.Options{Apply: true, BatchName: "x.conf", Size: int64(len(cfg))}
				s := &Session{r: live, opt: o, applying: &mu}
				if _, e, st := runIn(s, strings.TrimSuffix(cfg, "\n")); st != 0 {
					t.Errorf("client %d apply %d: %s", c, i, e)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if got, _, _ := run(live, wire.Options{}, "save"); got != saves[0] && got != saves[1] {
		t.Errorf("after the applies the router is neither A nor B:\n%s", textdiff.Lines(saves[1], got))
	}
}
