package router

// A router on paper: its links are made of port's paper devices (a TUN,
// a TAP, a host link's interface: none is opened or taken, a mirror is a
// name), it is never started, and nothing of it reaches the kernel.
// `urouter apply` loads a config into one to read what the config says
// in save's words, and tries its changes on another first.

// NewPaper is New on paper.
func NewPaper() *Router {
	r := New()
	r.paper = true
	return r
}

// Discard ends a router on paper: its links' devices close, and with
// them their neighbour discovery's goroutines. Nothing else is undone
// (deleting the links would purge their routes from every table, a
// tenth of a second for a table of 100,000, for a router thrown away).
func (r *Router) Discard() {
	for _, l := range r.Links.All() {
		if !l.IsLoopback() {
			_ = r.DP.Remove(l) // a paper link's device has nothing to fail at closing
		}
	}
}
