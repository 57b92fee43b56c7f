package control

import (
	"fmt"
	"net/netip"
	"sync"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/ndisc"
)

// `monitor [all | route | link | address | neigh] [label]` streams changes as they
// are published, as `ip monitor` does.

// MonitorRequest is what a monitor command asks to hear, and whether
// each event is labelled with its kind.
type MonitorRequest struct {
	route, link, addr, neigh, label bool
}

const (
	mnFile = iota + 1
	mnLabel
	mnLink
	mnAddress
	mnRoute
	mnNeigh
	mnAll
	mnHelp
	mnDev
	mnOther // an event kind the router does not publish
)

// monitorWords() are do_ipmonitor's words, in its order.
var monitorWords = sync.OnceValue(func() keywords {
	return newKeywords([]kw{{"file", true, mnFile}, {"label", true, mnLabel}, {"link", true, mnLink},
		{"address", true, mnAddress}, {"route", true, mnRoute}, {"mroute", true, mnOther},
		{"prefix", true, mnOther}, {"neigh", true, mnNeigh}, {"netconf", true, mnOther},
		{"rule", true, mnOther}, {"nsid", true, mnOther}, {"nexthop", true, mnOther},
		{"stats", false, mnOther}, {"all", false, mnAll}, {"all-nsid", true, mnOther},
		{"help", true, mnHelp}, {"dev", false, mnDev}})
})

// monitorCmd reads do_ipmonitor's words, all of them first as it does
// (an unknown word is its error even after one the router lacks).
func (s *Session) monitorCmd(args [][]byte) *cmdErr {
	req := &MonitorRequest{}
	var lacks []byte // the first word the router cannot follow
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch k := monitorWords().of(w); k {
		case mnLabel, mnAll: // all is only the banner: no objects means all
			req.label = true
		case mnLink:
			req.link = true
		case mnAddress:
			req.addr = true
		case mnRoute:
			req.route = true
		case mnNeigh:
			req.neigh = true
		case mnHelp:
			return monitorUsage()
		case mnFile, mnDev:
			v, err := ws.next()
			if err != nil {
				return err
			}
			if k == mnDev && s.r.Links.ByName(str(v)) == nil {
				return invarg("Device does not exist\n", v)
			}
			if lacks == nil {
				lacks = w
			}
		case mnOther:
			if lacks == nil {
				lacks = w
			}
		default:
			return parseErr("Argument \"%s\" is unknown, try \"ip monitor help\".", w)
		}
	}
	if lacks != nil {
		return unsupported(lacks)
	}
	if !req.route && !req.link && !req.addr && !req.neigh {
		req.route, req.link, req.addr, req.neigh = true, true, true, true
	}
	if s.opt.Batch {
		return &cmdErr{msg: "Error: monitor cannot run inside a batch.", code: 1}
	}
	s.monitor = req
	return nil
}

// Event is one change a monitor hears, or the route changes of one
// commit (a flush of a full table is one).
type Event struct {
	Routes  *fib6.Changes
	Link    *dataplane.Link
	Addr    netip.Prefix
	Neigh   *ndisc.Info
	Deleted bool
}

// Hears reports whether a monitor asking for q hears ev.
func (q *MonitorRequest) Hears(ev Event) bool {
	switch {
	case ev.Routes != nil:
		return q.route
	case ev.Neigh != nil:
		return q.neigh
	case ev.Addr.IsValid():
		return q.addr
	}
	return q.link
}

// HearsRoutes reports whether a monitor asking for q hears routes.
func (q *MonitorRequest) HearsRoutes() bool { return q.route }

// EventPrinter prints a monitor's events as ip monitor does, in text
// even with -j.
type EventPrinter struct {
	s     *Session
	p     *routePrinter
	label bool // each event after its kind ([ROUTE], ...)
}

// EventPrinter returns the printer of the events the session's monitor
// hears; nil if it ran no monitor.
func (s *Session) EventPrinter() *EventPrinter {
	if s.monitor == nil {
		return nil
	}
	p := s.printer(&showFilter{monitor: true})
	p.out = printer{w: s.out}
	return &EventPrinter{s: s, p: p, label: s.monitor.label}
}

// Lost says that n events were lost to a monitor that did not keep up.
func (ep *EventPrinter) Lost(n uint64) { fmt.Fprintf(ep.s.out, "(%d events lost)\n", n) }

// Print prints ev; false if the client went away meanwhile (a commit's
// routes may be many: its buffer fills and is sent as it goes).
func (ep *EventPrinter) Print(ev Event) bool {
	s, p := ep.s, ep.p
	label := func(l string) {
		if ep.label {
			s.out.WriteString(l)
		}
	}
	del := ""
	if ev.Deleted {
		del = "Deleted "
	}
	w := printer{w: s.out} // text, as ip monitor prints
	switch {
	case ev.Neigh != nil:
		label("[NEIGH]")
		w.text(del)
		s.printNeigh(&w, ev.Link, *ev.Neigh, true)
	case ev.Routes != nil:
		n := 0
		for c := range ev.Routes.All() {
			label("[ROUTE]")
			p.table = c.Table
			p.deleted = c.Op == fib6.Deleted
			p.add(c.Route)
			// the buffer goes out as it fills; a failed write shows here
			if n++; n%1024 == 0 && s.out.Flush() != nil {
				return false
			}
		}
	case ev.Addr.IsValid():
		label("[ADDR]")
		fmt.Fprintf(s.out, "%s%d: %s    inet6 %s scope %s \n       valid_lft forever preferred_lft forever\n",
			del, ev.Link.Index, ev.Link.Name, ev.Addr, scopeOf(ev.Addr.Addr()))
	default:
		label("[LINK]")
		w.text(del)
		s.printLink(&w, ev.Link, linkMsg{})
	}
	return true
}

func monitorUsage() *cmdErr {
	return parseErr("Usage: ip monitor [ all | OBJECTS ] [ label ]\nOBJECTS :=  link | address | route | neigh")
}
