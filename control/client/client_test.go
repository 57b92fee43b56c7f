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
	for _, bad := range [][]string{{"-4", "route"}, {"-nosuch"}, {"-batch"}, {"--socket"}} {
		if _, _, _, st := parseOptions(bad); st != 255 {
			t.Errorf("%q: status %d, want 255", bad, st)
		}
	}
}
