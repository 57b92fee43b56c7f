package control

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"sync/atomic"

	"urouter/dataplane"
	"urouter/fib6"
	"urouter/ndisc"
	"urouter/router"
)

// `monitor [all | route | link | address | neigh] [label]` streams changes as they
// are published, as `ip monitor` does.

type monitorReq struct {
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
func (s *session) monitorCmd(args [][]byte) *cmdErr {
	req := &monitorReq{}
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
			return parseErr("Usage: ip monitor [ all | OBJECTS ] [ label ]\nOBJECTS :=  link | address | route | neigh")
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

// event is one change a monitor hears, or the route changes of one
// commit (a flush of a full table is one).
type event struct {
	routes  *fib6.Changes
	link    *dataplane.Link
	addr    netip.Prefix
	neigh   *ndisc.Info
	deleted bool
}

type subscriber struct {
	req  monitorReq
	ch   chan event
	lost atomic.Uint64
}

// hub hands the router's changes to the monitors. Changes are recorded
// only while a monitor listens.
type hub struct {
	r      *router.Router
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	routes int
}

func (h *hub) subscribe(req monitorReq) *subscriber {
	s := &subscriber{req: req, ch: make(chan event, 4096)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[*subscriber]struct{}{}
	}
	h.subs[s] = struct{}{}
	if req.route {
		if h.routes++; h.routes == 1 {
			h.r.Tables.Watch(h.routeChanges)
		}
	}
	return s
}

// listening is how many monitors listen.
func (h *hub) listening() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
	if s.req.route {
		if h.routes--; h.routes == 0 {
			h.r.Tables.Watch(nil)
		}
	}
}

func (h *hub) publish(ev event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.publishLocked(ev)
}

// publishLocked is publish with h.mu held.
func (h *hub) publishLocked(ev event) {
	for s := range h.subs {
		if ev.routes != nil && !s.req.route || ev.neigh != nil && !s.req.neigh ||
			ev.link != nil && ev.neigh == nil && !ev.addr.IsValid() && !s.req.link || ev.addr.IsValid() && !s.req.addr {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			// a monitor that cannot keep up loses events, never blocks the router
			if ev.routes != nil {
				s.lost.Add(uint64(ev.routes.Len()))
			} else {
				s.lost.Add(1)
			}
		}
	}
}

// routeChanges hands a commit's changes to the monitors whole, as one
// event: each monitor's queue then holds commits, not routes, and a
// monitor that keeps up hears every route of the largest commit (a flush
// of a full table), in its own goroutine, from the version it deleted.
func (h *hub) routeChanges(_ *fib6.Table, cs *fib6.Changes) {
	h.publish(event{routes: cs})
}

// routerEvent hears the router's link and address changes.
func (h *hub) routerEvent(e router.Event) {
	h.publish(event{link: e.Link, addr: e.Addr, deleted: e.Kind == router.LinkDeleted || e.Kind == router.AddrDeleted})
}

// neighEvent hears a neighbour's change of state, as the link's cache has
// it now, in its new state.
func (h *hub) neighEvent(l *dataplane.Link, a netip.Addr, _, to ndisc.State) {
	i := ndisc.Info{Addr: a, State: to}
	if t := l.Neigh(); t != nil {
		_, i.MAC = t.State(a)
		i.HasMAC = to&ndisc.Valid != 0
	}
	h.publish(event{link: l, neigh: &i, deleted: to == ndisc.None})
}

// stream sends events to the session's client until it goes away.
func (h *hub) stream(s *session, in *bufio.Reader) {
	sub := h.subscribe(*s.monitor)
	defer h.unsubscribe(sub)
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in) // the client sends nothing more: EOF or an error, it left
		close(gone)
	}()
	p := s.printer(&showFilter{monitor: true})
	p.out = printer{w: s.out} // ip monitor prints text even with -j
	for {
		select {
		case <-gone:
			return
		case ev := <-sub.ch:
			if n := sub.lost.Swap(0); n > 0 {
				fmt.Fprintf(s.out, "(%d events lost)\n", n)
			}
			if !h.format(s, p, ev) || s.out.Flush() != nil {
				return
			}
		}
	}
}

// format prints ev; false if the client went away meanwhile (a commit's
// routes may be many: its buffer fills and is sent as it goes).
func (h *hub) format(s *session, p *routePrinter, ev event) bool {
	label := func(l string) {
		if s.monitor.label {
			s.out.WriteString(l)
		}
	}
	del := ""
	if ev.deleted {
		del = "Deleted "
	}
	w := printer{w: s.out} // text, as ip monitor prints
	switch {
	case ev.neigh != nil:
		label("[NEIGH]")
		w.text(del)
		s.printNeigh(&w, ev.link, *ev.neigh, true)
	case ev.routes != nil:
		n := 0
		for c := range ev.routes.All() {
			label("[ROUTE]")
			p.table = c.Table
			p.deleted = c.Op == fib6.Deleted
			p.add(c.Route)
			// the buffer goes out as it fills; a failed write shows here
			if n++; n%1024 == 0 && s.out.Flush() != nil {
				return false
			}
		}
	case ev.addr.IsValid():
		label("[ADDR]")
		fmt.Fprintf(s.out, "%s%d: %s    inet6 %s scope %s \n       valid_lft forever preferred_lft forever\n",
			del, ev.link.Index, ev.link.Name, ev.addr, scopeOf(ev.addr.Addr()))
	default:
		label("[LINK]")
		w.text(del)
		s.printLink(&w, ev.link, false)
	}
	return true
}
