package client

import (
	"strings"
	"testing"

	"urouter/control/wire"
)

// TestParseOptions: ip's global options, abbreviated as ip takes them,
// set the header's options and leave the command's words.
func TestParseOptions(t *testing.T) {
	o, sock, rest, st := parseOptions([]string{"-j", "-p", "-s", "-stat", "-d", "-6", "--socket", "/s", "-force", "route", "show"})
	want := wire.Options{JSON: true, Pretty: true, Stats: 2, Details: true, Inet6: true, Force: true}
	if st != -1 || o != want || sock != "/s" || len(rest) != 2 || rest[0] != "route" {
		t.Errorf("got %+v %q %q %d", o, sock, rest, st)
	}
	if o, _, _, st := parseOptions([]string{"-b", "f.batch"}); st != -1 || !o.Batch || o.BatchName != "f.batch" {
		t.Errorf("-b f.batch: %+v %d", o, st)
	}
	// ip's order of checks: -b is -batch, -br -brief, -o -oneline, -r
	// -resolve (no value), -rc -rcvbuf (a value)
	for _, c := range []struct {
		args []string
		want wire.Options
	}{
		{[]string{"-br", "link"}, wire.Options{Brief: true}},
		{[]string{"-brief", "link"}, wire.Options{Brief: true}},
		{[]string{"--brief", "-o", "link"}, wire.Options{Brief: true, Oneline: true}},
		{[]string{"-oneline", "link"}, wire.Options{Oneline: true}},
		{[]string{"-r", "link"}, wire.Options{}},
		{[]string{"-rc", "4096", "link"}, wire.Options{}},
	} {
		o, _, rest, st := parseOptions(c.args)
		if st != -1 || o != c.want || len(rest) != 1 || rest[0] != "link" {
			t.Errorf("%q: %+v %q %d, want %+v", c.args, o, rest, st, c.want)
		}
	}
	for _, bad := range [][]string{{"-4", "route"}, {"-nosuch"}, {"-batch"}, {"--socket"}} {
		if _, _, _, st := parseOptions(bad); st != 255 {
			t.Errorf("%q: status %d, want 255", bad, st)
		}
	}
}

// fakeWords knows route and help.
type fakeWords struct{}

func (fakeWords) Object(w string) string {
	for _, o := range []string{"route", "help"} {
		if w != "" && strings.HasPrefix(o, w) {
			return o
		}
	}
	return ""
}

func (fakeWords) Restores(obj, cmd string) bool { return false }

func (fakeWords) Help(obj string) (string, bool) {
	switch (fakeWords{}).Object(obj) {
	case "route":
		return "Usage: ip route", true
	case "help":
		return "Usage: urouter", true
	}
	return "", false
}

// TestHelp: the helps the client answers itself, and the lines it
// leaves to the daemon.
func TestHelp(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "Usage: urouter"},
		{[]string{"he", "route"}, "Usage: urouter"},
		{[]string{"route", "help"}, "Usage: ip route"},
		{[]string{"r", "help", "x"}, "Usage: ip route"},
		{[]string{"route", "show"}, ""},
		{[]string{"route", "he"}, ""}, // an abbreviation is the object's to read: the daemon's
		{[]string{"nosuch", "help"}, ""},
	} {
		if got, ok := help(fakeWords{}, c.args); got != c.want || ok != (c.want != "") {
			t.Errorf("%q: %q %v, want %q", c.args, got, ok, c.want)
		}
	}
	for _, args := range [][]string{{"-help"}, {"--help"}, {"-family", "help"}, {"-batch", "f", "-he"}} {
		if _, _, _, st := parseOptions(args); st != helpStatus {
			t.Errorf("%q: status %d, want the usage's", args, st)
		}
	}
}
