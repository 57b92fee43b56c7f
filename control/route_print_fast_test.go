package control

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"urouter/control/wire"
)

// expiresRE is a route's time left, which two shows may see a second apart.
var expiresRE = regexp.MustCompile(`expires \d+sec`)

// TestShowCache: a show prints with the cache what add prints route by
// route, for routes of every shape, with and without -d and filters,
// and after a nexthop object they share is replaced.
func TestShowCache(t *testing.T) {
	r := newTestRouter(t)
	lines := []string{
		"link add d1 type dummy", "link set d1 up",
		"nexthop add id 1 via 2001:db8:91::2 dev d0", "nexthop add id 2 via 2001:db8:91::3 dev d0",
		"nexthop add id 10 group 1/2", "-6 nexthop add id 11 blackhole",
	}
	for i := 0; i < 400; i++ {
		p := fmt.Sprintf("2001:db8:%x::/48", i+0x100)
		switch i % 10 {
		case 0:
			lines = append(lines, "route add "+p+" via 2001:db8:91::2 dev d0 table 100")
		case 1:
			lines = append(lines, "route add "+p+" dev d1 proto static metric 7 table 100")
		case 2:
			lines = append(lines, "route add "+p+" table 100 nexthop via 2001:db8:91::2 dev d0 nexthop via 2001:db8:91::3 dev d0 weight 3")
		case 3:
			lines = append(lines, "route add "+p+" nhid 10 table 100")
		case 4:
			lines = append(lines, "route add "+p+" nhid 1")
		case 5:
			lines = append(lines, "route add blackhole "+p+" table 100", "route add unreachable "+p+" metric 5 table 100")
		case 6:
			lines = append(lines, "route add "+p+" dev d0 mtu 1400 src 2001:db8:91::1 onlink table 100")
		case 7:
			lines = append(lines, "route add "+p+" from 2001:db8:ff::/48 dev d0 table 100", "route add "+fmt.Sprintf("2001:db8:%x::1", i)+" dev d0 table 100")
		case 8:
			lines = append(lines, "route add "+p+" nhid 11 table 100")
		case 9:
			lines = append(lines, "route add "+p+" via 2001:db8:91::3 dev d0 expires 300 table 100")
		}
	}
	if _, e, st := run(r, wire.Options{Batch: true}, lines...); st != 0 {
		t.Fatalf("setup: %s", e)
	}
	shows := []string{"route show table all", "route show table 100", "route show table 100 dev d0",
		"route show table 100 via 2001:db8:91::2", "route show table 100 proto static", "route show table all metric 1024",
		"route show root 2001:db8:100::/40 table 100", "route show table 100 type blackhole"}
	check := func() {
		t.Helper()
		for _, cmd := range shows {
			for _, o := range []wire.Options{{}, {Details: true}, {Stats: 1}} {
				// the two shows may fall in two seconds: a route that
				// expires (never cached) may say one second less
				want, _, _ := runIn(&Session{r: r, opt: o, printUncached: true}, cmd)
				got, _, _ := run(r, o, cmd)
				want, got = expiresRE.ReplaceAllString(want, "expires Nsec"), expiresRE.ReplaceAllString(got, "expires Nsec")
				if got != want {
					t.Fatalf("%s %+v: with the cache\n%s\nwithout\n%s", cmd, o, got, want)
				}
				if strings.Count(want, "\n") < 5 {
					t.Fatalf("%s: %q", cmd, want)
				}
			}
		}
	}
	check()
	if _, e, st := run(r, wire.Options{}, "nexthop replace id 1 via 2001:db8:91::4 dev d0"); st != 0 {
		t.Fatal(e)
	}
	check()
}
