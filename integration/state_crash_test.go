package integration

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// killDaemon ends d as a crash does: SIGKILL to its process group, no
// time to finish a write. It fails t if the daemon had reported a race.
func killDaemon(t *testing.T, d *daemon) {
	t.Helper()
	if err := syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.cmd.Wait() // killed: its status is SIGKILL's
	if strings.Contains(d.log.String(), "DATA RACE") {
		t.Errorf("the daemon reported a data race:\n%s", d.log)
	}
}

// routeBatch is batch b of client c: n routes, one session, in a
// 2001:db8::/32 place of their own. c 0 makes /64s (2001:db8:B:N::),
// others /80s (2001:db8:C:B:N::).
func routeBatch(c, b, n int) string {
	var s strings.Builder
	for i := range n {
		if c == 0 {
			fmt.Fprintf(&s, "route add 2001:db8:%x:%x::/64 dev d0\n", 0x100+b, i)
		} else {
			fmt.Fprintf(&s, "route add 2001:db8:%x:%x:%x::/80 dev d0\n", 0xc000+c, b, i)
		}
	}
	return s.String()
}

// batchRoutes counts the routes of `-6 route show` by client and batch.
func batchRoutes(t *testing.T, d *daemon) map[[2]int]int {
	t.Helper()
	out, errs, st := d.run("-6", "route", "show")
	if st != 0 {
		t.Fatalf("route show: %d %s", st, errs)
	}
	n := map[[2]int]int{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		p, err := netip.ParsePrefix(f[0])
		if err != nil {
			continue
		}
		a := p.Addr().As16()
		w := func(i int) int { return int(a[i])<<8 | int(a[i+1]) }
		switch {
		case p.Bits() == 64 && w(4) >= 0x100 && w(4) < 0xc000:
			n[[2]int{0, w(4) - 0x100}]++
		case p.Bits() == 80 && w(4) > 0xc000:
			n[[2]int{w(4) - 0xc000, w(6)}]++
		}
	}
	return n
}

// batchLog is what a client sent: for each batch, whether it was
// acknowledged (exit status 0).
type batchLog struct {
	mu    sync.Mutex
	acked map[[2]int]bool // every batch sent; true: acknowledged
	size  map[int]int     // each client's routes a batch
}

// sender sends batches of n routes as client c until stop closes, each
// once, numbering them from *next.
func (bl *batchLog) sender(t *testing.T, sock, dir string, c, n int, next *int, stop <-chan struct{}) {
	file := filepath.Join(dir, fmt.Sprintf("batch%d", c))
	bl.mu.Lock()
	bl.size[c] = n
	bl.mu.Unlock()
	for {
		select {
		case <-stop:
			return
		default:
		}
		b := *next
		*next++
		if err := os.WriteFile(file, []byte(routeBatch(c, b, n)), 0o644); err != nil {
			t.Error(err)
			return
		}
		_, _, st := runCmd(plain, "--socket", sock, "-batch", file)
		bl.mu.Lock()
		bl.acked[[2]int{c, b}] = st == 0
		bl.mu.Unlock()
		if st != 0 {
			time.Sleep(5 * time.Millisecond) // the daemon is down: do not spin
		}
	}
}

// ackedOf is how many of client c's batches were acknowledged.
func (bl *batchLog) ackedOf(c int) int {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	n := 0
	for k, ack := range bl.acked {
		if k[0] == c && ack {
			n++
		}
	}
	return n
}

// awaitAcked waits until client c has n batches acknowledged, failing t
// after a minute (the daemon acknowledges nothing).
func (bl *batchLog) awaitAcked(t *testing.T, c, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); bl.ackedOf(c) < n; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("client %d: %d batches acknowledged in a minute, want %d", c, bl.ackedOf(c), n)
		}
	}
}

// check fails t for a batch the router lacks a route of though it was
// acknowledged, or has some routes of but not all; it returns the
// batches it has whole.
func (bl *batchLog) check(t *testing.T, d *daemon) (whole, acked map[int]int) {
	t.Helper()
	have := batchRoutes(t, d)
	bl.mu.Lock()
	defer bl.mu.Unlock()
	for k, got := range have {
		if _, sent := bl.acked[k]; !sent {
			t.Errorf("client %d batch %d: %d routes of a batch never sent", k[0], k[1], got)
		}
	}
	whole, acked = map[int]int{}, map[int]int{}
	for k, ack := range bl.acked {
		n := bl.size[k[0]]
		if ack {
			acked[k[0]]++
		}
		switch got := have[k]; {
		case ack && got != n:
			t.Errorf("client %d batch %d was acknowledged: %d of its %d routes after the restart", k[0], k[1], got, n)
		case got != 0 && got != n:
			t.Errorf("client %d batch %d: %d of its %d routes after the restart (all or none)", k[0], k[1], got, n)
		case got == n:
			whole[k[0]]++
		}
	}
	return whole, acked
}

// TestStateCrash: a daemon with --state killed with SIGKILL at random
// moments while a client sends batches of 200 routes: after each restart
// from the file alone, every acknowledged batch is there whole, and every
// other whole or not at all. A configuration made by the client is the
// same after a kill (the MACs and nexthop ids the router chose). Then 4
// clients at once, and one kill. status reports the file's records.
func TestStateCrash(t *testing.T) {
	parallel(t)
	needRoot(t)
	dir := t.TempDir()
	c := &crashLab{t: t, ns: newNetns(t, "stc"), dir: dir,
		state: filepath.Join(dir, "state"), sock: filepath.Join(dir, "urouter.sock")}
	c.d = c.start()
	c.configurationSurvivesKill()
	bl := &batchLog{acked: map[[2]int]bool{}, size: map[int]int{}}
	c.batchesSurviveKills(bl)
	c.clientsSurviveKill(bl)
	c.statusCountsRecords()
}

// crashLab is a daemon with a state file, killed and started again.
type crashLab struct {
	t                    *testing.T
	ns, dir, state, sock string
	d                    *daemon
}

func (c *crashLab) start() *daemon {
	return startDaemonAt(c.t, c.ns, c.sock, []string{"--state", c.state})
}

// restart kills the daemon and starts it again from its file.
func (c *crashLab) restart() {
	killDaemon(c.t, c.d)
	c.d = c.start()
}

// configurationSurvivesKill makes a configuration through the client,
// with batches that fail part-way, checks that shows and failed commands
// write nothing, and that the router is the same after kill -9.
func (c *crashLab) configurationSurvivesKill() {
	t, d := c.t, c.d
	setup := filepath.Join(c.dir, "setup")
	if err := os.WriteFile(setup, []byte("link add d0 type dummy\nlink set d0 up\naddress add 2001:db8:1::1/64 dev d0\n"+
		"link add p0 type tap\nlink set p0 up\n-6 nexthop add dev d0\nnexthop add via 2001:db8:1::2 dev d0\n"+
		"route add 2001:db8:2::/64 nhid 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errs, st := d.run("-batch", setup); st != 0 {
		t.Fatalf("setup: %d %s%s", st, out, errs)
	}
	// A batch that fails keeps the lines that changed something before
	// the failure; a forced one, all but the failed line.
	for _, b := range []struct {
		force bool
		lines string
	}{
		{false, "route add 2001:db8:3::/64 dev d0\nroute add 2001:db8:3::/64 dev d0\nroute add 2001:db8:4::/64 dev d0\n"},
		{true, "route add 2001:db8:5::/64 dev d0\nroute add 2001:db8:5::/64 dev d0\nroute add 2001:db8:6::/64 dev d0\n"},
	} {
		if err := os.WriteFile(setup, []byte(b.lines), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"-batch", setup}
		if b.force {
			args = append([]string{"-force"}, args...)
		}
		if out, errs, st := d.run(args...); st != 1 {
			t.Fatalf("a batch with a failing line: %d %s%s", st, out, errs)
		}
	}
	waitDAD(t, d)
	beforeAt := time.Now()
	before := showsOf(t, d)
	routes := before["-6 route show table all"]
	for p, want := range map[string]bool{"2001:db8:3::/64": true, "2001:db8:4::/64": false, "2001:db8:5::/64": true, "2001:db8:6::/64": true} {
		if strings.Contains(routes, "\n"+p+" dev d0") != want {
			t.Errorf("route %s there: %v, want %v:\n%s", p, !want, want, routes)
		}
	}
	c.showsWriteNothing()
	c.restart()
	waitDAD(t, c.d)
	compareShows(t, "after kill -9", before, beforeAt, showsOf(t, c.d))
}

// showsWriteNothing: what only shows, or fails, does not grow the file.
func (c *crashLab) showsWriteNothing() {
	t := c.t
	size := func() int64 {
		fi, err := os.Stat(c.state)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	was := size()
	showsOf(t, c.d)
	for _, cmd := range [][]string{{"status"}, {"sysctl", "net.ipv6.conf.d0.hop_limit"}, {"route", "add", "2001:db8:7::/64", "dev", "nosuch"}, {"link", "set", "nosuch", "up"}, {"route", "add", "2001:db8:1::/64", "dev", "d0", "bogus"}} {
		c.d.run(cmd...)
	}
	if now := size(); now != was {
		t.Errorf("shows and failed commands grew the state file from %d to %d bytes", was, now)
	}
}

// batchesSurviveKills kills the daemon at random moments while a client
// sends batches of 200 routes, and checks the batches after each restart.
func (c *crashLab) batchesSurviveKills(bl *batchLog) {
	t := c.t
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	next := 0
	const kills, n = 20, 200
	for k := range kills {
		stop := make(chan struct{})
		done := make(chan struct{})
		before := bl.ackedOf(0)
		go func() { defer close(done); bl.sender(t, c.sock, c.dir, 0, n, &next, stop) }()
		// a batch acknowledged since the start, then a kill at a random
		// moment of the next: on a loaded machine a batch takes longer
		// than the whole window did
		bl.awaitAcked(t, 0, before+1)
		time.Sleep(time.Duration(r.Intn(281)) * time.Millisecond)
		killDaemon(t, c.d)
		close(stop)
		<-done
		c.d = c.start()
		whole, acked := bl.check(t, c.d)
		if t.Failed() {
			t.Fatalf("after kill %d of %d", k+1, kills)
		}
		if k == kills-1 {
			t.Logf("%d kills: %d batches sent, %d acknowledged, %d whole after the last restart", kills, next, acked[0], whole[0])
			if acked[0] < kills/4 {
				t.Errorf("%d batches acknowledged in %d kills: the test did not test", acked[0], kills)
			}
		}
	}
}

// clientsSurviveKill: 4 clients at once, small batches, then a kill.
func (c *crashLab) clientsSurviveKill(bl *batchLog) {
	t := c.t
	const clients, small = 4, 10
	stop := make(chan struct{})
	var wg sync.WaitGroup
	nexts := make([]int, clients+1)
	for cl := 1; cl <= clients; cl++ {
		wg.Add(1)
		go func() { defer wg.Done(); bl.sender(t, c.sock, c.dir, cl, small, &nexts[cl], stop) }()
	}
	for cl := 1; cl <= clients; cl++ {
		bl.awaitAcked(t, cl, bl.ackedOf(cl)+3)
	}
	killDaemon(t, c.d)
	close(stop)
	wg.Wait()
	c.d = c.start()
	whole, acked := bl.check(t, c.d)
	for cl := 1; cl <= clients; cl++ {
		t.Logf("client %d: %d batches of %d sent, %d acknowledged, %d whole after the restart", cl, nexts[cl], small, acked[cl], whole[cl])
		if acked[cl] < 3 {
			t.Errorf("client %d: %d batches acknowledged: the test did not test", cl, acked[cl])
		}
	}
}

// statusCountsRecords: status is ready, with what the file holds.
func (c *crashLab) statusCountsRecords() {
	t, d, state := c.t, c.d, c.state
	out, errs, st := d.run("status")
	if st != 0 || !strings.HasPrefix(out, "status ready\n") {
		t.Errorf("status: %d %s%s", st, out, errs)
	}
	file, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	records, lines := len(seals(file)), 0
	for _, l := range strings.Split(strings.TrimSuffix(string(file), "\n"), "\n") {
		// seals, the header and the numbers of sessions' lines (#@seq)
		// are not lines run
		if !strings.HasPrefix(l, "#@urouter ") && !strings.HasPrefix(l, "# urouter state") && !strings.HasPrefix(l, "#@seq ") {
			lines++
		}
	}
	jout, _, _ := d.run("-j", "status")
	var js struct {
		Ready bool `json:"ready"`
		State struct {
			File    string `json:"file"`
			Records int    `json:"records"`
			Lines   int    `json:"lines"`
			Errors  int    `json:"errors"`
		} `json:"state"`
	}
	if err := json.Unmarshal([]byte(jout), &js); err != nil {
		t.Fatalf("-j status: %v\n%s", err, jout)
	}
	if !js.Ready || js.State.File != state || js.State.Records != records || js.State.Lines != lines || js.State.Errors != 0 {
		t.Errorf("-j status: %s; the file has %d records, %d lines", jout, records, lines)
	}
	if want := fmt.Sprintf("state %s: %d records, %d lines, 0 errors", state, records, lines); !strings.Contains(out, want) {
		t.Errorf("status does not say %q:\n%s", want, out)
	}
}
