// Package control owns the command language: iproute2's words and
// grammar (route, link, address, monitor; -batch, -json), the daemon's
// control socket and its sessions, and the client that talks to it.
//
// A command is parsed and validated, and everything it needs allocated,
// before it takes the lock of the object it changes: a table's transaction
// for route commands, the router's link lock for link and address
// commands. control never holds a lock while it waits on a client.
package control
