package control

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"urouter/control/wire"
	"urouter/internal/racebuild"
	"urouter/internal/realtable"
	"urouter/internal/textdiff"
	"urouter/router"
)

// TestSaveLoads: what save writes loads into a new router, which saves the
// same, for what makes an order matter: a gateway whose route sorts after
// the route through it, one that only a rule's table reaches while a rule
// would send the lookup elsewhere, links whose names begin alike, a
// router-chosen index after a deleted link.
func TestSaveLoads(t *testing.T) {
	r := router.New()
	if _, e, st := run(r, wire.Options{Batch: true},
		"link add gone type dummy", "link add d0 type dummy", "link del gone",
		"link add eth0 type dummy", "link add eth0.100 type dummy",
		"sysctl -w net.ipv6.conf.eth0.hop_limit=9 net.ipv6.conf.eth0.100.hop_limit=7",
		"link set d0 up", "address add 2001:db8:91::1/64 dev d0",
		// table 100: a default route through a gateway of a route after it
		"route add 2001:db8:77::/64 dev d0 table 100",
		"route add default via 2001:db8:77::1 dev d0 table 100",
		// table 50: a gateway only table 60 reaches, through a rule
		"route add 2001:db8:5::/64 dev d0 table 60",
		"rule add pref 100 to 2001:db8:5::/64 lookup 60",
		"route add 2001:db8:6::/64 via 2001:db8:5::9 dev d0 table 50",
		// and a rule that would send every lookup to table 100 first
		"route add 2001:db8:8::/64 via 2001:db8:91::2 dev d0 table 200",
		"rule add pref 50 from all lookup 100",
		"nexthop add id 1 via 2001:db8:91::3 dev d0",
		"route add 2001:db8:9::/64 nhid 1",
	); st != 0 {
		t.Fatal(e)
	}
	saved, e, st := run(r, wire.Options{}, "save")
	if st != 0 {
		t.Fatal(e)
	}
	if !strings.HasPrefix(saved, saveHeader) {
		t.Errorf("the save does not begin with its header:\n%s", saved)
	}
	conf := filepath.Join(t.TempDir(), "saved.conf")
	if err := os.WriteFile(conf, []byte(saved), 0o644); err != nil {
		t.Fatal(err)
	}
	r2 := router.New()
	if _, err := applyConfig(r2, conf); err != nil { // as --config
		t.Fatalf("the save does not load: %v\n%s", err, saved)
	}
	again, _, _ := run(r2, wire.Options{}, "save")
	if again != saved {
		t.Errorf("a new router saves another configuration:\n%s", textdiff.Lines(saved, again))
	}
	for _, show := range []string{"link show", "-6 route show table all", "rule show", "sysctl -a"} {
		a, _, _ := run(r, wire.Options{}, show)
		b, _, _ := run(r2, wire.Options{}, show)
		if a != b {
			t.Errorf("%s differs:\n%s", show, textdiff.Lines(a, b))
		}
	}
}

// TestSaveChecked: a config without save's header is checked as any other:
// a gateway no route reaches is refused.
func TestSaveChecked(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "urouter.conf")
	for _, c := range []struct {
		head string
		ok   bool
	}{{"", false}, {saveHeader, true}} {
		text := c.head + "link add d0 type dummy\nlink set d0 up\nroute add 2001:db8:6::/64 via 2001:db8:5::9 dev d0\n"
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := applyConfig(router.New(), conf)
		if (err == nil) != c.ok {
			t.Errorf("header %q: %v", c.head, err)
		}
	}
}

// TestSaveRestore: `route save` of the full real table (every tenth
// prefix under the race detector: one goroutine, nothing for it to see),
// replayed into a fresh router, gives back the same table, text and JSON.
func TestSaveRestore(t *testing.T) {
	every := racebuild.Sized(1, 10)
	var lines []string
	adds := 0
	for i, p := range realtable.MustLoad(t) {
		if i%every != 0 {
			continue
		}
		adds++
		// a mix of what routes say, so that the round trip covers them
		switch i / every % 7 {
		case 0:
			lines = append(lines, fmt.Sprintf("route add %s via 2001:db8:91::2 dev d0 table 100", p))
		case 1:
			lines = append(lines, fmt.Sprintf("route add %s dev d0 table 100 metric 10 proto static mtu 1400", p))
		case 2:
			lines = append(lines, fmt.Sprintf("route add unreachable %s table 100", p))
		case 3:
			lines = append(lines, fmt.Sprintf("route add %s via fe80::1 dev d0 table 100", p),
				fmt.Sprintf("route append %s via fe80::2 dev d0 table 100", p))
		case 4:
			lines = append(lines, fmt.Sprintf("route add %s from 2001:db8:aa::/48 dev d0 table 100 onlink via 2001:db8:99::1", p))
		case 5:
			lines = append(lines, fmt.Sprintf("route add %s dev d0 table 100 metric 5", p),
				fmt.Sprintf("route add %s dev d0 table 100 metric 7 proto 186", p))
			adds++
		default:
			lines = append(lines, fmt.Sprintf("route add blackhole %s table 100", p))
		}
	}
	a := newTestRouter(t)
	if _, e, st := run(a, wire.Options{Batch: true}, lines...); st != 0 {
		t.Fatal(e)
	}
	saved, _, st := run(a, wire.Options{}, "route save table 100")
	if st != 0 {
		t.Fatal("save failed")
	}
	b := newTestRouter(t)
	if _, e, st := run(b, wire.Options{Batch: true}, strings.Split(strings.TrimSuffix(saved, "\n"), "\n")...); st != 0 {
		t.Fatalf("restore: %s", e)
	}
	for _, o := range []wire.Options{{}, {JSON: true}} {
		wa, _, _ := run(a, o, "route show table 100")
		wb, _, _ := run(b, o, "route show table 100")
		if wa != wb {
			t.Fatalf("restored table differs (json %v)", o.JSON)
		}
		if n := strings.Count(wa, "\n"); !o.JSON && n < adds {
			t.Fatalf("only %d lines for %d routes added", n, adds)
		}
	}
}
