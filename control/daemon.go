package control

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"urouter/router"
)

// DefaultSocket is where the daemon listens unless told otherwise.
const DefaultSocket = "/run/urouter/urouter.sock"

// SocketPath picks the control socket: the flag, else $UROUTER_SOCKET,
// else DefaultSocket.
func SocketPath(flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv("UROUTER_SOCKET"); env != "" {
		return env
	}
	return DefaultSocket
}

// Server is a running daemon's control socket: it serves a router's
// clients, each in a session of its own.
type Server struct {
	R *router.Router
	// Feeds: set before Serve, for `fpm show` and `mirror show`.
	Feeds *Feeds
	// State: set before Serve, the state file every change is sealed in
	// before its client is told (nil: none).
	State *State
	// Status: set before Serve, how the start went, for `status`.
	Status  Startup
	hub     *hub
	ln      *net.UnixListener
	stop    chan struct{}
	closing sync.Once
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
	old := umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	umask(old)
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

// Serve accepts clients until Close, each in its own goroutine: commands
// of different clients run in parallel.
func (s *Server) Serve() error {
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
			return err
		}
		go s.serveConn(c)
	}
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
// read.
func ApplyConfig(r *router.Router, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	var msgs []string
	out := bufio.NewWriter(os.Stdout)
	s := &session{
		r:      r,
		opt:    options{batch: true, batchName: path, size: max(fileSize(f), 0)},
		out:    out,
		errOut: func(m string) { msgs = append(msgs, m) },
	}
	le := &lineEnder{r: f}
	in := bufio.NewReaderSize(le, readBuf)
	if head, _ := in.Peek(len(saveHeader)); string(head) == saveHeader {
		s.restoring = true
	}
	status := s.run(in)
	if err := le.failed(); err != nil {
		return s.line, fmt.Errorf("reading %s: %w", path, err)
	}
	// what a config's show commands print is for a console, if any: a
	// daemon started without one still starts
	_ = out.Flush()
	if status != 0 {
		return s.line, errors.New(strings.Join(msgs, "\n"))
	}
	return s.line, nil
}

// lineEnder passes a reader through and adds a final '\n' if the input
// ends without one. It ends a line only at the input's end: a read that
// fails leaves the line it cut short as it is, for the reader to drop.
type lineEnder struct {
	r    io.Reader
	last byte
	err  error // the input's error once it has one (io.EOF at its end)
}

func (l *lineEnder) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	if n > 0 {
		l.last = p[n-1]
	}
	if err == nil || n > 0 {
		return n, nil // a reader returns its error again on the next Read
	}
	l.err = err
	if err == io.EOF && l.last != '\n' && l.last != 0 && len(p) > 0 {
		p[0] = '\n'
		return 1, nil
	}
	return 0, err
}

// failed is the input's error, if it failed before its end.
func (l *lineEnder) failed() error {
	if l.err == io.EOF {
		return nil
	}
	return l.err
}
