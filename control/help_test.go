package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"urouter/control/wire"
	"urouter/router"
)

// TestHelp: Words.Help, which the client prints with no daemon to ask,
// is what a session prints for `OBJECT help`, byte for byte and with its
// status, for every object word (and for none where the session prints
// no usage); every object the router serves has one.
func TestHelp(t *testing.T) {
	r := router.New()
	served := map[string]bool{}
	for _, o := range append(objects, "nh") {
		out, errs, st := run(r, wire.Options{}, o+" help")
		text, ok := Words{}.Help(o)
		if !ok {
			if strings.HasPrefix(errs, "Usage") {
				t.Errorf("%s help: the session prints a usage, Words.Help has none:\n%s", o, errs)
			}
			continue
		}
		served[Words{}.Object(o)] = true
		if out != "" || errs != text+"\n" || st != 255 || !strings.HasPrefix(text, "Usage") {
			t.Errorf("%s help: the session printed %q %q %d, Words.Help %q", o, out, errs, st, text)
		}
	}
	for _, o := range []string{"route", "link", "address", "nexthop", "rule", "neighbour", "ntable", "vrf", "sr",
		"ra", "fpm", "mirror", "sysctl", "save", "status", "monitor", "capture", "trace", "help"} {
		if !served[o] {
			t.Errorf("%s has no help", o)
		}
	}
	if text, ok := (Words{}).Help("n"); !ok || !strings.HasPrefix(text, "Usage: ip neigh") {
		t.Errorf("an abbreviation's help: %q %v", text, ok)
	}
}

// TestUsageLists: urouter's usage names every object the router serves
// and every page of docs/.
func TestUsageLists(t *testing.T) {
	for _, o := range []string{"address", "capture", "fpm", "help", "link", "mirror", "monitor", "neighbour", "nexthop",
		"ntable", "ra", "route", "rule", "save", "sr", "status", "sysctl", "trace", "vrf"} {
		if !strings.Contains(usage, " "+o+" |") && !strings.Contains(usage, "| "+o+" ") {
			t.Errorf("the usage's OBJECT lacks %s", o)
		}
	}
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs: %v", err)
	}
	for _, p := range pages {
		if !strings.Contains(usage, " "+filepath.Base(p)) && !strings.Contains(usage, "\n"+filepath.Base(p)) {
			t.Errorf("the usage does not list docs/%s", filepath.Base(p))
		}
	}
	if _, err := os.Stat("../docs/route.md"); err != nil {
		t.Error(err)
	}
}

// TestOwnObjectsWords: urouter's own objects (ra, fpm, mirror, capture,
// trace, sysctl, save, status) name urouter's help, never ip's.
func TestOwnObjectsWords(t *testing.T) {
	r := router.New()
	if _, e, st := run(r, wire.Options{}, "link add d0 type dummy"); st != 0 {
		t.Fatal(e)
	}
	cases := []struct{ cmd, stderr string }{
		{"ra foo", "Command \"foo\" is unknown, try \"urouter ra help\".\n"},
		{"ra prefix", "Usage: urouter ra prefix { add | del } PREFIX dev DEV [ valid S ] [ preferred S ] [ no-onlink ] [ no-autonomous ]\n"},
		{"save foo", "Garbage instead of arguments \"foo ...\". Try \"urouter save help\".\n"},
		{"status foo", "Usage: urouter status [ show ]\n"},
		{"fpm foo", "Usage: urouter fpm show\n"},
		{"mirror foo", "Usage: urouter mirror show\n"},
		{"trace foo", "Command \"foo\" is unknown, try \"urouter trace help\".\n"},
		{"sysctl --help", sysctlUsage().msg + "\n"},
		{"sysctl -q -h", sysctlUsage().msg + "\n"},
	}
	for _, c := range cases {
		_, errs, _ := run(r, wire.Options{}, c.cmd)
		if errs != c.stderr {
			t.Errorf("%s:\n got %q\nwant %q", c.cmd, errs, c.stderr)
		}
	}
	for _, o := range []string{"ra", "fpm", "mirror", "capture", "trace", "sysctl", "save", "status"} {
		text, _ := Words{}.Help(o)
		if strings.Contains(text, "ip ") || !strings.HasPrefix(text, "Usage: urouter "+o) {
			t.Errorf("%s help names ip's, or not urouter's:\n%s", o, text)
		}
	}
}
