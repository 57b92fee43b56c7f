package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
	"urouter/control/wire"
)

// TestFlushBigTableMonitor: `route flush table 100` of 100,000 routes
// (one publish of an empty table) shows a monitor every deleted route, a
// `Deleted ...` line each as ip monitor prints Linux's; the table is
// empty after it (show, its size), and the same batch loads again.
func TestFlushBigTableMonitor(t *testing.T) {
	const n = 100_000
	r := newTestRouter(t)
	sock := startServer(t, r)
	var batch strings.Builder
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		p := netip.MustParsePrefix(fmt.Sprintf("2001:db8:%x:%x::/64", 0x100+i/1000, i%1000)).String()
		via := "via 2001:db8:91::2 dev d0"
		if i%3 == 0 {
			via = "dev d0"
		}
		fmt.Fprintf(&batch, "route add %s %s table 100\n", p, via)
		want[fmt.Sprintf("Deleted %s %s table 100 metric 1024 pref medium", p, via)] = true
	}
	load := func() {
		if _, e, st := client(sock, wire.Options{Batch: true, BatchName: "-"}, batch.String()); st != 0 {
			t.Fatalf("load: %d %s", st, e)
		}
	}
	load()
	mon := dial(t, sock, wire.Options{})
	put(t, mon, "monitor route\n")
	subscribed(t, sock, 1)
	start := time.Now()
	if out, e, st := client(sock, wire.Options{Stats: 1}, "route flush table 100\n"); st != 0 || !strings.Contains(out, fmt.Sprintf("deleting %d entries", n)) {
		t.Fatalf("flush: %d %q %q", st, out, e)
	}
	took := time.Since(start)
	if tab := r.Tables.Get(100); tab.Len() != 0 {
		t.Fatalf("%d routes after the flush", tab.Len())
	}
	if out, _, _ := client(sock, wire.Options{}, "route show table 100\n"); out != "" {
		t.Fatalf("show after the flush: %.200q", out)
	}
	// the monitor hears every route, once, and nothing else
	lines := monitorLines(t, mon, n)
	for _, l := range lines {
		if !want[l] {
			t.Fatalf("monitor printed %q (not a route deleted, or twice)", l)
		}
		delete(want, l)
	}
	if len(want) != 0 {
		t.Fatalf("%d deleted routes not shown", len(want))
	}
	t.Logf("flush of %d routes: %v", n, took)
	load()
	out, _, _ := client(sock, wire.Options{}, "route show table 100\n")
	if got := strings.Count(out, "\n"); got != n || r.Tables.Get(100).Len() != n {
		t.Fatalf("after the reload: %d lines, %d routes", got, r.Tables.Get(100).Len())
	}
}

// monitorLines reads n lines a monitor prints (its 'o' frames).
func monitorLines(t *testing.T, c net.Conn, n int) []string {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReader(c)
		for {
			var hdr [5]byte
			if err := c.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
				_ = pw.CloseWithError(err)
				return
			}
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				_ = pw.CloseWithError(err)
				return
			}
			m := int(hdr[1])<<24 | int(hdr[2])<<16 | int(hdr[3])<<8 | int(hdr[4])
			if _, err := io.CopyN(pw, br, int64(m)); err != nil {
				_ = pw.CloseWithError(err)
				return
			}
		}
	}()
	sc := bufio.NewScanner(pr)
	var lines []string
	for len(lines) < n && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < n {
		t.Fatalf("the monitor printed %d lines, want %d: %v", len(lines), n, sc.Err())
	}
	_ = c.Close() // done: the reader ends with it
	return lines
}
