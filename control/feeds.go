package control

import (
	"time"

	"urouter/feed"
	"urouter/fib6"
)

// Feeds are the daemon's route feeds, which `fpm show` and `mirror show`
// print: zebra's FPM session and the kernel tables followed.
type Feeds struct {
	FPM    *feed.FPM
	Tables []*feed.TableMirror
}

// appliers are the feeds' appliers.
func (f *Feeds) appliers() []*feed.Applier {
	if f == nil {
		return nil
	}
	var as []*feed.Applier
	if f.FPM != nil {
		as = append(as, f.FPM.Applier)
	}
	for _, m := range f.Tables {
		as = append(as, m.Applier)
	}
	return as
}

// ownsRoute reports whether a feed installed route r of table.
func (f *Feeds) ownsRoute(table uint32, r *fib6.Route) bool {
	for _, a := range f.appliers() {
		if a.Owns(table, r.Dst, r.Src, r.Metric) {
			return true
		}
	}
	return false
}

// ownsNexthop reports whether a feed installed nexthop object id.
func (f *Feeds) ownsNexthop(id uint32) bool {
	for _, a := range f.appliers() {
		if a.OwnsNexthop(id) {
			return true
		}
	}
	return false
}

// showOnly checks the arguments of an object that only shows: none, or
// show or list.
func showOnly(args [][]byte, obj string) *cmdErr {
	if len(args) > 0 && !matches(args[0], "show") && !matches(args[0], "list") {
		return showOnlyUsage(obj)
	}
	return nil
}

func showOnlyUsage(obj string) *cmdErr { return parseErr("Usage: urouter %s show", obj) }

func (s *Session) fpmCmd(args [][]byte) *cmdErr {
	if err := showOnly(args, "fpm"); err != nil {
		return err
	}
	var f *feed.FPM
	if s.feeds != nil {
		f = s.feeds.FPM
	}
	if f == nil {
		return extack("FPM is off (urouter daemon --fpm [ADDR]:PORT).")
	}
	st := f.Status()
	w := s.newPrinter()
	w.begin()
	w.openObject("")
	w.str("listen", "fpm listen %s", st.Listen)
	w.str("state", " %s", fpmState(st))
	if st.Connected {
		w.str("peer", " peer %s", st.Peer)
		w.str("since", " since %s", st.Since.UTC().Format(time.RFC3339))
	}
	w.uint("connects", "\n    connects %d", f.Connects.Load())
	w.uint("frames", " frames %d", f.Frames.Load())
	w.uint("bytes", " bytes %d\n", f.Bytes.Load())
	w.uint("closed_replaced", "    closed replaced %d", f.Replaced.Load())
	w.uint("closed_malformed", " malformed %d", f.Applier.Stats.Malformed.Load())
	w.uint("closed_lost", " lost %d\n", f.Lost.Load())
	printApplier(&w, f.Applier)
	w.closeObject()
	w.end()
	return nil
}

func fpmState(st feed.Status) string {
	switch {
	case !st.Connected:
		return "disconnected"
	case st.Settled:
		return "connected"
	}
	return "replaying" // routes of the last session not yet swept
}

func (s *Session) mirrorCmd(args [][]byte) *cmdErr {
	if err := showOnly(args, "mirror"); err != nil {
		return err
	}
	var ms []*feed.TableMirror
	if s.feeds != nil {
		ms = s.feeds.Tables
	}
	w := s.newPrinter()
	w.begin()
	for _, m := range ms {
		w.openObject("")
		w.uint("table", "", uint64(m.Table))
		w.text("kernel table " + tableString(m.Table))
		w.str("synced", " synced %s\n", m.Synced().UTC().Format(time.RFC3339Nano))
		w.uint("events", "    events %d", m.Events.Load())
		w.uint("resyncs", " resyncs %d\n", m.Resyncs.Load())
		printApplier(&w, m.Applier)
		w.closeObject()
	}
	w.end()
	return nil
}

// printApplier prints what a feed's applier did and holds.
func printApplier(w *printer, a *feed.Applier) {
	st := &a.Stats
	routes, nhs := a.Owned()
	w.uint("messages", "    messages %d", st.Messages.Load())
	w.uint("routes", " routes %d", st.Routes.Load())
	w.uint("route_deletes", " route-deletes %d", st.RouteDeletes.Load())
	w.uint("nexthops", " nexthops %d", st.Nexthops.Load())
	w.uint("nexthop_deletes", " nexthop-deletes %d\n", st.NexthopDeletes.Load())
	w.uint("skipped", "    skipped %d", st.Skipped.Load())
	w.uint("rejected", " rejected %d", st.Rejected.Load())
	w.uint("malformed", " malformed %d", st.Malformed.Load())
	w.uint("swept", " swept %d", st.Swept.Load())
	w.uint("transactions", " transactions %d\n", st.Transactions.Load())
	w.uint("installed_routes", "    installed routes %d", uint64(routes))
	w.uint("installed_nexthops", " nexthops %d", uint64(nhs))
	w.uint("pending_groups", " pending-groups %d", uint64(a.Pending()))
	w.uint("pending_overflow", " pending-overflow %d\n", st.PendingOverflow.Load())
	// JSON names the last error before the time of the last update, text after
	e := a.LastError()
	if e != "" && w.json() {
		w.str("last_error", "", e)
	}
	if u := a.Updated(); u.UnixNano() > 0 {
		w.str("updated", "    updated %s\n", u.UTC().Format(time.RFC3339Nano))
	}
	if e != "" && !w.json() {
		w.str("last_error", "    last error: %s\n", e)
	}
}
