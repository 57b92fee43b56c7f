package client

import (
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
