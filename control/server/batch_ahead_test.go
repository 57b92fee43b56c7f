package server

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"urouter/control/wire"
)

// TestAheadPauseOpen: a client that sends part of a long batch and waits,
// its connection open, has the lines it sent published within a few
// control.IdleCommits, and holds no table from other clients meanwhile.
func TestAheadPauseOpen(t *testing.T) {
	r := newTestRouter(t)
	sock := startServer(t, r)
	c := dial(t, sock, wire.Options{Batch: true, BatchName: "-"})
	const n = 20000 // well past a session's first 64 KiB, read before it reads ahead
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "route add 2001:db8:%x:%x::/64 dev d0 table 100\n", i>>8, i&0xff)
	}
	put(t, c, "%s", b.String())
	deadline := time.Now().Add(5 * time.Second)
	for {
		if tb := r.Tables.Get(100); tb != nil && tb.Len() == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a paused long batch's routes not published")
		}
		time.Sleep(time.Millisecond)
	}
	if _, e, st := client(sock, wire.Options{}, "route add 2001:db8:ffff::/48 dev d0 table 100\n"); st != 0 {
		t.Fatalf("another client's add: %q %d", e, st)
	}
}
