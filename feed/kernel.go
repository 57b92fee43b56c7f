package feed

import (
	"errors"
	"log"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"urouter/router"
)

// TableMirror follows a kernel table of the router's network namespace
// into the router's table of the same id, as linux-cp's netlink listener
// does: a dump at start, then the route and nexthop notifications. So
// BIRD's kernel protocol, `ip route` scripts, or any program that programs
// the kernel drives the router. Routes on a mirror's interface map to its
// link; the kernel's own routes (proto kernel: connected, link-local) and
// routes on other interfaces are passed over.
type TableMirror struct {
	Table   uint32
	Applier *Applier

	sock *nl.NetlinkSocket
	done sync.WaitGroup
	stop atomic.Bool

	Events  atomic.Uint64 // notifications read
	Resyncs atomic.Uint64 // dumps (the first, and after the socket overran)
	synced  atomic.Int64  // when the last dump was applied, Unix ns
}

// MirrorTable starts following kernel table id into r's table id.
func MirrorTable(r *router.Router, id uint32) (*TableMirror, error) {
	s, err := nl.Subscribe(unix.NETLINK_ROUTE, unix.RTNLGRP_IPV6_ROUTE, unix.RTNLGRP_NEXTHOP)
	if err != nil {
		return nil, err
	}
	// A full table's worth of notifications in a burst. Without it an
	// overrun makes the mirror resync, so a refusal costs time, not routes.
	if err := s.SetReceiveBufferSize(8<<20, true); err != nil {
		log.Printf("table mirror %d: receive buffer: %v", id, err)
	}
	m := &TableMirror{Table: id, Applier: NewApplier(r, r.LinkOfKernel), sock: s}
	if err := m.resync(); err != nil {
		s.Close()
		return nil, err
	}
	m.done.Add(1)
	go m.follow()
	return m, nil
}

// Close stops following; the routes stay.
func (m *TableMirror) Close() {
	m.stop.Store(true)
	m.sock.Close()
	m.done.Wait()
}

// Synced is when the table was last read whole.
func (m *TableMirror) Synced() time.Time { return time.Unix(0, m.synced.Load()) }

// resync reads the nexthops and the table whole and replaces what the
// mirror installed before with it.
func (m *TableMirror) resync() error {
	m.Resyncs.Add(1)
	var msgs []Msg
	keep := func(typ uint16) func([]byte) bool {
		return func(b []byte) bool {
			msgs = m.decode(typ, 0, b, msgs)
			return true
		}
	}
	req := nl.NewNetlinkRequest(unix.RTM_GETNEXTHOP, unix.NLM_F_DUMP)
	req.AddData(nhmsgReq{})
	if err := req.ExecuteIter(unix.NETLINK_ROUTE, unix.RTM_NEWNEXTHOP, keep(unix.RTM_NEWNEXTHOP)); err != nil && !errors.Is(err, syscall.ENODATA) {
		return err
	}
	req = nl.NewNetlinkRequest(unix.RTM_GETROUTE, unix.NLM_F_DUMP)
	rt := nl.NewRtMsg()
	rt.Family = unix.AF_INET6
	req.AddData(rt)
	if err := req.ExecuteIter(unix.NETLINK_ROUTE, unix.RTM_NEWROUTE, keep(unix.RTM_NEWROUTE)); err != nil {
		return err
	}
	s := m.Applier.Begin()
	m.Applier.ApplyIn(s, msgs)
	m.Applier.SweepIn(s)
	m.synced.Store(time.Now().UnixNano())
	return nil
}

// nhmsgReq is the struct nhmsg of a dump request: every family.
type nhmsgReq struct{}

func (nhmsgReq) Len() int          { return sizeofNhMsg }
func (nhmsgReq) Serialize() []byte { return make([]byte, sizeofNhMsg) }

// decode adds the message of type typ (with flags) and payload b to msgs if it
// concerns the mirrored table (routes) or may be used by it (nexthops).
func (m *TableMirror) decode(typ, flags uint16, b []byte, msgs []Msg) []Msg {
	nm := syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: typ, Flags: flags}, Data: b}
	var msg Msg
	if err := decodeOne(&nm, &msg); err != nil {
		m.Applier.Stats.Malformed.Add(1)
		log.Printf("mirror of table %d: %v", m.Table, err)
		return msgs // the kernel's; one bad message does not stop the others
	}
	switch msg.Kind {
	case RouteAdd, RouteDel:
		if keyOf(&msg.Route).table != m.Table || msg.Skip == skipCached {
			return msgs // another table's, or a cached route: not the table's
		}
	case NexthopAdd, NexthopDel:
	default:
		return msgs
	}
	return append(msgs, msg)
}

func (m *TableMirror) follow() {
	defer m.done.Done()
	var msgs []Msg
	for {
		nms, _, err := m.sock.Receive()
		if m.stop.Load() {
			return
		}
		if err != nil {
			if errors.Is(err, unix.ENOBUFS) { // notifications were lost: read it all again
				if err := m.resync(); err != nil {
					log.Printf("mirror of table %d: %v", m.Table, err)
				}
				continue
			}
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			log.Printf("mirror of table %d: %v", m.Table, err)
			return
		}
		msgs = msgs[:0]
		for i := range nms {
			m.Events.Add(1)
			msgs = m.decode(nms[i].Header.Type, nms[i].Header.Flags, nms[i].Data, msgs)
		}
		m.Applier.Apply(msgs)
	}
}
