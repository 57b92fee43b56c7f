package integration

import (
	"encoding/binary"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// fpmBlackhole is an FPM frame of one RTM_NEWROUTE, as zebra sends it:
// blackhole dst proto bgp metric 20.
func fpmBlackhole(dst string) []byte {
	req := nl.NewNetlinkRequest(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE)
	m := nl.NewRtMsg()
	m.Family, m.Dst_len, m.Protocol, m.Type, m.Table = unix.AF_INET6, 48, unix.RTPROT_BGP, unix.RTN_BLACKHOLE, unix.RT_TABLE_MAIN
	req.AddData(m)
	req.AddData(nl.NewRtAttr(unix.RTA_DST, net.ParseIP(dst)))
	req.AddData(nl.NewRtAttr(unix.RTA_PRIORITY, nl.Uint32Attr(20)))
	b := req.Serialize()
	h := []byte{1, 1, 0, 0} // version 1, netlink, the length with the header
	binary.BigEndian.PutUint16(h[2:], uint16(len(b)+len(h)))
	return append(h, b...)
}

// TestFPMChurn: a peer that connects to the FPM port and goes again as
// fast as it can for 5 s, half its connections saying a route first,
// costs the daemon a few log lines (not one or two a connection) and
// few threads (not one a connection in flight); zebra's connection then
// still installs what it says.
func TestFPMChurn(t *testing.T) {
	measures(t)
	needRoot(t)
	d := startDaemonFlags(t, "", []string{"--fpm", "127.0.0.1:0"})
	out, _, _ := d.run("status")
	m := regexp.MustCompile(`fpm: zebra has not connected to (127\.0\.0\.1:\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("status: %s", out)
	}
	addr, pid := m[1], d.cmd.Process.Pid
	base := int(threads(pid))
	logBefore := strings.Count(d.log.String(), "\n")

	var conns atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(5 * time.Second)
	for w := range 8 {
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					continue // the backlog is full: the daemon is slower than the churn
				}
				if i%2 == 0 {
					_, _ = c.Write(fpmBlackhole("2001:db8:" + strconv.Itoa(1000+w) + "::")) // a write the daemon may cut short
				}
				_ = c.Close() // the test's own socket
				conns.Add(1)
			}
		})
	}
	peak := base
	for time.Now().Before(end) {
		peak = max(peak, int(threads(pid)))
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	after := int(threads(pid))
	lines := strings.Count(d.log.String(), "\n") - logBefore
	t.Logf("%d connections in 5 s: threads %d before, peak %d, %d after; %d log lines", conns.Load(), base, peak, after, lines)
	if conns.Load() < 1000 {
		t.Fatalf("only %d connections: the churn measures nothing", conns.Load())
	}
	if lines > 10 {
		t.Errorf("%d log lines for %d connections; the last:\n%s", lines, conns.Load(), tail(d.log.String(), 5))
	}
	if peak > base+8 || after > base+8 {
		t.Errorf("threads %d before, peak %d, %d after the churn", base, peak, after)
	}

	// zebra connects, and what it says is installed
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }() // zebra's, closed at the end
	if _, err := c.Write(fpmBlackhole("2001:db8:99::")); err != nil {
		t.Fatal(err)
	}
	want := "blackhole 2001:db8:99::/48 dev lo proto bgp metric 20"
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		o, _, _ := d.run("route", "show", "2001:db8:99::/48")
		if strings.Contains(o, want) {
			break
		}
		if time.Now().After(deadline) {
			f, _, _ := d.run("fpm", "show")
			t.Fatalf("zebra's route after the churn: route show says %q, not %q; fpm show:\n%s", o, want, f)
		}
	}
}
