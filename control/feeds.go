package control

import (
	"fmt"
	"time"

	"urouter/feed"
)

// Feeds are the daemon's route feeds, which `fpm show` and `mirror show`
// print: zebra's FPM session and the kernel tables followed.
type Feeds struct {
	FPM    *feed.FPM
	Tables []*feed.TableMirror
}

// showOnly checks the arguments of an object that only shows: none, or
// show or list.
func showOnly(args [][]byte, obj string) *cmdErr {
	if len(args) > 0 && !matches(args[0], "show") && !matches(args[0], "list") {
		return parseErr("Usage: urouter %s show", obj)
	}
	return nil
}

func (s *session) fpmCmd(args [][]byte) *cmdErr {
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
	if j := s.jsonArray(); j != nil {
		j.startObject()
		j.str("listen", st.Listen)
		j.str("state", fpmState(st))
		if st.Connected {
			j.str("peer", st.Peer)
			j.str("since", st.Since.UTC().Format(time.RFC3339))
		}
		j.uint("connects", f.Connects.Load())
		j.uint("frames", f.Frames.Load())
		j.uint("bytes", f.Bytes.Load())
		j.uint("closed_replaced", f.Replaced.Load())
		j.uint("closed_malformed", f.Malformed.Load())
		j.uint("closed_lost", f.Lost.Load())
		applierJSON(j, f.Applier)
		j.endObject()
		j.endArray()
		s.out.WriteByte('\n')
		return nil
	}
	fmt.Fprintf(s.out, "fpm listen %s %s", st.Listen, fpmState(st))
	if st.Connected {
		fmt.Fprintf(s.out, " peer %s since %s", st.Peer, st.Since.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(s.out, "\n    connects %d frames %d bytes %d\n    closed replaced %d malformed %d lost %d\n",
		f.Connects.Load(), f.Frames.Load(), f.Bytes.Load(), f.Replaced.Load(), f.Malformed.Load(), f.Lost.Load())
	s.applierText(f.Applier)
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

func (s *session) mirrorCmd(args [][]byte) *cmdErr {
	if err := showOnly(args, "mirror"); err != nil {
		return err
	}
	var ms []*feed.TableMirror
	if s.feeds != nil {
		ms = s.feeds.Tables
	}
	j := s.jsonArray()
	for _, m := range ms {
		if j != nil {
			j.startObject()
			j.uint("table", uint64(m.Table))
			j.str("synced", m.Synced().UTC().Format(time.RFC3339Nano))
			j.uint("events", m.Events.Load())
			j.uint("resyncs", m.Resyncs.Load())
			applierJSON(j, m.Applier)
			j.endObject()
			continue
		}
		fmt.Fprintf(s.out, "kernel table %s synced %s\n    events %d resyncs %d\n", tableString(m.Table),
			m.Synced().UTC().Format(time.RFC3339Nano), m.Events.Load(), m.Resyncs.Load())
		s.applierText(m.Applier)
	}
	if j != nil {
		j.endArray()
		s.out.WriteByte('\n')
	}
	return nil
}

func (s *session) applierText(a *feed.Applier) {
	st := &a.Stats
	routes, nhs := a.Owned()
	fmt.Fprintf(s.out, "    messages %d routes %d route-deletes %d nexthops %d nexthop-deletes %d\n"+
		"    skipped %d rejected %d malformed %d swept %d transactions %d\n"+
		"    installed routes %d nexthops %d pending-groups %d pending-overflow %d\n",
		st.Messages.Load(), st.Routes.Load(), st.RouteDeletes.Load(), st.Nexthops.Load(), st.NexthopDeletes.Load(),
		st.Skipped.Load(), st.Rejected.Load(), st.Malformed.Load(), st.Swept.Load(), st.Transactions.Load(), routes, nhs,
		a.Pending(), st.PendingOverflow.Load())
	if u := a.Updated(); u.UnixNano() > 0 {
		fmt.Fprintf(s.out, "    updated %s\n", u.UTC().Format(time.RFC3339Nano))
	}
	if e := a.LastError(); e != "" {
		fmt.Fprintf(s.out, "    last error: %s\n", e)
	}
}

func applierJSON(j *jsonw, a *feed.Applier) {
	st := &a.Stats
	routes, nhs := a.Owned()
	for _, c := range []struct {
		k string
		v uint64
	}{{"messages", st.Messages.Load()}, {"routes", st.Routes.Load()}, {"route_deletes", st.RouteDeletes.Load()},
		{"nexthops", st.Nexthops.Load()}, {"nexthop_deletes", st.NexthopDeletes.Load()}, {"skipped", st.Skipped.Load()},
		{"rejected", st.Rejected.Load()}, {"malformed", st.Malformed.Load()}, {"swept", st.Swept.Load()},
		{"transactions", st.Transactions.Load()}, {"installed_routes", uint64(routes)}, {"installed_nexthops", uint64(nhs)},
		{"pending_groups", uint64(a.Pending())}, {"pending_overflow", st.PendingOverflow.Load()}} {
		j.uint(c.k, c.v)
	}
	if e := a.LastError(); e != "" {
		j.str("last_error", e)
	}
	if u := a.Updated(); u.UnixNano() > 0 {
		j.str("updated", u.UTC().Format(time.RFC3339Nano))
	}
}
