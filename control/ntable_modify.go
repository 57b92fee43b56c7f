package control

import (
	"fmt"
	"strconv"
	"syscall"
	"time"

	"urouter/dataplane"
	"urouter/ndisc"
)

// The neighbour tables' knobs: ip ntable change name ndisc_cache dev DEV
// PARMS, and ip ntable show [dev DEV] [name ndisc_cache] (ipntable.c).
// Each Ethernet link has its own cache, so its thresholds are its own too.

func (s *session) ntableCmd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.ntableShow(nil)
	}
	w, rest := args[0], args[1:]
	switch { // do_ipntable's order
	case matches(w, "change") || matches(w, "chg"):
		return s.ntableChange(rest)
	case matches(w, "show") || matches(w, "lst") || matches(w, "list"):
		return s.ntableShow(rest)
	case matches(w, "help"):
		return parseErr("Usage: ip ntable change name NAME [ dev DEV ]\n" +
			"          [ thresh1 VAL ] [ thresh2 VAL ] [ thresh3 VAL ] [ gc_int MSEC ]\n" +
			"          [ PARMS ]\n" +
			"Usage: ip ntable show [ dev DEV ] [ name NAME ]\n" +
			"PARMS := [ base_reachable MSEC ] [ retrans MSEC ] [ gc_stale MSEC ]\n" +
			"         [ delay_probe MSEC ] [ queue LEN ]\n" +
			"         [ app_probes VAL ] [ ucast_probes VAL ] [ mcast_probes VAL ]\n" +
			"         [ unres_max VAL ] [ unres_src_max VAL ] [ solicit_rate VAL ] [ solicit_burst VAL ]")
	}
	return parseErr("Command \"%s\" is unknown, try \"ip ntable help\".", w)
}

// ntableKnobs are the PARMS and thresholds, each a field of ndisc.Params:
// a time in milliseconds or a count.
var ntableKnobs = []struct {
	name string
	ms   func(p *ndisc.Params) *time.Duration
	n    func(p *ndisc.Params) *int
}{
	{name: "base_reachable", ms: func(p *ndisc.Params) *time.Duration { return &p.BaseReachable }},
	{name: "retrans", ms: func(p *ndisc.Params) *time.Duration { return &p.Retrans }},
	{name: "gc_stale", ms: func(p *ndisc.Params) *time.Duration { return &p.GCStale }},
	{name: "delay_probe", ms: func(p *ndisc.Params) *time.Duration { return &p.DelayProbe }},
	{name: "gc_int", ms: func(p *ndisc.Params) *time.Duration { return &p.GCInterval }},
	{name: "queue", n: func(p *ndisc.Params) *int { return &p.QueueLen }},
	{name: "ucast_probes", n: func(p *ndisc.Params) *int { return &p.UcastProbes }},
	{name: "mcast_probes", n: func(p *ndisc.Params) *int { return &p.McastProbes }},
	{name: "thresh1", n: func(p *ndisc.Params) *int { return &p.Thresh1 }},
	{name: "thresh2", n: func(p *ndisc.Params) *int { return &p.Thresh2 }},
	{name: "thresh3", n: func(p *ndisc.Params) *int { return &p.Thresh3 }},
	// RFC 6583's, beyond iproute2's (ndisc/unres.go), named as sysctl's
	{name: "unres_max", n: func(p *ndisc.Params) *int { return &p.UnresMax }},
	{name: "unres_src_max", n: func(p *ndisc.Params) *int { return &p.UnresSrcMax }},
	{name: "solicit_rate", n: func(p *ndisc.Params) *int { return &p.SolicitRate }},
	{name: "solicit_burst", n: func(p *ndisc.Params) *int { return &p.SolicitBurst }},
}

// ntableWord is what ipntable_modify makes of w (every keyword exact):
// a knob's index, or one of ntName, ntDev, ntLacks (a knob the router
// lacks); -1 for none.
func ntableWord(w []byte) int {
	switch {
	case is(w, "name"):
		return ntName
	case is(w, "dev"):
		return ntDev
	case is(w, "app_probes"), is(w, "anycast_delay"), is(w, "proxy_delay"), is(w, "proxy_queue"), is(w, "locktime"):
		return ntLacks
	}
	for i, k := range ntableKnobs {
		if is(w, k.name) {
			return i
		}
	}
	return -1
}

const (
	ntName = 100 + iota
	ntDev
	ntLacks
)

func (s *session) ntableChange(args [][]byte) *cmdErr {
	var l *dataplane.Link
	named := false
	type set struct {
		i int
		v uint64
	}
	var sets []set
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		k := ntableWord(w)
		if k < 0 {
			return invarg("unknown", w)
		}
		v, err := ws.next()
		if err != nil {
			return err
		}
		switch {
		case k == ntName:
			if named {
				return duparg("NAME", v)
			}
			if !is(v, "ndisc_cache") {
				return extack("the router has one neighbour table, ndisc_cache")
			}
			named = true
		case k == ntDev:
			if l, err = s.link(v); err != nil {
				return err
			}
		case k == ntLacks:
			return unsupported(w)
		default:
			n, perr := strconv.ParseUint(str(v), 0, 32)
			if perr != nil {
				return invarg(fmt.Sprintf("\"%s\" value is invalid", ntableKnobs[k].name), v)
			}
			sets = append(sets, set{k, n})
		}
	}
	if !named {
		return parseErr("Error: argument \"NAME\" is required")
	}
	if len(sets) == 0 {
		return parseErr("Not enough information: changeable attributes required.")
	}
	links := s.r.Links.All()
	if l != nil {
		links = []*dataplane.Link{l}
	}
	for _, l := range links {
		t := l.Neigh()
		if t == nil {
			if len(links) == 1 {
				return answers(syscall.EOPNOTSUPP)
			}
			continue
		}
		p := t.Params()
		for _, x := range sets {
			k := ntableKnobs[x.i]
			if k.ms != nil {
				*k.ms(&p) = time.Duration(x.v) * time.Millisecond
			} else {
				*k.n(&p) = int(x.v)
			}
		}
		for _, x := range sets {
			if ntableKnobs[x.i].name == "queue" {
				p.QueueBytes = int(x.v) * ndisc.UnresFrame // the kernel's NDTPA_QUEUE_LEN
			}
		}
		if err := s.r.SetNeighParams(l, p); err != nil {
			return extack(err.Error())
		}
	}
	return nil
}
