package integration

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDaemonCLI starts the daemon as a user would, with a config file,
// and drives it with the CLI: routes added, shown (text and JSON),
// deleted, errors and exit codes, a batch file, the socket's life.
func TestDaemonCLI(t *testing.T) {
	parallel(t)
	d := startDaemon(t, "",
		"# a config file is a batch",
		"link add d0 type dummy",
		"link set d0 up",
		"address add 2001:db8:91::1/64 dev d0",
		"route add 2001:db8:1::/48 via 2001:db8:91::2 dev d0 proto static")
	check := func(args []string, wantOut, wantErr string, wantStatus int) {
		t.Helper()
		out, errs, st := d.run(args...)
		if out != wantOut || errs != wantErr || st != wantStatus {
			t.Errorf("urouter %s:\n got %q %q %d\nwant %q %q %d", strings.Join(args, " "), out, errs, st, wantOut, wantErr, wantStatus)
		}
	}
	check([]string{"-6", "route", "show", "2001:db8:1::/48"}, "2001:db8:1::/48 via 2001:db8:91::2 dev d0 proto static metric 1024 pref medium\n", "", 0)
	check([]string{"-6", "route", "add", "2001:db8:2::/48", "dev", "d0", "metric", "7"}, "", "", 0)
	check([]string{"-j", "route", "show", "2001:db8:2::/48"}, `[{"dst":"2001:db8:2::/48","dev":"d0","metric":7,"flags":[],"pref":"medium"}]`+"\n", "", 0)
	check([]string{"route", "add", "2001:db8:2::/48", "dev", "d0", "metric", "7"}, "", "RTNETLINK answers: File exists\n", 2)
	check([]string{"route", "add", "2001:db8:3::/48", "dev", "d9"}, "", "Cannot find device \"d9\"\n", 1)
	check([]string{"route", "add", "2001:db8:3::/48", "dev", "d0", "mtu", "big"}, "", "Error: argument \"big\" is wrong: \"mtu\" value is invalid\n\n", 255)
	check([]string{"route", "del", "2001:db8:2::/48"}, "", "", 0)
	check([]string{"route", "del", "2001:db8:2::/48"}, "", "RTNETLINK answers: No such process\n", 2)
	check([]string{"route", "get", "2001:db8:1::5"}, "2001:db8:1::5 from :: via 2001:db8:91::2 dev d0 proto static src 2001:db8:91::1 metric 1024 pref medium\n", "", 0)
	check([]string{"-foo", "route"}, "", "Option \"-foo\" is unknown, try \"ip -help\".\n", 255)

	batch := filepath.Join(t.TempDir(), "routes.batch")
	if err := os.WriteFile(batch, []byte("route add 2001:db8:10::/48 dev d0\nroute add 2001:db8:10::/48 dev d0\nroute add 2001:db8:11::/48 dev d0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check([]string{"-batch", batch}, "", "RTNETLINK answers: File exists\nCommand failed "+batch+":2\n", 1)
	check([]string{"route", "show", "root", "2001:db8:10::/47"}, "2001:db8:10::/48 dev d0 metric 1024 pref medium\n", "", 0)
	check([]string{"-force", "-batch", batch}, "", "RTNETLINK answers: File exists\nCommand failed "+batch+":1\nRTNETLINK answers: File exists\nCommand failed "+batch+":2\n", 1)
	check([]string{"route", "show", "root", "2001:db8:10::/47"}, "2001:db8:10::/48 dev d0 metric 1024 pref medium\n2001:db8:11::/48 dev d0 metric 1024 pref medium\n", "", 0)

	// save and restore through the CLI
	saved, _, st := d.run("route", "save")
	if st != 0 || !strings.Contains(saved, "route add 2001:db8:1::/48 via 2001:db8:91::2 dev d0 table main proto static metric 1024\n") {
		t.Fatalf("save: %q", saved)
	}
	d.run("route", "flush", "proto", "static")
	if out, _, _ := d.run("route", "show", "2001:db8:1::/48"); out != "" {
		t.Fatalf("flush left %q", out)
	}
	c := runWithStdin(t, saved, plain, "--socket", d.sock, "route", "restore")
	if c != 0 {
		t.Fatalf("restore: %d", c)
	}
	check([]string{"route", "show", "2001:db8:1::/48"}, "2001:db8:1::/48 via 2001:db8:91::2 dev d0 proto static metric 1024 pref medium\n", "", 0)

	// a second daemon on the same socket refuses to start
	_, errs, st := runCmd(urouter, "daemon", "--socket", d.sock)
	if st == 0 || !strings.Contains(errs, "another daemon") {
		t.Errorf("second daemon: %d %q", st, errs)
	}
	d.stop()
	if _, err := os.Stat(d.sock); !os.IsNotExist(err) {
		t.Errorf("the socket outlived its daemon: %v", err)
	}
}

// TestConfigError: a daemon whose config fails says where, and stops.
func TestConfigError(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(conf, []byte("link add d0 type dummy\nroute add 2001:db8::/32 dev d0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, st := runCmd(urouter, "daemon", "--socket", filepath.Join(dir, "s"), "--config", conf)
	if st == 0 || !strings.Contains(errs, "Error: Nexthop device is not up.") || !strings.Contains(errs, "Command failed "+conf+":2") {
		t.Errorf("bad config: %d %q", st, errs)
	}
}

func runWithStdin(t *testing.T, stdin, name string, args ...string) int {
	t.Helper()
	f := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(f, []byte(stdin), 0o644); err != nil {
		t.Fatal(err)
	}
	in, _ := os.Open(f)
	defer func() { _ = in.Close() }()
	_, errs, st := runCmdIn(in, name, args...)
	if st != 0 {
		t.Log(errs)
	}
	return st
}

// TestClientThatDoesNotRead: `urouter -force -batch F 2>&1 | sleep 30`,
// with lines that fail inside the main table's transaction, stops reading
// the daemon's answers. Another client's route add on the same table is
// delayed by no more than a few milliseconds, and a route with an expiry in
// another table still expires on time.
func TestClientThatDoesNotRead(t *testing.T) {
	measures(t)
	d := startDaemon(t, "", "link add d0 type dummy", "link set d0 up", "address add 2001:db8:91::1/64 dev d0")
	add := func(i int) time.Duration {
		start := time.Now()
		if _, e, st := d.run("route", "add", fmt.Sprintf("2001:db8:6:%x::/64", i), "dev", "d0"); st != 0 {
			t.Fatalf("route add: %s", e)
		}
		return time.Since(start)
	}
	var before, during []time.Duration
	for i := 0; i < 10; i++ {
		before = append(before, add(i))
	}
	if _, e, st := d.run("route", "add", "2001:db8:e::/48", "dev", "d0", "table", "100", "expires", "2"); st != 0 {
		t.Fatal(e)
	}
	added := time.Now()
	var b strings.Builder
	b.WriteString("route add 2001:db8:5::/48 dev d0\n")
	for i := 0; i < 200000; i++ {
		b.WriteString("route add 2001:db8:5::/48 dev d0\n") // File exists
	}
	f := filepath.Join(t.TempDir(), "F")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	hostile := exec.Command("sh", "-c", urouter+" --socket "+d.sock+" -force -batch "+f+" 2>&1 | sleep 30")
	hostile.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := hostile.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-hostile.Process.Pid, syscall.SIGKILL)
		_ = hostile.Wait()
	}()
	time.Sleep(500 * time.Millisecond) // its answers fill the pipe and the socket
	for i := 10; i < 30; i++ {
		during = append(during, add(i))
	}
	// Against the same test's baseline, by medians: a client process takes
	// tens of milliseconds on a loaded machine, and one of them now and then
	// far more; a lock held on the hostile client would stall them all
	// until it is killed.
	mb, md := median(before), median(during)
	t.Logf("the median route add (a client process each): %v before, %v while a client did not read", mb, md)
	if md > 2*mb+20*time.Millisecond {
		t.Errorf("route adds took %v (median) while a client did not read, %v before", md, mb)
	}
	for {
		out, _, _ := d.run("route", "show", "table", "100")
		if out == "" {
			break
		}
		if time.Since(added) > 3500*time.Millisecond {
			t.Fatalf("the route in table 100 did not expire on time: %q", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// median of xs (the upper one of an even count)
func median[T cmp.Ordered](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
