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

// Discard ends a router on paper: its links go, and with them their
// neighbour discovery's goroutines.
func (r *Router) Discard() {
	for _, l := range r.Links.All() {
		if !l.IsLoopback() {
			_ = r.DeleteLink(l) // a paper link's device has nothing to fail at closing
		}
	}
}
