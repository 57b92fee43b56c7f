package integration

import (
	"encoding/json"
	"testing"
	"time"
	"urouter/internal/realtable"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// BenchmarkBGPFullTable: one BGP peer announces the real table's 160,147
// IPv6 prefixes to bgpd; zebra programs the kernel of urouter's netns and,
// over FPM, urouter. It reports when each plane had the whole table,
// from BIRD's start: the kernel's time from its route notifications,
// urouter's from `fpm show`. One iteration is one load (minutes of set-up).
func BenchmarkBGPFullTable(b *testing.B) {
	ps := realPrefixes(b)
	for i := 0; i < b.N; i++ {
		l := newFRRLab(b, 0, false, ps, []string{})
		seen := map[string]bool{}
		var kernelDone time.Duration
		ch, done := make(chan netlink.RouteUpdate, 1<<16), make(chan struct{})
		h, err := netns.GetFromName(l.r)
		if err != nil {
			b.Fatal(err)
		}
		if err := netlink.RouteSubscribeWithOptions(ch, done, netlink.RouteSubscribeOptions{Namespace: &h,
			ReceiveBufferSize: 64 << 20, ReceiveBufferForceSize: true}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		l.startBIRD()
		urouterDone := time.Duration(0)
		tick := time.NewTicker(20 * time.Millisecond)
		for kernelDone == 0 || urouterDone == 0 {
			select {
			case u := <-ch:
				if u.Protocol != unix.RTPROT_BGP || u.Dst == nil {
					continue
				}
				if u.Type == unix.RTM_NEWROUTE {
					seen[u.Dst.String()] = true
				} else {
					delete(seen, u.Dst.String())
				}
				if kernelDone == 0 && len(seen) == len(ps) {
					kernelDone = time.Since(start)
				}
			case <-tick.C:
				if n, at := fpmInstalled(l.d); urouterDone == 0 && n >= len(ps) {
					urouterDone = at.Sub(start) // when the batch that completed it was applied
				}
				if time.Since(start) > 5*time.Minute {
					n, _ := fpmInstalled(l.d)
					b.Fatalf("after 5 minutes: kernel %d, urouter %d of %d", len(seen), n, len(ps))
				}
			}
		}
		tick.Stop()
		close(done)
		_ = h.Close()
		b.ReportMetric(urouterDone.Seconds(), "urouter-s")
		b.ReportMetric(kernelDone.Seconds(), "kernel-s")
		b.ReportMetric(urouterDone.Seconds()/kernelDone.Seconds(), "urouter/kernel")
	}
}

// fpmInstalled is how many routes urouter's FPM session has installed,
// and when it last applied a batch.
func fpmInstalled(d *daemon) (int, time.Time) {
	out, _, _ := d.run("-j", "fpm", "show")
	var st []struct {
		Installed int       `json:"installed_routes"`
		Updated   time.Time `json:"updated"`
	}
	if json.Unmarshal([]byte(out), &st) != nil || len(st) != 1 {
		return 0, time.Time{}
	}
	return st[0].Installed, st[0].Updated
}

func realPrefixes(tb testing.TB) []string {
	var ps []string
	for _, p := range realtable.MustLoad(tb) {
		ps = append(ps, p.String())
	}
	return ps
}
