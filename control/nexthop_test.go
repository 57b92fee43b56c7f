package control

import (
	"regexp"
	"testing"
	"urouter/control/wire"
)

// TestNexthopBuckets: bucket show lists a resilient group's buckets as ip
// does (index, idle time in seconds, member), filtered by member; a group
// that is not resilient is an error; flush says what it flushed.
func TestNexthopBuckets(t *testing.T) {
	r := newTestRouter(t)
	if _, e, st := run(r, wire.Options{Batch: true},
		"nexthop add id 1 via 2001:db8:91::2 dev d0",
		"nexthop add id 2 via 2001:db8:91::3 dev d0",
		"nexthop add id 10 group 1/2",
		"nexthop add id 12 group 1/2 type resilient buckets 4"); st != 0 {
		t.Fatal(e)
	}
	out, _, _ := run(r, wire.Options{}, "nexthop bucket show id 12")
	want := `^id 12 index 0 idle_time [0-9.]+ nhid 2 \nid 12 index 1 idle_time [0-9.]+ nhid 2 \n` +
		`id 12 index 2 idle_time [0-9.]+ nhid 1 \nid 12 index 3 idle_time [0-9.]+ nhid 1 \n$`
	if !regexp.MustCompile(want).MatchString(out) {
		t.Errorf("bucket show:\n%s", out)
	}
	if out, _, _ := run(r, wire.Options{JSON: true}, "nexthop bucket show nhid 1"); !regexp.MustCompile(
		`^\[\{"id":12,"bucket":\{"index":2,"idle_time":[0-9.]+,"nhid":1\},"flags":\[\]\},\{"id":12,"bucket":\{"index":3,`).MatchString(out) {
		t.Errorf("bucket show nhid 1 -j:\n%s", out)
	}
	if _, e, st := run(r, wire.Options{}, "nexthop bucket show id 10"); st != 2 || e != "Error: Nexthop group not of type resilient.\nDump terminated\n" {
		t.Errorf("bucket show of an mpath group: %d %q", st, e)
	}
	if out, _, _ := run(r, wire.Options{}, "nexthop flush groups"); out != "Flushed 2 nexthops\n" {
		t.Errorf("flush groups: %q", out)
	}
	if out, _, _ := run(r, wire.Options{}, "nexthop flush", "nexthop flush"); out != "Flushed 2 nexthops\nNothing to flush\n" {
		t.Errorf("flush: %q", out)
	}
}
