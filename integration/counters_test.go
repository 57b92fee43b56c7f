package integration

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLinkCountersHonest: what `link show -s` counts on an Ethernet link
// is what Linux's counters would: the interface going down and up again
// (the socket told ENETDOWN each time) is no receive error, and the
// frames the socket's queue dropped show as missed.
func TestLinkCountersHonest(t *testing.T) {
	parallel(t)
	needRoot(t)
	r, h := newNetns(t, "uro-cr"), newNetns(t, "uro-ch")
	mustRun(t, "ip", "-n", r, "link", "add", "r1", "type", "veth", "peer", "name", "eth0", "netns", h)
	mustRun(t, "ip", "-n", h, "link", "set", "eth0", "up")
	mustRun(t, "ip", "-n", h, "addr", "add", "2001:db8:c::2/64", "dev", "eth0", "nodad")
	d := startDaemon(t, r, "link add lan1 type host dev r1", "link set lan1 up", "address add 2001:db8:c::1/64 dev lan1")
	for range 3 {
		mustRun(t, "ip", "-n", r, "link", "set", "r1", "down")
		mustRun(t, "ip", "-n", r, "link", "set", "r1", "up")
	}
	waitUntil(t, "the router answering ping", func() bool {
		_, _, st := runCmd("ip", "netns", "exec", h, "ping", "-6", "-c", "1", "-W", "1", "2001:db8:c::1")
		return st == 0
	})
	out, e, st := d.run("-s", "-j", "link", "show", "lan1")
	var ls []struct {
		Stats struct {
			RX struct {
				Errors    uint64  `json:"errors"`
				Packets   uint64  `json:"packets"`
				Multicast *uint64 `json:"multicast"`
				Over      *uint64 `json:"over_errors"`
			} `json:"rx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(out), &ls); st != 0 || err != nil || len(ls) != 1 {
		t.Fatalf("link show -s -j: %v %s%s", err, out, e)
	}
	rx := ls[0].Stats.RX
	if rx.Errors != 0 || rx.Packets == 0 {
		t.Errorf("rx errors %d (the interface went down 3 times), packets %d", rx.Errors, rx.Packets)
	}
	if rx.Multicast == nil || rx.Over == nil {
		t.Errorf("rx has no multicast or over_errors, as ip -s -j prints them: %s", out)
	}
	text, _, _ := d.run("-s", "link", "show", "lan1")
	if !strings.Contains(text, "RX:  bytes packets errors dropped  missed   mcast") {
		t.Errorf("link show -s:\n%s", text)
	}
}
