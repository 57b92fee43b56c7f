package control

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"urouter/control/wire"
	"urouter/internal/racebuild"
	"urouter/router"
)

// pieces reads its input in pieces of random sizes, as a socket may
// deliver a batch: lines cut anywhere.
type pieces struct {
	b []byte
	r *rand.Rand
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(b), len(p.b), 1+p.r.IntN(3000))
	copy(b, p.b[:n])
	p.b = p.b[n:]
	return n, nil
}

// runBoth runs input as a batch twice, on fresh routers: read by the
// session itself and parsed ahead from the first line on, and returns
// what each printed and left.
func runBoth(t *testing.T, o wire.Options, input string) (sync, ahead string) {
	t.Helper()
	return runBothPaced(t, o, input, false)
}

// runBothPaced is runBoth, the batch parsed ahead paced if paced (as a
// daemon's is while its data plane forwards: its lines go in runs of
// paceEvery at most).
func runBothPaced(t *testing.T, o wire.Options, input string, paced bool) (sync, ahead string) {
	t.Helper()
	one := func(after int) string {
		r := newTestRouter(t)
		var out, errs bytes.Buffer
		s := &Session{r: r, opt: o, out: bufio.NewWriter(&out), errOut: func(m string) { errs.WriteString(m + "\n") },
			readAheadAfter: after}
		if paced && after < 0 {
			r.DP.SetControlNice(1)
			if s.pace = r.DP.NewPacer(); s.pace == nil {
				t.Fatal("no pacer")
			}
			defer s.pace.Done()
		}
		s.opt.BatchName = "test.batch"
		in := &pieces{b: []byte(input), r: rand.New(rand.NewPCG(uint64(len(input)), 1))}
		st := s.Run(bufio.NewReaderSize(in, ReadBuf))
		s.flush()
		shown, _, _ := run(r, wire.Options{}, "route show table all", "nexthop show", "rule show")
		return fmt.Sprintf("status %d\nstdout:\n%s\nstderr:\n%s\nstate:\n%s", st, out.String(), errs.String(), shown)
	}
	return one(1 << 30), one(-1)
}

// TestBatchAhead: a batch parsed ahead prints, fails and leaves the
// router exactly as one the session reads itself: the same errors at the
// same line numbers, nothing applied after a failure, forced batches
// going on, shows in their place among the changes, and lines that need
// the routes the lines before them added.
func TestBatchAhead(t *testing.T) {
	var routes strings.Builder
	// under the race detector, which watches the handover between reader
	// and session, still many chunks: pieces reads in random lengths
	lines := racebuild.Sized(3000, 1000)
	for i := 0; i < lines; i++ {
		switch i % 6 {
		case 0:
			fmt.Fprintf(&routes, "route add 2001:db8:%x::/48 via 2001:db8:91::2 dev d0 table 100\n", i)
		case 1:
			fmt.Fprintf(&routes, "-6 route add 2001:db8:%x::/48 dev d0 metric %d\n", i, i)
		case 2:
			// each line its own paths: a line's must not be another's
			fmt.Fprintf(&routes, "route add 2001:db8:%x::/48 nexthop via 2001:db8:91::%x dev d0 nexthop via 2001:db8:91::%x dev d0 weight %d\n", i, i%50+2, i%70+3, i%9+1)
		case 3:
			fmt.Fprintf(&routes, "  route   replace 2001:db8:%x::/48 dev d0 # a comment\n\n", i)
		case 4:
			fmt.Fprintf(&routes, "route add 2001:db8:%x::/48 nhid 7 table 101\n", i)
		case 5:
			fmt.Fprintf(&routes, "route del 2001:db8:%x::/48\n", i-4)
		}
	}
	head := "nexthop add id 7 via 2001:db8:91::9 dev d0\n"
	body := routes.String()
	n := strings.Count(body, "\n") // lines, to put a failure half-way
	half := strings.Join(strings.SplitAfter(body, "\n")[:n/2], "")
	rest := strings.Join(strings.SplitAfter(body, "\n")[n/2:], "")
	cases := map[string]string{
		"clean": head + body,
		// a route through a gateway reached by the route before it
		"order":    head + half + "route add 2001:db8:ab00::/40 dev d0 table 102\nroute add 2001:db8:cc::/48 via 2001:db8:ab00::1 table 102\n" + rest,
		"shows":    head + half + "route show table 100 root 2001:db8::/40\nroute get 2001:db8:1::1\n" + rest,
		"parse":    head + half + "route add 2001:db8:ff::/48 dev d0 foo bar\n" + rest,
		"badaddr":  head + half + "route add 2001:db8:ff::/48 via zzz dev d0\n" + rest,
		"exists":   head + half + "route add 2001:db8:0::/48 via 2001:db8:91::2 dev d0 table 100\n" + rest,
		"nodev":    head + half + "route add 2001:db8:ff::/48 dev nosuch\n" + rest,
		"quote":    head + half + "route add \"2001:db8:ff::/48 dev d0\n" + rest,
		"object":   head + half + "nosuchobject show\n" + rest,
		"long":     head + half + "route add 2001:db8:ff::/48 dev d0 " + strings.Repeat("x", maxLine) + "\n" + rest,
		"longlast": head + half + strings.Repeat("y", maxLine+10),
		"cut":      head + body + "route add 2001:db8:ffff::/48 dev d0",
		"usage":    head + half + "route add\n" + rest,
	}
	for name, input := range cases {
		for _, force := range []bool{false, true} {
			sync, ahead := runBoth(t, wire.Options{Batch: true, Force: force}, input)
			if sync != ahead {
				t.Errorf("%s (force %v): parsed ahead\n%.3000s\nread by the session\n%.3000s", name, force, ahead, sync)
			}
		}
	}
}

// TestBatchAheadShape: runs of lines that differ only in their
// destination, which the reader parses as the line before with another
// prefix (lineShape), print, fail and leave the router as the session's
// own parse does, with lines among them that only look like the run's.
func TestBatchAheadShape(t *testing.T) {
	odd := []string{
		"route add 2001:db8:zz::/48 via 2001:db8:91::2 dev d0 table 100",  // no address
		"route add 2001:db8:ff::/129 via 2001:db8:91::2 dev d0 table 100", // too long a length
		"route add 2001:db8:ff::1/48 via 2001:db8:91::2 dev d0 table 100", // host bits
		"route add 2001:db8:ff:: via 2001:db8:91::2 dev d0 table 100",     // a host route
		"route add ::/0 via 2001:db8:91::2 dev d0 table 100",
		"route add default via 2001:db8:91::2 dev d0 table 100",
		"route add 2001:db8:5::/48 via 2001:db8:91::2 dev d0 table 100", // exists
		"route add 2001:db8:fe::/48 via 2001:db8:91::2 dev nosuch table 100",
		"route add 2001:db8:fd::/48 via 2001:db8:91::3 dev d0 table 100",
		"route add 2001:db8:fc::/48 2001:db8:fb::/48 via 2001:db8:91::2 dev d0 table 100",
		"route add  via 2001:db8:91::2 dev d0 table 100",
		"route add 2001:db8:fa::/48x via 2001:db8:91::2 dev d0 table 100",
		"route add 2001:db8:f9::/48 via 2001:db8:91::2 dev d0 table 100 # a comment",
		"route del 2001:db8:7::/48 via 2001:db8:91::2 dev d0 table 100",
		"route add 2001:db8:f8::/48 via 2001:db8:91::2 dev d0 table 100\r",
		"route add 2001:DB8:F7::/48 via 2001:db8:91::2 dev d0 table 100",
	}
	run := func(from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			switch i / 500 % 4 {
			case 0:
				fmt.Fprintf(&b, "route add 2001:db8:%x::/48 via 2001:db8:91::2 dev d0 table 100\n", i)
			case 1:
				fmt.Fprintf(&b, "-6 route replace 2001:db8:%x:%x::/64 dev d0 metric 5\n", i, i%7)
			case 2:
				fmt.Fprintf(&b, "route add 2001:db8:%x::/48 nhid 7 table 101\n", i)
			case 3:
				fmt.Fprintf(&b, "route del 2001:db8:%x::/48 via 2001:db8:91::2 dev d0 table 100\n", i-1500)
			}
		}
		return b.String()
	}
	const head = "nexthop add id 7 via 2001:db8:91::9 dev d0\n"
	inputs := []string{head + run(0, 4000)}
	for _, o := range odd {
		// within a run of the shape it looks like (a parse error ends
		// even a forced batch)
		inputs = append(inputs, head+run(0, 300)+o+"\n"+run(300, 600))
	}
	// Runs into main, whose lookup checks their gateway: one of their
	// lines (the same shape) adds a route to the gateway through itself,
	// and the lines after it can no longer reach it; or fails (it is
	// there) in the middle of a run.
	main := func(from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "route add 2001:db8:%x::/48 via 2001:db8:91::2 dev d0\n", i)
		}
		return b.String()
	}
	inputs = append(inputs, main(0, 300)+"route add 2001:db8:91::2/128 via 2001:db8:91::2 dev d0\n"+main(300, 400),
		main(0, 3000)+main(1000, 1001)+main(3000, 4000))
	for _, input := range inputs {
		for _, force := range []bool{false, true} {
			for _, paced := range []bool{false, true} {
				sync, ahead := runBothPaced(t, wire.Options{Batch: true, Force: force}, input, paced)
				if sync != ahead {
					t.Errorf("force %v, paced %v: parsed ahead\n%.3000s\nread by the session\n%.3000s", force, paced, ahead, sync)
				}
			}
		}
	}
}

// TestShapedRunGateway: a run of lines shaped alike ends after a route
// to their gateway, so that the lines after it have the gateway checked
// again, against the routes with that one, as each line is checked when
// it runs alone.
func TestShapedRunGateway(t *testing.T) {
	r := newTestRouter(t)
	s := &Session{r: r, opt: wire.Options{Batch: true}, out: bufio.NewWriter(io.Discard), errOut: func(m string) { t.Error(m) }}
	args, _ := splitLine([]byte("2001:db8:1::/48 via 2001:db8:91::2 dev d0\n"), nil)
	var q routeReq
	if e := parseRouteModify(&q, args, &s.routes.words); e != nil {
		t.Fatal(e.msg)
	}
	dsts := []netip.Prefix{netip.MustParsePrefix("2001:db8:1::/48"), netip.MustParsePrefix("2001:db8:91::/120"),
		netip.MustParsePrefix("2001:db8:2::/48")}
	tm := &aheadLine{req: q}
	if n := s.addShaped(tm, dsts, nil); n != 2 {
		t.Fatalf("the run added %d routes, want 2 (up to the one to its gateway)", n)
	}
	if n := s.addShaped(tm, dsts[2:], nil); n != 1 {
		t.Fatalf("the rest added %d", n)
	}
	s.commit()
	if n := r.Tables.Main().Len(); n != 4 { // and the connected /64
		t.Fatalf("%d routes in main", n)
	}
}

// TestConfigAhead: a long config is parsed ahead too, and one that fails
// half-way says where, as a short one does (the reader is done with the
// file when ApplyConfig asks how reading it ended).
func TestConfigAhead(t *testing.T) {
	var b strings.Builder
	b.WriteString("link add d0 type dummy\nlink set d0 up\n")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "route add 2001:db8:%x::/48 dev d0\n", i)
	}
	good := b.String()
	b.WriteString("route add 2001:db8:1::/48 dev d0\n")
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, "route add 2001:db9:%x::/48 dev d0\n", i)
	}
	for _, c := range []struct {
		conf, err string
		lines     int
	}{{good, "", 5002}, {b.String(), "RTNETLINK answers: File exists", 5003}} {
		path := filepath.Join(t.TempDir(), "urouter.conf")
		if err := os.WriteFile(path, []byte(c.conf), 0o600); err != nil {
			t.Fatal(err)
		}
		r := router.New()
		n, err := applyConfig(r, path)
		if n != c.lines || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Fatalf("config: %d lines, %v; want %d, %q", n, err, c.lines, c.err)
		}
		if got := r.Tables.Main().Len(); got < 5000 || got > 5001 {
			t.Fatalf("%d routes in main", got)
		}
	}
}

// TestBatchAheadOnePublish: a long batch that its client sends as fast as
// it is read goes into a table in one publish, however long the session
// waits on its reader's parsing (under -race, ms a chunk): the client
// has sent what follows, so the wait is not one on the client, and a full
// table into an empty table stays one transaction, built bottom-up
// (C6). Paused mid-batch, a client has what it sent published
// (TestAheadPauseOpen).
func TestBatchAheadOnePublish(t *testing.T) {
	r := newTestRouter(t)
	var b strings.Builder
	rnd := rand.New(rand.NewPCG(7, 7))
	const n = 60000
	for _, i := range rnd.Perm(n) {
		fmt.Fprintf(&b, "route add 2001:db8:%x:%x::/64 via 2001:db8:91::2 dev d0 table 100\n", i>>8, i&0xff)
	}
	s := &Session{r: r, opt: wire.Options{Batch: true, BatchName: "test.batch"}, out: bufio.NewWriter(io.Discard),
		errOut: func(m string) { t.Error(m) }}
	if st := s.Run(bufio.NewReaderSize(strings.NewReader(b.String()), ReadBuf)); st != 0 {
		t.Fatalf("status %d", st)
	}
	tb := r.Tables.Get(100)
	if tb == nil || tb.Len() != n {
		t.Fatalf("table 100: %v", tb)
	}
	if g := tb.Generation(); g != 1 {
		t.Fatalf("the batch went into table 100 in %d publishes, want 1", g)
	}
}
