// Package server owns the daemon's side of the command language: the
// control socket (mode 0600, one daemon to a path), each client's
// connection run as a control.Session, at most Server.MaxSessions at
// once, and what a session's command streams once it has run: a
// monitor's events and a capture's packets. It runs the --config file
// too (ApplyConfig), and applies it again on SIGHUP as `apply` does
// (Reload).
//
// A connection pauses its session (pausingConn): a read or a write that
// waits on the client longer than control.IdleCommit publishes the
// transaction the session holds and parks its batch's thread, so a
// client that stops sending or reading holds no lock and no thread.
//
//	server.go    the socket: Listen, Serve, the bound on sessions, Close, ApplyConfig
//	serve.go     one connection: its header, its session, then its stream
//	conn.go      pausingConn, a client's connection as its session uses it
//	monitor.go   the hub: the router's changes handed to each monitor
//	capture.go   a capture's pcapng stream
//	reload.go    SIGHUP: the --config file applied again, what it ran logged
package server
