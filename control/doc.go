// Package control owns the command language: iproute2's words and
// grammar (route, link, address, monitor; -batch, -json), the daemon's
// control socket and its sessions, and the client that talks to it.
//
// control has no policy of its own: it parses a command, calls the router
// (package router) or, for routes, a table's transaction, and prints what
// comes back as ip prints it. A command is parsed and validated, and
// everything it needs allocated, before it takes any lock. A session never
// holds a table's transaction while it waits on its client, in either
// direction (see pausingConn).
package control
