// Package metrics owns the router's Prometheus endpoint: a Collector that
// reads the counters the router already keeps (links, mirrors, tables,
// nexthops, neighbours, rules, route feeds) when it is scraped, so nothing
// is added to the packet path, and the HTTP server that serves /metrics.
//
// metrics imports router, fib6 and feed (the links' and neighbours'
// counters come through router); only the binary imports it.
package metrics

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"urouter/feed"
	"urouter/fib6"
	"urouter/router"
)

// Feeds are what the collector reports of the route feeds; any may be nil.
type Feeds struct {
	FPM    *feed.FPM
	Tables []*feed.TableMirror
}

// Collector reports the router's state at scrape time.
type Collector struct {
	r     *router.Router
	feeds Feeds
}

// NewCollector returns a collector of r and its feeds.
func NewCollector(r *router.Router, f Feeds) *Collector { return &Collector{r: r, feeds: f} }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("urouter_"+name, help, labels, nil)
}

var (
	linkUp        = desc("link_up", "1 if the link is administratively up.", "link")
	linkMTU       = desc("link_mtu_bytes", "The link's MTU.", "link")
	rxPackets     = desc("link_receive_packets_total", "Packets received on the link.", "link")
	rxBytes       = desc("link_receive_bytes_total", "Bytes of IPv6 packets received on the link.", "link")
	txPackets     = desc("link_transmit_packets_total", "Packets sent out of the link.", "link")
	txBytes       = desc("link_transmit_bytes_total", "Bytes of IPv6 packets sent out of the link.", "link")
	rxErrors      = desc("link_receive_errors_total", "Reads from the link that failed.", "link")
	txErrors      = desc("link_transmit_errors_total", "Writes to the link that failed.", "link")
	drops         = desc("link_drops_total", "Packets received on the link and dropped, by reason.", "link", "reason")
	icmpLimited   = desc("link_icmp_ratelimited_total", "ICMPv6 errors earned by packets from the link and held back by the rate limits.", "link")
	coppPackets   = desc("link_copp_packets_total", "Packets from the link punted to the router, by CoPP class, passed or dropped by its limit.", "link", "class", "verdict")
	mirrorUp      = desc("mirror_to_kernel_packets_total", "Packets given to the kernel through the link's mirror.", "link", "mirror")
	mirrorUpB     = desc("mirror_to_kernel_bytes_total", "Bytes given to the kernel through the link's mirror.", "link", "mirror")
	mirrorDown    = desc("mirror_from_kernel_packets_total", "Packets the kernel sent out of the link's mirror.", "link", "mirror")
	mirrorDownB   = desc("mirror_from_kernel_bytes_total", "Bytes the kernel sent out of the link's mirror.", "link", "mirror")
	mirrorDropped = desc("mirror_dropped_total", "Packets lost crossing the link's mirror, either way.", "link", "mirror")
	mirrorRAHeld  = desc("mirror_ra_held_total", "The kernel's Router Advertisements kept off a link whose RAs are the router's.", "link", "mirror")
	neighbours    = desc("neighbours", "Neighbour cache entries, by NUD state.", "link", "state")
	neighLimited  = desc("neighbour_limited_total", "What the neighbour cache refused or gave up under RFC 6583's bounds, by reason: "+
		"table_full (a new entry at gc_thresh3), source_limited (unres_src_max), gave_way (an unanswered entry removed for a new one), "+
		"solicit_limited (solicit_rate), held_limited (unres_total_bytes).", "link", "reason")
	neighHeld = desc("neighbour_held_bytes", "Bytes every neighbour cache holds for resolution, together.")
	linkVRF   = desc("link_vrf", "1 for a link in a VRF (the VRF itself included): the VRF's name, to join on link.", "link", "vrf")
	routes    = desc("routes", "Routes in the table; vrf names the VRF whose table it is, if any.", "table", "vrf")
	publishes = desc("table_publish_duration_seconds", "How long the table's commits took to publish.", "table")
	nexthops  = desc("nexthops", "Nexthop objects, single nexthops and groups.", "kind")
	rulesN    = desc("rules", "Policy rules.")

	fpmConnected = desc("fpm_connected", "1 while zebra is connected over FPM.")
	fpmSettled   = desc("fpm_settled", "1 once the FPM session's replay has settled and been swept against.")
	fpmConnects  = desc("fpm_connects_total", "FPM connections accepted.")
	fpmFrames    = desc("fpm_frames_total", "FPM frames read.")
	fpmBytes     = desc("fpm_bytes_total", "Bytes read from FPM connections.")
	fpmClosed    = desc("fpm_closed_total", "FPM connections the router closed, by reason: replaced by a newer one, a malformed frame, a read error.", "reason")
	mirrorEvents = desc("table_mirror_events_total", "Route and nexthop notifications read from the kernel.", "table")
	mirrorResync = desc("table_mirror_resyncs_total", "Dumps of the kernel table (the first, and after an overrun).", "table")

	feedCounters = []struct {
		d   *prometheus.Desc
		get func(*feed.Stats) uint64
	}{
		{desc("feed_messages_total", "rtnetlink messages decoded.", "feed"), func(s *feed.Stats) uint64 { return s.Messages.Load() }},
		{desc("feed_routes_total", "Routes added or replaced.", "feed"), func(s *feed.Stats) uint64 { return s.Routes.Load() }},
		{desc("feed_route_deletes_total", "Routes deleted.", "feed"), func(s *feed.Stats) uint64 { return s.RouteDeletes.Load() }},
		{desc("feed_nexthops_total", "Nexthop objects added or replaced.", "feed"), func(s *feed.Stats) uint64 { return s.Nexthops.Load() }},
		{desc("feed_nexthop_deletes_total", "Nexthop objects deleted.", "feed"), func(s *feed.Stats) uint64 { return s.NexthopDeletes.Load() }},
		{desc("feed_skipped_total", "Messages passed over (IPv4, unused types, unknown interfaces).", "feed"), func(s *feed.Stats) uint64 { return s.Skipped.Load() }},
		{desc("feed_rejected_total", "Messages the tables or the registry refused.", "feed"), func(s *feed.Stats) uint64 { return s.Rejected.Load() }},
		{desc("feed_malformed_total", "Frames or messages refused as malformed.", "feed"), func(s *feed.Stats) uint64 { return s.Malformed.Load() }},
		{desc("feed_swept_total", "Routes and nexthops an earlier session left, swept.", "feed"), func(s *feed.Stats) uint64 { return s.Swept.Load() }},
		{desc("feed_transactions_total", "Transactions committed.", "feed"), func(s *feed.Stats) uint64 { return s.Transactions.Load() }},
		{desc("feed_pending_overflow_total", "Nexthop groups refused because too many already waited for their members.", "feed"), func(s *feed.Stats) uint64 { return s.PendingOverflow.Load() }},
	}
	feedRoutes   = desc("feed_installed_routes", "Routes the feed has installed.", "feed")
	feedNexthops = desc("feed_installed_nexthops", "Nexthop objects the feed has installed.", "feed")
	feedPending  = desc("feed_pending_groups", "Nexthop groups waiting for their members.", "feed")
)

// Describe sends every descriptor the collector uses.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{linkUp, linkMTU, rxPackets, rxBytes, txPackets, txBytes, rxErrors, txErrors,
		drops, icmpLimited, coppPackets, linkVRF, mirrorUp, mirrorUpB, mirrorDown, mirrorDownB, mirrorDropped, mirrorRAHeld, neighbours, neighLimited, neighHeld, routes, publishes,
		nexthops, rulesN, fpmConnected, fpmSettled, fpmConnects, fpmFrames, fpmBytes, fpmClosed, mirrorEvents, mirrorResync,
		feedRoutes, feedNexthops, feedPending} {
		ch <- d
	}
	for _, f := range feedCounters {
		ch <- f.d
	}
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Collect reads the counters now.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	r := c.r
	for _, l := range r.Links.All() {
		n := l.Name
		gauge(ch, linkUp, b2f(l.Up()), n)
		gauge(ch, linkMTU, float64(l.MTU()), n)
		if m := r.Links.ByIndex(l.Master()); m != nil {
			gauge(ch, linkVRF, 1, n, m.Name)
		} else if l.IsVRF() {
			gauge(ch, linkVRF, 1, n, n)
		}
		s := l.Stats()
		counter(ch, rxPackets, s.RxPackets, n)
		counter(ch, rxBytes, s.RxBytes, n)
		counter(ch, txPackets, s.TxPackets, n)
		counter(ch, txBytes, s.TxBytes, n)
		counter(ch, rxErrors, s.RxErrors, n)
		counter(ch, txErrors, s.TxErrors, n)
		for _, d := range s.Drops {
			counter(ch, drops, d.Count, n, d.Reason)
		}
		counter(ch, icmpLimited, s.ICMPLimited, n)
		for _, k := range s.CoPP {
			counter(ch, coppPackets, k.Passed, n, k.Class, "passed")
			counter(ch, coppPackets, k.Dropped, n, k.Class, "dropped")
		}
		if m := l.Mirror(); m != nil {
			counter(ch, mirrorUp, m.UpPackets.Load(), n, m.Name)
			counter(ch, mirrorUpB, m.UpBytes.Load(), n, m.Name)
			counter(ch, mirrorDown, m.DownPackets.Load(), n, m.Name)
			counter(ch, mirrorDownB, m.DownBytes.Load(), n, m.Name)
			counter(ch, mirrorDropped, m.Dropped.Load(), n, m.Name)
			counter(ch, mirrorRAHeld, m.RAsHeld.Load(), n, m.Name)
		}
		if nt := l.Neigh(); nt != nil {
			by := map[string]int{}
			for _, e := range nt.Dump() {
				by[strings.ToLower(e.State.String())]++
			}
			for st, k := range by {
				gauge(ch, neighbours, float64(k), n, st)
			}
			st := nt.Stats()
			for _, c := range []struct {
				reason string
				v      uint64
			}{{"table_full", st.TableFulls}, {"source_limited", st.SourceLimited}, {"gave_way", st.GaveWay},
				{"solicit_limited", st.SolicitLimited}, {"held_limited", st.HeldLimited}} {
				counter(ch, neighLimited, c.v, n, c.reason)
			}
		}
	}
	gauge(ch, neighHeld, float64(c.r.Held()))
	vrfOf := map[uint32]string{}
	for _, l := range r.Links.All() {
		if _, t := l.L3(); l.IsVRF() && vrfOf[t] == "" {
			vrfOf[t] = l.Name
		}
	}
	for _, t := range r.Tables.All() {
		id := tableLabel(t.ID())
		gauge(ch, routes, float64(t.Len()), id, vrfOf[t.ID()])
		p := t.Publishes()
		bs := make(map[float64]uint64, len(fib6.PublishBuckets))
		for i, b := range fib6.PublishBuckets {
			bs[b.Seconds()] = p.Cumulative[i]
		}
		ch <- prometheus.MustNewConstHistogram(publishes, p.Count, p.Total.Seconds(), bs, id)
	}
	singles, groups := 0, 0
	for _, v := range r.Nexthops.List() {
		if v.IsGroup() {
			groups++
		} else {
			singles++
		}
	}
	gauge(ch, nexthops, float64(singles), "single")
	gauge(ch, nexthops, float64(groups), "group")
	gauge(ch, rulesN, float64(r.Rules.Load().Len()))
	if f := c.feeds.FPM; f != nil {
		st := f.Status()
		gauge(ch, fpmConnected, b2f(st.Connected))
		gauge(ch, fpmSettled, b2f(st.Connected && st.Settled))
		counter(ch, fpmConnects, f.Connects.Load())
		counter(ch, fpmFrames, f.Frames.Load())
		counter(ch, fpmBytes, f.Bytes.Load())
		counter(ch, fpmClosed, f.Replaced.Load(), "replaced")
		counter(ch, fpmClosed, f.Applier.Stats.Malformed.Load(), "malformed")
		counter(ch, fpmClosed, f.Lost.Load(), "lost")
		feedMetrics(ch, "fpm", f.Applier)
	}
	for _, m := range c.feeds.Tables {
		id := tableLabel(m.Table)
		counter(ch, mirrorEvents, m.Events.Load(), id)
		counter(ch, mirrorResync, m.Resyncs.Load(), id)
		feedMetrics(ch, "table "+id, m.Applier)
	}
}

func feedMetrics(ch chan<- prometheus.Metric, name string, a *feed.Applier) {
	for _, f := range feedCounters {
		counter(ch, f.d, f.get(&a.Stats), name)
	}
	rs, ns := a.Owned()
	gauge(ch, feedRoutes, float64(rs), name)
	gauge(ch, feedNexthops, float64(ns), name)
	gauge(ch, feedPending, float64(a.Pending()), name)
}

func tableLabel(id uint32) string {
	switch id {
	case fib6.TableMain:
		return "main"
	case fib6.TableLocal:
		return "local"
	case fib6.TableDefault:
		return "default"
	}
	return strconv.FormatUint(uint64(id), 10)
}

// Server serves /metrics.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Serve listens on addr (host:port) and serves c's metrics, with the Go
// runtime's and the process's, at /metrics.
func Serve(addr string, c *Collector) (*Server, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: nil, MaxRequestsInFlight: 4}))
	// A scraper that stalls is cut off; it holds no lock while it does.
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("metrics %s: %v", addr, err)
		}
	}()
	return s, nil
}

// Addr is where it listens.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}
