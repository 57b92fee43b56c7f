package server

import (
	"bufio"
	"errors"
	"net"

	"urouter/control"
	"urouter/control/wire"
)

// serveConn runs one client connection: its header, its session, then
// the monitor or the capture the session's command asked for.
func (srv *Server) serveConn(c net.Conn) {
	defer func() { _ = c.Close() }() // the session is over: its client has been told, or is gone
	pc := &pausingConn{Conn: c}
	in := bufio.NewReaderSize(pc, control.ReadBuf)
	opt, err := wire.ReadHeader(in)
	switch {
	case errors.Is(err, wire.ErrLongHeader):
		wire.Tell(pc, "Error: "+err.Error()+".", 1) // the rest is not read
		return
	case errors.Is(err, wire.ErrBadHeader):
		wire.Tell(pc, "Error: the daemon speaks another protocol version.", 1)
		return
	case err != nil:
		return // gone before its header
	}
	ew := &wire.FrameWriter{W: pc, Kind: 'e'}
	s := control.NewSession(srv.R, opt, bufio.NewWriterSize(&wire.FrameWriter{W: pc, Kind: 'o'}, control.WriteBuf),
		func(m string) { _, _ = ew.Write([]byte(m + "\n")) }) // a client gone: nobody to tell
	pc.s = s
	s.Attach(control.Daemon{Feeds: srv.Feeds, State: srv.State, Startup: &srv.Status, Paper: srv.Paper, Applying: &srv.applying}, pc)
	defer s.EndPace()
	status := s.Finish(s.Run(in))
	if s.Monitor() != nil {
		srv.hub.stream(s, in)
		return
	}
	if s.Capture() != nil {
		st, there := streamCapture(srv.R.DP, s, in)
		if !there {
			return
		}
		status = st
	}
	_, _ = (&wire.FrameWriter{W: pc, Kind: 'x'}).Write([]byte{byte(status)}) // a client gone: nobody to tell
}
