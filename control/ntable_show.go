package control

import (
	"fmt"
	"time"

	"urouter/dataplane"
	"urouter/ndisc"
)

// Showing the neighbour tables' knobs: ip ntable show, as ipntable.c
// prints them.

func (s *Session) ntableShow(args [][]byte) *cmdErr {
	var only *dataplane.Link
	named := true
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ { // ipntable_show's words, exact
		w := args[ws.i]
		if !is(w, "dev") && !is(w, "name") {
			return invarg("unknown", w)
		}
		v, err := ws.next()
		switch {
		case err != nil:
			return err
		case is(w, "name"):
			named = is(v, "ndisc_cache") // another table: nothing to show
		case is(v, "none"):
			named = false // the tables' own entries: the router's are all its links'
		default:
			if only = s.r.Links.ByName(str(v)); only == nil {
				return invarg("\"DEV\" is invalid", v)
			}
		}
	}
	if !named {
		return nil
	}
	links := s.r.Links.All()
	if only != nil {
		links = []*dataplane.Link{only}
	}
	for _, l := range links {
		t := l.Neigh()
		if t == nil {
			continue
		}
		p := t.Params()
		ms := func(d time.Duration) int64 { return d.Milliseconds() }
		fmt.Fprintf(s.out, "inet6 ndisc_cache \n    dev %s \n", l.Name)
		fmt.Fprintf(s.out, "    thresh1 %d thresh2 %d thresh3 %d gc_int %d \n", p.Thresh1, p.Thresh2, p.Thresh3, ms(p.GCInterval))
		fmt.Fprintf(s.out, "    entries %d reachable %d base_reachable %d retrans %d \n", t.Len(), ms(t.ReachableTime()), ms(p.BaseReachable), ms(p.Retrans))
		fmt.Fprintf(s.out, "    gc_stale %d delay_probe %d queue %d \n", ms(p.GCStale), ms(p.DelayProbe), p.QueueLen)
		fmt.Fprintf(s.out, "    app_probes 0 ucast_probes %d mcast_probes %d \n", p.UcastProbes, p.McastProbes)
		fmt.Fprintf(s.out, "    unres_max %d unres_src_max %d solicit_rate %d solicit_burst %d \n", p.UnresMax, p.UnresSrcMax, p.SolicitRate, p.SolicitBurst)
		if s.opt.Stats > 0 {
			ntableStats(s, t.Stats())
		}
		fmt.Fprintln(s.out)
	}
	return nil
}

// ntableStats are Linux's ndt_stats that the router keeps (ipntable.c's
// print_ndtstats), then what it refused under a flood (ndisc/unres.go).
func ntableStats(s *Session, st ndisc.Stats) {
	fmt.Fprintf(s.out, "    stats:\n")
	fmt.Fprintf(s.out, "        unres_discards %d periodic_gc_runs %d forced_gc_runs %d table_fulls %d \n",
		st.UnresDiscards, st.PeriodicGCs, st.ForcedGCs, st.TableFulls)
	fmt.Fprintf(s.out, "        unresolved %d unres_src_limited %d gave_way %d solicit_limited %d held_limited %d \n",
		st.Unresolved, st.SourceLimited, st.GaveWay, st.SolicitLimited, st.HeldLimited)
}
