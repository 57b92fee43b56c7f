package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestApplyUnderTraffic: pings cross the router between two hosts (lan1
// to lan3, which both configurations keep, with their addresses, and a
// route to the far host's other address, through it) while
// apply takes it from A to B and back, ten times: links, addresses,
// routes, nexthops, rules, knobs and RA change around them, and no ping
// is lost.
func TestApplyUnderTraffic(t *testing.T) {
	parallel(t)
	l := newEtherLab(t, nil)
	// lan3's TAP was made by the lab's config with a random MAC: the
	// files keep it (apply would make again a link given another)
	base := []string{
		"link add lan1 type host dev r1", "link add lan2 type host dev r2",
		"link add lan3 address " + l.lanMAC["lan3"] + " type tap netns " + l.e3,
		"link set lan1 up", "link set lan2 up", "link set lan3 up",
		"address add 2001:db8:a1::1/64 dev lan1", "address add 2001:db8:a2::1/64 dev lan2",
		"address add 2001:db8:a3::1/64 dev lan3",
		"route add 2001:db8:e3::/64 via 2001:db8:a3::2 dev lan3",
	}
	mustRun(t, "ip", "-n", l.e3, "address", "add", "2001:db8:e3::2/128", "dev", "lo")
	mustRun(t, "ip", "-n", l.e3, "link", "set", "lo", "up")
	a := append(append([]string(nil), base...),
		"ra set dev lan2 on max-interval 4",
		"link add t0 type tun", "link set t0 up", "address add 2001:db8:70::1/64 dev t0",
		"route add 2001:db8:100::/48 via 2001:db8:a1::2 dev lan1",
		"route add 2001:db8:300::/48 dev t0 table 100",
		"rule add pref 100 from 2001:db8:5::/48 table 100",
		"sysctl -w net.ipv6.icmp.ratelimit=250")
	b := append(append([]string(nil), base...),
		"ra set dev lan2 on max-interval 6 preference high",
		"link add t1 type tun", "link set t1 up",
		"route add 2001:db8:100::/48 via 2001:db8:a3::2 dev lan3",
		"nexthop add id 1 via 2001:db8:a1::2 dev lan1",
		"route add 2001:db8:200::/48 nhid 1",
		"rule add pref 200 to 2001:db8:6::/48 table 100",
		"route add 2001:db8:300::/48 dev t1 table 100")
	dir := t.TempDir()
	files := []string{filepath.Join(dir, "a.conf"), filepath.Join(dir, "b.conf")}
	writeFile(t, files[0], strings.Join(a, "\n")+"\n")
	writeFile(t, files[1], strings.Join(b, "\n")+"\n")
	ping := func(from, to string) *exec.Cmd {
		return exec.Command("ip", "netns", "exec", from, "ping", "-6", "-q", "-c", "1500", "-i", "0.004", "-W", "2", to)
	}
	if _, errs, st := l.d.run("route", "add", "2001:db8:e3::/64", "via", "2001:db8:a3::2", "dev", "lan3"); st != 0 {
		t.Fatal(errs)
	}
	p1, p3 := ping(l.e1, "2001:db8:e3::2"), ping(l.e3, "2001:db8:a1::2")
	var out1, out3 strings.Builder
	p1.Stdout, p3.Stdout, p1.Stderr, p3.Stderr = &out1, &out3, &out1, &out3
	for _, p := range []*exec.Cmd{p1, p3} {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if out, errs, st := l.d.run("apply", files[(i+1)%2]); st != 0 || out == "" {
			t.Fatalf("apply %s: %d %s%s", files[(i+1)%2], st, out, errs)
		}
		time.Sleep(100 * time.Millisecond) // the pings run 6 s: ten applies spread over them
	}
	_ = p1.Wait() // their output says how it went
	_ = p3.Wait()
	for _, o := range []string{out1.String(), out3.String()} {
		if !strings.Contains(o, "1500 packets transmitted, 1500 received") {
			t.Errorf("pings across the routes both configurations keep, while apply ran:\n%s", o)
		}
	}
}

// TestApplyCrash: a daemon killed (-9) while apply runs a long change
// starts again from its state file with the configuration it had, or
// with the one applied, whole: never half.
func TestApplyCrash(t *testing.T) {
	parallel(t)
	needRoot(t)
	base := []string{"link add t0 type tun", "link set t0 up", "address add 2001:db8:1::1/64 dev t0",
		"route add 2001:db8:100::/48 via 2001:db8:1::2 dev t0"}
	long := append([]string(nil), base[:3]...)
	for i := range 20000 {
		long = append(long, fmt.Sprintf("route add 2001:db8:%x:%x::/64 via 2001:db8:1::3 dev t0 table 100", 0x1000+i/256, i%256))
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "b.conf")
	writeFile(t, file, strings.Join(long, "\n")+"\n")
	outcomes := map[string]int{}
	for round, delay := range []time.Duration{30 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond, 1200 * time.Millisecond} {
		state := filepath.Join(dir, fmt.Sprintf("%d.state", round))
		d := startDaemonFlags(t, newNetns(t, "apK"), []string{"--state", state}, base...)
		before, _, _ := d.run("save")
		apply := exec.Command(plain, "--socket", d.sock, "apply", file)
		if err := apply.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = d.cmd.Wait() // killed
		_ = apply.Wait() // cut off
		again := startDaemonFlags(t, newNetns(t, "apK"), []string{"--state", state})
		now, _, _ := again.run("save")
		todo, errs, st := again.run("apply", file, "--dry-run")
		switch {
		case st != 0:
			t.Errorf("after the kill at %v: apply --dry-run: %d %s", delay, st, errs)
		case now == before:
			outcomes["before"]++
		case todo == "":
			outcomes["applied"]++
		default:
			t.Errorf("killed at %v during apply, the state file holds half of it: %d lines to apply yet, and\n%s",
				delay, strings.Count(todo, "\n"), lineDiff(before, now))
		}
		again.stop()
	}
	t.Logf("the restarts had: %v", outcomes)
}

// TestApplyLeavesFeeds: what a feed owns (a kernel table followed by
// --mirror-table) is neither compared nor changed by apply, unless
// --all; then a config that lacks it deletes it.
func TestApplyLeavesFeeds(t *testing.T) {
	parallel(t)
	needRoot(t)
	ns := newNetns(t, "apF")
	mustRun(t, "ip", "-n", ns, "-6", "route", "add", "blackhole", "2001:db8:e0::/48", "table", "100")
	d := startDaemonFlags(t, ns, []string{"--mirror-table", "100"}, "link add t0 type tun", "link set t0 up")
	waitUntil(t, "the kernel table's route", func() bool {
		out, _, _ := d.run("route", "show", "table", "100")
		return strings.Contains(out, "2001:db8:e0::/48")
	})
	file := filepath.Join(t.TempDir(), "c.conf")
	writeFile(t, file, "link add t0 type tun\nlink set t0 up\nroute add 2001:db8:1::/48 dev t0\n")
	if out, errs, st := d.run("apply", file); st != 0 || out != "route add 2001:db8:1::/48 dev t0 table main proto boot metric 1024\n" {
		t.Errorf("apply beside a feed: %d %q %s", st, out, errs)
	}
	if out, _, _ := d.run("route", "show", "table", "100"); !strings.Contains(out, "2001:db8:e0::/48") {
		t.Errorf("apply took the feed's route away:\n%s", out)
	}
	// a config that says the feed's route too leaves it to the feed
	withFeed := filepath.Join(t.TempDir(), "f.conf")
	writeFile(t, withFeed, "link add t0 type tun\nlink set t0 up\nroute add 2001:db8:1::/48 dev t0\nroute add blackhole 2001:db8:e0::/48 table 100\n")
	if out, errs, st := d.run("apply", withFeed); st != 0 || out != "" {
		t.Errorf("apply of a config with the feed's route: %d %q %s", st, out, errs)
	}
	out, errs, st := d.run("apply", file, "--all", "--dry-run")
	if st != 0 || !strings.HasPrefix(out, "route del blackhole 2001:db8:e0::/48 table 100") {
		t.Errorf("apply --all --dry-run: %d %q %s", st, out, errs)
	}
}
