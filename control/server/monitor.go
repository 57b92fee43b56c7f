package server

import (
	"bufio"
	"io"
	"net/netip"
	"sync"
	"sync/atomic"

	"urouter/control"
	"urouter/dataplane"
	"urouter/fib6"
	"urouter/ndisc"
	"urouter/router"
)

// The monitors' hub: the router's changes handed to each session that
// runs monitor, which prints them (control.EventPrinter).

type subscriber struct {
	req  control.MonitorRequest
	ch   chan control.Event
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

func (h *hub) subscribe(req control.MonitorRequest) *subscriber {
	s := &subscriber{req: req, ch: make(chan control.Event, 4096)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[*subscriber]struct{}{}
	}
	h.subs[s] = struct{}{}
	if req.HearsRoutes() {
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
	if s.req.HearsRoutes() {
		if h.routes--; h.routes == 0 {
			h.r.Tables.Watch(nil)
		}
	}
}

func (h *hub) publish(ev control.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.publishLocked(ev)
}

// publishLocked is publish with h.mu held.
func (h *hub) publishLocked(ev control.Event) {
	for s := range h.subs {
		if !s.req.Hears(ev) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			// a monitor that cannot keep up loses events, never blocks the router
			if ev.Routes != nil {
				s.lost.Add(uint64(ev.Routes.Len()))
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
	h.publish(control.Event{Routes: cs})
}

// routerEvent hears the router's link and address changes.
func (h *hub) routerEvent(e router.Event) {
	h.publish(control.Event{Link: e.Link, Addr: e.Addr, Deleted: e.Kind == router.LinkDeleted || e.Kind == router.AddrDeleted})
}

// neighEvent hears a neighbour's change of state, as the link's cache has
// it now, in its new state.
func (h *hub) neighEvent(l *dataplane.Link, a netip.Addr, _, to ndisc.State) {
	i := ndisc.Info{Addr: a, State: to}
	if t := l.Neigh(); t != nil {
		_, i.MAC = t.State(a)
		i.HasMAC = to&ndisc.Valid != 0
	}
	h.publish(control.Event{Link: l, Neigh: &i, Deleted: to == ndisc.None})
}

// stream sends events to the session's client until it goes away.
func (h *hub) stream(s *control.Session, in *bufio.Reader) {
	sub := h.subscribe(*s.Monitor())
	defer h.unsubscribe(sub)
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in) // the client sends nothing more: EOF or an error, it left
		close(gone)
	}()
	p := s.EventPrinter()
	for {
		select {
		case <-gone:
			return
		case ev := <-sub.ch:
			if n := sub.lost.Swap(0); n > 0 {
				p.Lost(n)
			}
			if !p.Print(ev) || s.Out().Flush() != nil {
				return
			}
		}
	}
}
