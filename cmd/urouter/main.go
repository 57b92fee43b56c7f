// Command urouter is the router: `urouter daemon` runs it, and
// `urouter [OPTIONS] OBJECT COMMAND ...` (iproute2's words) talks to it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"urouter/control"
	"urouter/control/client"
	"urouter/control/server"
	"urouter/control/statefile"
	"urouter/control/wire"
	"urouter/dataplane"
	"urouter/dataplane/port"
	"urouter/feed"
	"urouter/metrics"
	"urouter/router"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "daemon" {
		os.Exit(daemon(os.Args[2:]))
	}
	os.Exit(client.Main(os.Args[1:], control.Words{}))
}

// daemonOpts are the daemon's flags' values.
type daemonOpts struct {
	config, stateFile, socket, fpmAddr, mirrorTables, controlNice, metricsAddr *string
	knobs                                                                      []*string // sysctlFlags'
	destBurst, maxSessions                                                     *int
	probe, fpmHold                                                             *time.Duration
	controlShare                                                               *float64
}

// sysctlFlags are the daemon's flags that are a sysctl knob: they set it,
// and `sysctl -w` says the same.
var sysctlFlags = []struct{ flag, knob, dflt, usage string }{
	{"icmp-ratelimit", "net.ipv4.icmp_msgs_per_sec", "1000", "ICMPv6 errors sent per second at most (0: no limit)"},
	{"icmp-burst", "net.ipv4.icmp_msgs_burst", "50", "ICMPv6 errors sent in a burst at most"},
	{"icmp-dest-ratelimit", "net.ipv6.icmp.ratelimit", "100", "ms between ICMPv6 errors to one destination (0: no limit)"},
	{"multipath-hash-policy", "net.ipv6.fib_multipath_hash_policy", "0",
		"multipath flow hash: 0 addresses, flow label and next header; 1 addresses, ports and next header; 3 the fields of net.ipv6.fib_multipath_hash_fields"},
}

// daemonFlags is the daemon's flag set (control's usage of urouter lists
// its flags: see main_test.go).
func daemonFlags() (*flag.FlagSet, *daemonOpts) {
	fs := flag.NewFlagSet("urouter daemon", flag.ContinueOnError)
	o := &daemonOpts{}
	o.config = fs.String("config", "", "apply this batch of commands at start")
	o.stateFile = fs.String("state", "", "keep the configuration in this file: applied at start after --config (a snapshot in it stands for the config), and every change sealed in it before its client is told")
	o.socket = fs.String("socket", "", "control socket (default $UROUTER_SOCKET or "+wire.DefaultSocket+")")
	for _, k := range sysctlFlags {
		o.knobs = append(o.knobs, fs.String(k.flag, k.dflt, k.usage+": sysctl "+k.knob))
	}
	o.destBurst = fs.Int("icmp-dest-burst", 6, "ICMPv6 errors to one destination in a burst at most (Linux's is 6)")
	o.probe = fs.Duration("router-probe-interval", router.DefaultRouterProbeInterval, "how often a gateway whose neighbour failed is solicited again, as Linux's router_probe_interval")
	o.fpmAddr = fs.String("fpm", "", "accept zebra's FPM connection on [ADDR]:PORT (FRR's default is 127.0.0.1:2620); off unless given")
	o.fpmHold = fs.Duration("fpm-hold", feed.DefaultHold, "after zebra reconnects, keep what its last session installed and it has not said again at least this long (a graceful-restart time), then sweep it once the session is quiet")
	o.mirrorTables = fs.String("mirror-table", "", "follow these kernel tables (ids, comma-separated) of the daemon's netns into the router's tables of the same ids")
	o.controlShare = fs.Float64("control-share", 60, "percent of one CPU a batch takes at most while the data plane forwards (100: no limit); the rest of the machine stays the traffic's")
	o.controlNice = fs.String("control-nice", "idle", "the nice value (0-19) of a batch's threads while the data plane forwards, or idle (SCHED_IDLE): a forwarding worker that wakes then runs before them")
	o.maxSessions = fs.Int("max-sessions", server.DefaultMaxSessions, "clients served at once at most; one more is told so and let go")
	o.metricsAddr = fs.String("metrics", "", "serve Prometheus metrics at http://ADDR:PORT/metrics; off unless given")
	return fs, o
}

func daemon(args []string) int {
	fs, o := daemonFlags()
	if err := fs.Parse(args); err != nil {
		return 2
	}
	nice, ok := checkLimits(*o.controlShare, *o.maxSessions, *o.controlNice)
	if !ok {
		return 2
	}
	tuneRuntime(nice)
	r := router.New()
	flagged := map[string]string{} // the knobs as the flags set them
	for i, k := range sysctlFlags {
		flagged[k.knob] = *o.knobs[i]
		if err := r.SetSysctl(k.knob, *o.knobs[i]); err != nil {
			fmt.Fprintf(os.Stderr, "urouter daemon: --%s %q (%s): %v\n", k.flag, *o.knobs[i], k.knob, err)
			return 2
		}
	}
	r.SetICMPDestBurst(*o.destBurst)
	r.DP.SetControlShare(*o.controlShare / 100)
	r.DP.SetControlNice(nice)
	r.SetRouterProbeInterval(*o.probe)
	sock := wire.SocketPath(*o.socket)
	srv, err := server.Listen(sock, r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "urouter daemon:", err)
		return 1
	}
	// Beside the socket this daemon now owns: the IPv6 switches of the
	// interfaces it takes, and of those a daemon killed before left off.
	if err := port.RecordIPv6Switches(sock + ".ipv6"); err != nil {
		fmt.Fprintln(os.Stderr, "urouter daemon:", err)
		srv.Close()
		return 1
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "urouter daemon: "+format+"\n", args...)
		srv.Close()
		releaseLinks(r)
		return 1
	}
	srv.MaxSessions, srv.Paper, srv.Status.Started = *o.maxSessions, paperOf(flagged), time.Now()
	var fpmApplier *feed.Applier
	if *o.fpmAddr != "" {
		fpmApplier = feed.NewApplier(r, r.LinkOfKernel)
	}
	lang := control.NewStateLanguage(r)
	st, err := restore(r, srv, lang, *o.config, *o.stateFile, fpmApplier)
	if err != nil {
		return fail("%v", err)
	}
	if st != nil {
		defer func() { _ = st.Close() }() // every record is sealed already
	}
	feeds, err := startFeeds(r, fpmApplier, *o.fpmAddr, *o.mirrorTables, *o.fpmHold)
	if err != nil {
		return fail("%v", err)
	}
	defer feeds.close()
	fd := &control.Feeds{FPM: feeds.fpm, Tables: feeds.tables}
	if st != nil {
		lang.SetFeeds(fd)
		st.Run()
	}
	srv.Feeds, srv.State = fd, st
	if *o.metricsAddr != "" {
		ms, err := metrics.Serve(*o.metricsAddr, metrics.NewCollector(r, metrics.Feeds{FPM: feeds.fpm, Tables: feeds.tables}))
		if err != nil {
			return fail("--metrics: %v", err)
		}
		defer func() { _ = ms.Close() }() // at exit: nobody is left to hear of it
	}
	return serve(r, srv, *o.config)
}

// paperOf makes apply's routers on paper as the daemon made its own:
// with the knobs its flags set.
func paperOf(knobs map[string]string) func() *router.Router {
	return func() *router.Router {
		p := router.NewPaper()
		for k, v := range knobs {
			_ = p.SetSysctl(k, v) // taken by the daemon's own router already
		}
		return p
	}
}

// serve starts the router and serves its socket until SIGTERM or SIGINT;
// SIGHUP applies config again, as `urouter apply` does.
func serve(r *router.Router, srv *server.Server, config string) int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		srv.Close()
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			srv.Reload(config)
		}
	}()
	r.Start()
	defer r.Close()
	if err := srv.Serve(); err != nil {
		fmt.Fprintln(os.Stderr, "urouter daemon:", err)
		return 1
	}
	releaseLinks(r)
	return 0
}

// releaseLinks gives the interfaces the router took their own IPv6 back
// (and says what crossed them).
func releaseLinks(r *router.Router) {
	for _, l := range r.Links.All() {
		if s := l.EtherStats(); s != nil {
			fmt.Fprintf(os.Stderr, "urouter daemon: %s: %s\n", l.Name, s)
			if err := r.DeleteLink(l); err != nil {
				fmt.Fprintf(os.Stderr, "urouter daemon: %s: %v\n", l.Name, err)
			}
		}
	}
}

// feeds are the route feeds the daemon runs: zebra over FPM, kernel tables.
type feeds struct {
	fpm    *feed.FPM
	tables []*feed.TableMirror
}

// startFeeds starts them once the configuration has given the links their
// mirrors, through which the feeds name the links.
func startFeeds(r *router.Router, fpmApplier *feed.Applier, fpmAddr, tables string, hold time.Duration) (*feeds, error) {
	f := &feeds{}
	if tables != "" {
		for _, t := range strings.Split(tables, ",") {
			id, err := strconv.ParseUint(strings.TrimSpace(t), 10, 32)
			if err != nil || id == 0 {
				f.close()
				return nil, fmt.Errorf("--mirror-table: %q is not a table id", t)
			}
			m, err := feed.MirrorTable(r, uint32(id))
			if err != nil {
				f.close()
				return nil, fmt.Errorf("--mirror-table %d: %w", id, err)
			}
			f.tables = append(f.tables, m)
		}
	}
	if fpmAddr != "" {
		if strings.HasPrefix(fpmAddr, ":") {
			fpmAddr = "127.0.0.1" + fpmAddr // as zebra's default
		}
		s, err := feed.ListenFPM(fpmAddr, fpmApplier, feed.Timers{Hold: hold})
		if err != nil {
			f.close()
			return nil, fmt.Errorf("--fpm: %w", err)
		}
		f.fpm = s
	}
	return f, nil
}

func (f *feeds) close() {
	if f.fpm != nil {
		f.fpm.Close()
	}
	for _, m := range f.tables {
		m.Close()
	}
}

// checkLimits checks the flags that bound what the command side takes,
// and gives the nice value of --control-nice; false after saying what
// was wrong.
func checkLimits(share float64, maxSessions int, niceWord string) (int, bool) {
	if share <= 0 || share > 100 {
		fmt.Fprintf(os.Stderr, "urouter daemon: --control-share %v: a percentage in (0, 100]\n", share)
		return 0, false
	}
	if maxSessions <= 0 {
		fmt.Fprintf(os.Stderr, "urouter daemon: --max-sessions %d: a number of clients, 1 or more\n", maxSessions)
		return 0, false
	}
	nice, err := dataplane.NiceIdle, error(nil)
	if niceWord != "idle" {
		if nice, err = strconv.Atoi(niceWord); err == nil && (nice < 0 || nice > 19) {
			err = strconv.ErrRange
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "urouter daemon: --control-nice %s: a nice value in [0, 19], or idle\n", niceWord)
		return 0, false
	}
	return nice, true
}

// restore applies the start-up config and the state file (nil if none),
// saying in srv's status how it went: a state that holds a snapshot
// stands for the config.
func restore(r *router.Router, srv *server.Server, lang statefile.Language, config, stateFile string, fpm *feed.Applier) (*statefile.State, error) {
	var st *statefile.State
	var saved *statefile.Loaded
	if stateFile != "" {
		var err error
		if st, saved, err = statefile.Read(stateFile, lang); err != nil {
			return nil, fmt.Errorf("state: %w", err)
		}
	}
	srv.Status.Config = config
	switch {
	case config == "":
	case st != nil && st.HasSnapshot():
		srv.Status.ConfigSkipped = true
		fmt.Fprintf(os.Stderr, "urouter daemon: the state %s holds the whole configuration: config %s not applied\n", stateFile, config)
	default:
		n, err := server.ApplyConfig(r, config)
		srv.Status.ConfigLines = n
		if err != nil {
			return nil, fmt.Errorf("config %s:\n%v", config, err)
		}
	}
	if st != nil {
		if err := st.Apply(saved, fpm); err != nil {
			return nil, fmt.Errorf("state: %w", err)
		}
	}
	return st, nil
}
