package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"urouter/control"
	"urouter/control/statefile"
	"urouter/control/wire"
	"urouter/router"

	"golang.org/x/sys/unix"
)

// Server is a running daemon's control socket: it serves a router's
// clients, each in a session of its own.
type Server struct {
	R *router.Router
	// Feeds: set before Serve, for `fpm show` and `mirror show`.
	Feeds *control.Feeds
	// State: set before Serve, the state file every change is sealed in
	// before its client is told (nil: none).
	State *statefile.State
	// Status: set before Serve, how the start went, for `status`.
	Status control.Startup
	// MaxSessions: set before Serve, how many clients are served at once
	// at most (0: DefaultMaxSessions); one more is refused.
	MaxSessions int
	// Paper: set before Serve, makes a router on paper as the daemon
	// made its own (see control.Daemon.Paper)
	Paper    func() *router.Router
	applying sync.Mutex   // one apply at a time, a client's or a SIGHUP's
	sessions atomic.Int64 // the sessions running
	hub      *hub
	ln       *net.UnixListener
	stop     chan struct{}
	closing  sync.Once
}

// Listen claims the control socket at path (mode 0600). It refuses if
// another daemon answers there, and removes a stale socket left by one
// that died.
func Listen(path string, r *router.Router) (*Server, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close() // a probe: it answered, that is all
			return nil, fmt.Errorf("another daemon owns %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing stale socket %s: %w", path, err)
		}
	}
	// Create the socket with no access for others from the start.
	old := unix.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close() // the chmod's error is the one to report
		return nil, err
	}
	srv := &Server{R: r, hub: &hub{r: r}, ln: ln, stop: make(chan struct{})}
	r.Watch(srv.hub.routerEvent)
	r.WatchNeighbours(srv.hub.neighEvent)
	return srv, nil
}

// DefaultMaxSessions is how many clients a daemon serves at once unless
// told otherwise. A session that waits on its client costs no thread (see
// pausingConn), but its buffers (32 KiB), and one that runs a batch a
// thread or two: the bound keeps these a small part of the memory and of
// the runtime's 10,000 threads.
const DefaultMaxSessions = 4096

// Serve accepts clients until Close, each in its own goroutine: commands
// of different clients run in parallel. A client past MaxSessions is
// told so and let go.
func (s *Server) Serve() error {
	bound := int64(s.MaxSessions)
	if bound <= 0 {
		bound = DefaultMaxSessions
	}
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			select {
			case <-s.stop:
				return nil
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// out of descriptors: the clients that hold them end
				// in time, and the daemon forwards meanwhile
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		if s.sessions.Add(1) > bound {
			s.sessions.Add(-1)
			s.refuse(c, bound)
			continue
		}
		go func() {
			defer s.sessions.Add(-1)
			s.serveConn(c)
		}()
	}
}

// refuse tells client c that bound sessions run already, and closes it:
// nothing is read from it. The answer is the first thing written on the
// new socket and fits its buffer: the accept loop waits for no client.
func (s *Server) refuse(c *net.UnixConn, bound int64) {
	wire.Tell(c, fmt.Sprintf("Error: %d sessions run already.", bound), 1)
	_ = c.Close() // it has been told, or is gone
}

// Close stops accepting and removes the socket; once is enough, more are
// nothing.
func (s *Server) Close() {
	s.closing.Do(func() {
		close(s.stop)
		_ = s.ln.Close() // Serve's Accept ends either way
		s.R.Watch(nil)
	})
}

// ApplyConfig runs a config file (commands in the batch language) as a
// batch: it stops at the first error and returns it, and how many lines it
// read. What its show commands print goes to stdout.
func ApplyConfig(r *router.Router, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	return control.RunConfig(r, path, f, max(wire.FileSize(f), 0), os.Stdout)
}
