package server

import (
	"bufio"
	"log"
	"os"
	"strings"

	"urouter/control"
	"urouter/control/wire"
)

// Reload applies the daemon's config file (kill -HUP) as `urouter apply`
// does, logging each command it runs and how it ended. Reloads run one
// at a time with the clients' applies.
func (srv *Server) Reload(path string) {
	if path == "" {
		log.Printf("SIGHUP: no --config to apply")
		return
	}
	content, err := os.ReadFile(path)
	if err != nil {
		log.Printf("SIGHUP: %v", err)
		return
	}
	out := bufio.NewWriter(&logLines{prefix: "SIGHUP: " + path + ": "})
	s := control.NewSession(srv.R, wire.Options{Batch: true, BatchName: path}, out,
		func(m string) { log.Printf("SIGHUP: %s", m) })
	s.Attach(control.Daemon{Feeds: srv.Feeds, State: srv.State, Startup: &srv.Status, Paper: srv.Paper, Applying: &srv.applying}, nil)
	defer s.EndPace()
	status := s.Finish(s.Apply(path, content, false, false))
	_ = out.Flush() // to the log
	if status != 0 {
		log.Printf("SIGHUP: %s not applied (status %d)", path, status)
		return
	}
	log.Printf("SIGHUP: %s applied", path)
}

// logLines writes what it is given to the log, a line at a time.
type logLines struct {
	prefix string
	part   string
}

func (l *logLines) Write(b []byte) (int, error) {
	text := l.part + string(b)
	for {
		line, rest, ok := strings.Cut(text, "\n")
		if !ok {
			break
		}
		log.Print(l.prefix + line)
		text = rest
	}
	l.part = text
	return len(b), nil
}
