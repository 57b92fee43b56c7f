package wire

import (
	"bufio"
	"strings"
	"testing"
)

// TestHeaderRoundTrip: every option the client sets comes back whole from
// the header the daemon reads.
func TestHeaderRoundTrip(t *testing.T) {
	for _, o := range []Options{
		{},
		{JSON: true, Pretty: true, Details: true, Stats: 2},
		{Force: true, Batch: true, BatchName: "/tmp/a b.batch", Size: 123456},
		{Batch: true, Restore: true, Inet6: true, BatchName: "-"},
		{Batch: true, Apply: true, DryRun: true, All: true, BatchName: "r1.conf", Size: 42},
		{Brief: true, JSON: true},
		{Oneline: true, Stats: 1},
	} {
		got, err := ReadHeader(bufio.NewReader(strings.NewReader(o.Header() + "route show\n")))
		if o.BatchName == "" {
			o.BatchName = "-" // the header's word for none
		}
		if err != nil || got != o {
			t.Errorf("%+v came back as %+v (%v)", o, got, err)
		}
	}
	if _, err := ParseHeader("urouter/2 - -\n"); err != ErrBadHeader {
		t.Errorf("another version's header: %v", err)
	}
	long := Magic + " b " + strings.Repeat("x", MaxHeader) + "\n"
	if _, err := ReadHeader(bufio.NewReaderSize(strings.NewReader(long), 2*MaxHeader)); err != ErrLongHeader {
		t.Errorf("a header over MaxHeader: %v", err)
	}
}
