package control

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"

	"urouter/dataplane"
	"urouter/router"
)

// The neighbour tables' knobs: ip ntable change name ndisc_cache dev DEV
// PARMS, and ip ntable show [dev DEV] [name ndisc_cache] (ipntable.c).
// Each Ethernet link has its own cache, so its thresholds are its own too.

func (s *Session) ntableCmd(args [][]byte) *cmdErr {
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
		return ntableUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip ntable help\".", w)
}

func ntableUsage() *cmdErr {
	return parseErr("Usage: ip ntable change name NAME [ dev DEV ]\n" +
		"          [ thresh1 VAL ] [ thresh2 VAL ] [ thresh3 VAL ] [ gc_int MSEC ]\n" +
		"          [ PARMS ]\n" +
		"Usage: ip ntable show [ dev DEV ] [ name NAME ]\n" +
		"PARMS := [ base_reachable MSEC ] [ retrans MSEC ] [ gc_stale MSEC ]\n" +
		"         [ delay_probe MSEC ] [ queue LEN ]\n" +
		"         [ app_probes VAL ] [ ucast_probes VAL ] [ mcast_probes VAL ]\n" +
		"         [ unres_max VAL ] [ unres_src_max VAL ] [ solicit_rate VAL ] [ solicit_burst VAL ]")
}

// ntableKnobs are the PARMS and thresholds, each ntable's word for a
// knob of net.ipv6.neigh.LINK, which the router's table sets and bounds.
var ntableKnobs = []struct{ name, sysctl string }{
	{"base_reachable", "base_reachable_time_ms"},
	{"retrans", "retrans_time_ms"},
	{"gc_stale", "gc_stale_time"},
	{"delay_probe", "delay_first_probe_time"},
	{"gc_int", "gc_interval"},
	{"queue", "unres_qlen"}, // packets, and bytes as the kernel's NDTPA_QUEUE_LEN
	{"ucast_probes", "ucast_solicit"},
	{"mcast_probes", "mcast_solicit"},
	{"thresh1", "gc_thresh1"},
	{"thresh2", "gc_thresh2"},
	{"thresh3", "gc_thresh3"},
	// RFC 6583's, beyond iproute2's (ndisc/unres.go), named as sysctl's
	{"unres_max", "unres_max"},
	{"unres_src_max", "unres_src_max"},
	{"solicit_rate", "solicit_rate"},
	{"solicit_burst", "solicit_burst"},
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

func (s *Session) ntableChange(args [][]byte) *cmdErr {
	var l *dataplane.Link
	named := false
	var sets []router.NeighChange
	var said []int // each change's value's index in args, for an error
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
			sets = append(sets, router.NeighChange{Knob: ntableKnobs[k].sysctl, V: n})
			said = append(said, ws.i)
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
		var bad *router.NeighValueError
		if err := s.r.ChangeNeigh(l, sets); errors.As(err, &bad) {
			i := said[bad.Change] // the value's index in args
			return invarg(fmt.Sprintf("\"%s\" value is invalid", ntableKnobs[ntableWord(args[i-1])].name), args[i])
		} else if err != nil {
			return extack(err.Error())
		}
	}
	return nil
}
