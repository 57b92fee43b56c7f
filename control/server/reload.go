package server

import (
	"bufio"
	"bytes"
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
	var ran bytes.Buffer // the commands, logged once the session ends
	out := bufio.NewWriter(&ran)
	s := control.NewSession(srv.R, wire.Options{Batch: true, BatchName: path}, out,
		func(m string) { log.Printf("SIGHUP: %s", m) })
	s.Attach(control.Daemon{Feeds: srv.Feeds, State: srv.State, Startup: &srv.Status, Paper: srv.Paper, Applying: &srv.applying}, nil)
	defer s.EndPace()
	status := s.Finish(s.Apply(path, content, false, false)) // its output flushed
	for line := range strings.Lines(ran.String()) {
		log.Print("SIGHUP: " + path + ": " + strings.TrimSuffix(line, "\n"))
	}
	if status != 0 {
		log.Printf("SIGHUP: %s not applied (status %d)", path, status)
		return
	}
	log.Printf("SIGHUP: %s applied", path)
}
