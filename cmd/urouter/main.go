// Command urouter is the router: `urouter daemon` runs it, and
// `urouter [OPTIONS] OBJECT COMMAND ...` (iproute2's words) talks to it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"urouter/control"
	"urouter/dataplane/port"
	"urouter/feed"
	"urouter/metrics"
	"urouter/nexthop"
	"urouter/router"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "daemon" {
		os.Exit(daemon(os.Args[2:]))
	}
	os.Exit(control.Main(os.Args[1:]))
}

func daemon(args []string) int {
	fs := flag.NewFlagSet("urouter daemon", flag.ContinueOnError)
	config := fs.String("config", "", "apply this batch of commands at start")
	socket := fs.String("socket", "", "control socket (default $UROUTER_SOCKET or "+control.DefaultSocket+")")
	icmpRate := fs.Int("icmp-ratelimit", 1000, "ICMPv6 errors sent per second at most (0: no limit), as Linux's icmp_msgs_per_sec")
	icmpBurst := fs.Int("icmp-burst", 50, "ICMPv6 errors sent in a burst at most, as Linux's icmp_msgs_burst")
	destRate := fs.Int("icmp-dest-ratelimit", 100, "ms between ICMPv6 errors to one destination (0: no limit), as Linux's net.ipv6.icmp.ratelimit")
	destBurst := fs.Int("icmp-dest-burst", 6, "ICMPv6 errors to one destination in a burst at most (Linux's is 6)")
	hashPolicy := fs.Uint("multipath-hash-policy", 0, "multipath flow hash: 0 addresses, flow label and next header; 1 addresses, ports and next header (Linux's net.ipv6.fib_multipath_hash_policy)")
	probe := fs.Duration("router-probe-interval", router.DefaultRouterProbeInterval, "how often a gateway whose neighbour failed is solicited again, as Linux's router_probe_interval")
	fpmAddr := fs.String("fpm", "", "accept zebra's FPM connection on [ADDR]:PORT (FRR's default is 127.0.0.1:2620); off unless given")
	fpmHold := fs.Duration("fpm-hold", feed.DefaultHold, "after zebra reconnects, keep what its last session installed and it has not said again at least this long (a graceful-restart time), then sweep it once the session is quiet")
	mirrorTables := fs.String("mirror-table", "", "follow these kernel tables (ids, comma-separated) of the daemon's netns into the router's tables of the same ids")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://ADDR:PORT/metrics; off unless given")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *hashPolicy > nexthop.PolicyL4 {
		fmt.Fprintln(os.Stderr, "urouter daemon: --multipath-hash-policy is 0 or 1")
		return 2
	}
	if os.Getenv("GOGC") == "" {
		// A full table is a few MB of long-lived nodes, and a batch load
		// allocates them in a burst: collecting at 5x the live heap
		// rather than 2x keeps the collector from doubling the cost of a
		// load. The packet path allocates nothing either way.
		debug.SetGCPercent(400)
	}
	r := router.New()
	r.Decider.Hash.Policy = uint8(*hashPolicy)
	r.SetRouterProbeInterval(*probe)
	r.DP.SetICMPRate(*icmpRate, *icmpBurst)
	r.DP.SetICMPDestRate(time.Duration(*destRate)*time.Millisecond, *destBurst)
	sock := control.SocketPath(*socket)
	srv, err := control.Listen(sock, r)
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
	if *config != "" {
		if err := control.ApplyConfig(r, *config); err != nil {
			fmt.Fprintf(os.Stderr, "urouter daemon: config %s:\n%v\n", *config, err)
			srv.Close()
			return 1
		}
	}
	feeds, err := startFeeds(r, *fpmAddr, *mirrorTables, *fpmHold)
	if err != nil {
		fmt.Fprintln(os.Stderr, "urouter daemon:", err)
		srv.Close()
		return 1
	}
	defer feeds.close()
	srv.Feeds = &control.Feeds{FPM: feeds.fpm, Tables: feeds.tables}
	if *metricsAddr != "" {
		ms, err := metrics.Serve(*metricsAddr, metrics.NewCollector(r, metrics.Feeds{FPM: feeds.fpm, Tables: feeds.tables}))
		if err != nil {
			fmt.Fprintln(os.Stderr, "urouter daemon: --metrics:", err)
			srv.Close()
			return 1
		}
		defer func() { _ = ms.Close() }() // at exit: nobody is left to hear of it
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		srv.Close()
	}()
	r.Start()
	defer r.Close()
	if err := srv.Serve(); err != nil {
		fmt.Fprintln(os.Stderr, "urouter daemon:", err)
		return 1
	}
	for _, l := range r.Links.All() {
		if s := l.EtherStats(); s != nil {
			fmt.Fprintf(os.Stderr, "urouter daemon: %s: %s\n", l.Name, s)
			if err := r.DeleteLink(l); err != nil { // gives an interface back its own IPv6
				fmt.Fprintf(os.Stderr, "urouter daemon: %s: %v\n", l.Name, err)
			}
		}
	}
	return 0
}

// feeds are the route feeds the daemon runs: zebra over FPM, kernel tables.
type feeds struct {
	fpm    *feed.FPM
	tables []*feed.TableMirror
}

// startFeeds starts them once the configuration has given the links their
// mirrors, through which the feeds name the links.
func startFeeds(r *router.Router, fpmAddr, tables string, hold time.Duration) (*feeds, error) {
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
		s, err := feed.ListenFPM(fpmAddr, feed.NewApplier(r, r.LinkOfKernel), feed.Timers{Hold: hold})
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
