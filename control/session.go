package control

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"urouter/dataplane"
	"urouter/fib6"
)

// The wire between client and daemon. The client sends one header line,
//
//	urouter/1 OPTIONS BATCHNAME
//
// (OPTIONS: letters j p d f b 6 and the stats count as digits, or "-"),
// then command lines, each ending in '\n', then closes its side. The daemon
// answers with frames: a type byte ('o' stdout, 'e' stderr, 'x' exit
// status), a big-endian uint32 length and the payload.

const protoMagic = "urouter/1"

type options struct {
	json, pretty, details, force, batch bool
	// restore: a batch replaying `route save`; routes that exist already
	// are not errors, as with ip route restore.
	restore   bool
	stats     int
	batchName string
}

func (o options) header() string {
	f := ""
	for _, x := range []struct {
		on bool
		c  string
	}{{o.json, "j"}, {o.pretty, "p"}, {o.details, "d"}, {o.force, "f"}, {o.batch, "b"}, {o.restore, "r"}} {
		if x.on {
			f += x.c
		}
	}
	if o.stats > 0 {
		f += strconv.Itoa(o.stats)
	}
	if f == "" {
		f = "-"
	}
	name := o.batchName
	if name == "" {
		name = "-"
	}
	return protoMagic + " " + f + " " + name + "\n"
}

func parseHeader(line string) (options, error) {
	var o options
	fields := strings.SplitN(strings.TrimRight(line, "\n"), " ", 3)
	if len(fields) != 3 || fields[0] != protoMagic {
		return o, errors.New("bad header")
	}
	for _, c := range fields[1] {
		switch {
		case c == 'j':
			o.json = true
		case c == 'p':
			o.pretty = true
		case c == 'd':
			o.details = true
		case c == 'f':
			o.force = true
		case c == 'b':
			o.batch = true
		case c == 'r':
			o.restore = true
		case c >= '0' && c <= '9':
			o.stats = o.stats*10 + int(c-'0')
		}
	}
	o.batchName = fields[2]
	return o, nil
}

// frameWriter writes everything given to it as frames of one type.
type frameWriter struct {
	c    io.Writer
	kind byte
}

func (w *frameWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var hdr [5]byte
	hdr[0] = w.kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	bufs := net.Buffers{hdr[:], p}
	if _, err := bufs.WriteTo(w.c); err != nil {
		return 0, err
	}
	return len(p), nil
}

// session runs the commands of one client (or of the config file), in
// order, with one open route transaction at most.
type session struct {
	r      *Router
	opt    options
	out    *bufio.Writer
	errOut func(string)
	txn    *fib6.Txn
	args   [][]byte
	line   int
	// per-command scratch, reused
	gwCache   gwCheck
	objMemo   memo
	cmdMemo   memo
	parseMemo parseMemo
	lastDev   *dataplane.Link
	// monitor is set by a monitor command: the caller then streams events.
	monitor *monitorReq
}

// txnFor returns the open transaction of table t, committing any other.
// Consecutive route commands for one table so go out in one publish.
func (s *session) txnFor(t *fib6.Table) *fib6.Txn {
	if s.txn != nil && s.txn.Table() == t {
		return s.txn
	}
	s.commit()
	s.txn = t.Begin()
	return s.txn
}

func (s *session) commit() {
	if s.txn != nil {
		s.txn.Commit()
		s.txn = nil
	}
}

// run executes the command lines of in, and returns the exit status: a
// single command's own, or a batch's (1 if a command failed, 255 if one
// did not parse). A batch stops at its first failure unless forced. The
// open transaction is published at the end, when another table's command
// comes, or when a socket client pauses (see pausingReader).
func (s *session) run(in *bufio.Reader) int {
	status := 0
	defer s.commit()
	for {
		if in.Buffered() == 0 {
			s.out.Flush()
		}
		line, err := in.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			s.errOut("Error: command line too long")
			return 255
		}
		if err != nil {
			return status // a line without its '\n' is a command cut short: dropped
		}
		s.line++
		e := s.exec(line)
		if s.monitor != nil {
			return 0
		}
		if e == nil || s.opt.restore && e.errno == syscall.EEXIST {
			continue
		}
		s.out.Flush()
		s.errOut(e.msg)
		if !s.opt.batch {
			return e.code
		}
		s.errOut(fmt.Sprintf("Command failed %s:%d", s.opt.batchName, s.line))
		if e.code == 255 {
			status = 255
		} else if status == 0 {
			status = 1
		}
		if !s.opt.force {
			return status
		}
	}
}

// objects are iproute2's OBJECT words in its matching order (a prefix of
// the first one wins); the router serves some of them.
var objects = []string{"address", "addrlabel", "maddress", "route", "rule", "neighbor", "neighbour",
	"ntable", "ntbl", "link", "l2tp", "fou", "ila", "macsec", "tunnel", "tunl", "tuntap", "tap",
	"token", "tcpmetrics", "tcp_metrics", "monitor", "xfrm", "mroute", "mrule", "netns", "netconf",
	"vrf", "sr", "nexthop", "mptcp", "ioam", "help", "stats"}

var objectWords = func() keywords {
	var l []kw
	for i, o := range objects {
		l = append(l, kw{o, true, i + 1})
	}
	return newKeywords(l)
}()

func (s *session) exec(line []byte) *cmdErr {
	args, err := splitLine(line, s.args)
	s.args = args
	if err != nil {
		return &cmdErr{msg: err.Error(), code: 1}
	}
	if len(args) == 0 {
		return nil
	}
	w, rest := args[0], args[1:]
	obj := ""
	if i := s.objMemo.of(objectWords, w); i > 0 {
		obj = objects[i-1]
	}
	if is(w, "nh") {
		obj = "nexthop" // the alias; iproute2 6.1 lacks it
	}
	if obj != "route" {
		s.commit()
	}
	switch obj {
	case "route":
		return s.route(rest)
	case "link":
		return s.linkCmd(rest)
	case "address":
		return s.addrCmd(rest)
	case "monitor":
		return s.monitorCmd(rest)
	case "help":
		return parseErr("Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }\n" +
			"       ip [ -force ] -batch filename\n" +
			"where  OBJECT := { address | link | monitor | route }\n" +
			"       OPTIONS := { -6 | -s[tatistics] | -d[etails] | -j[son] | -p[retty] | -force }")
	case "":
		return &cmdErr{msg: fmt.Sprintf("Object \"%s\" is unknown, try \"ip help\".", w), code: 1}
	}
	return &cmdErr{msg: fmt.Sprintf("Error: object \"%s\" is not supported by this router yet.", obj), code: 1}
}

var errUnterminated = errors.New("Unterminated quoted string")

// serveConn runs one client connection.
func (r *Router) serveConn(c net.Conn) {
	defer c.Close()
	pr := &pausingReader{c: c}
	in := bufio.NewReaderSize(pr, 1<<18)
	hdr, err := in.ReadString('\n')
	if err != nil {
		return
	}
	opt, err := parseHeader(hdr)
	ew := &frameWriter{c: c, kind: 'e'}
	if err != nil {
		ew.Write([]byte("Error: the daemon speaks another protocol version.\n"))
		(&frameWriter{c: c, kind: 'x'}).Write([]byte{1})
		return
	}
	s := &session{
		r:      r,
		opt:    opt,
		out:    bufio.NewWriterSize(&frameWriter{c: c, kind: 'o'}, 64<<10),
		errOut: func(m string) { ew.Write([]byte(m + "\n")) },
	}
	pr.pause = s.commit
	status := s.run(in)
	s.out.Flush()
	if s.monitor != nil {
		r.hub.stream(s, in)
		return
	}
	(&frameWriter{c: c, kind: 'x'}).Write([]byte{byte(status)})
}

// idleCommit is how long a session's open transaction waits for more
// input before it is published. A client streaming a batch so gets one
// publish per pause, not one per socket read (a read often returns a few
// KB, and a publish ends the transaction's in-place copies); a client
// that stops sending sees its routes within this time, and other writers
// of the table wait at most this long for the table's lock.
const idleCommit = time.Millisecond

// pausingReader reads a client's input; when a read waits longer than
// idleCommit it calls pause, then waits without limit.
type pausingReader struct {
	c     net.Conn
	pause func()
}

func (p *pausingReader) Read(b []byte) (int, error) {
	if p.pause == nil {
		return p.c.Read(b)
	}
	p.c.SetReadDeadline(time.Now().Add(idleCommit))
	n, err := p.c.Read(b)
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		return n, err
	}
	p.pause()
	p.c.SetReadDeadline(time.Time{})
	return p.c.Read(b)
}
