// Package wire owns the format between the client and the daemon: the
// header that carries ip's global options, and the frames of the answer.
package wire

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
)

// The wire between client and daemon. The client sends one header line,
//
//	urouter/1 OPTIONS BATCHNAME
//
// (OPTIONS: letters j p d f b r 6 B o (-brief, -oneline), a n l (apply,
// --dry-run, --all), the stats count as digits, and z and the batch
// file's size in bytes; or "-"),
// then command lines, each ending in '\n', then closes its side. The daemon
// answers with frames: a type byte ('o' stdout, 'e' stderr, 'x' exit
// status), a big-endian uint32 length and the payload.

const Magic = "urouter/1"

type Options struct {
	JSON, Pretty, Details, Force, Batch bool
	// Restore: a batch replaying `route save`; routes that exist already
	// are not errors, as with ip route restore.
	Restore   bool
	Stats     int
	BatchName string
	// Inet6: -6 was given (a nexthop without an IPv6 gateway is IPv4
	// without it, as in Linux)
	Inet6 bool
	// Size is the batch file's size in bytes, if known: how big a load
	// is coming (see control.Session.txnFor)
	Size int64
	// Brief and Oneline are ip's -brief and -oneline: a link, an address
	// or a neighbour on one short line; each record on one line
	Brief, Oneline bool
	// Apply: the input is a config (BatchName) the router is to be made
	// to say (`urouter apply FILE`); DryRun: only say how; All: what the
	// feeds own too
	Apply, DryRun, All bool
}

func (o Options) Header() string {
	f := ""
	for _, x := range []struct {
		on bool
		c  string
	}{{o.JSON, "j"}, {o.Pretty, "p"}, {o.Details, "d"}, {o.Force, "f"}, {o.Batch, "b"}, {o.Restore, "r"}, {o.Inet6, "6"},
		{o.Brief, "B"}, {o.Oneline, "o"}, {o.Apply, "a"}, {o.DryRun, "n"}, {o.All, "l"}} {
		if x.on {
			f += x.c
		}
	}
	if o.Stats > 0 {
		f += strconv.Itoa(o.Stats)
	}
	if o.Size > 0 {
		f += "z" + strconv.FormatInt(o.Size, 10)
	}
	if f == "" {
		f = "-"
	}
	name := o.BatchName
	if name == "" {
		name = "-"
	}
	return Magic + " " + f + " " + name + "\n"
}

// MaxHeader bounds the header line: the magic, the options and a batch
// file's name, a path of PATH_MAX (4,096 bytes) at most.
const MaxHeader = 4<<10 + 128

// ErrLongHeader: a header line longer than maxHeader (the rest is not read).
var ErrLongHeader = fmt.Errorf("bad header: longer than %d bytes", MaxHeader)

// ReadHeader reads and parses the header line, of maxHeader bytes at most;
// in's buffer is larger.
func ReadHeader(in *bufio.Reader) (Options, error) {
	line, err := in.ReadSlice('\n')
	if err == bufio.ErrBufferFull || len(line) > MaxHeader {
		return Options{}, ErrLongHeader
	}
	if err != nil {
		return Options{}, err
	}
	return ParseHeader(string(line))
}

// ErrBadHeader: a header line of another protocol (version).
var ErrBadHeader = errors.New("bad header")

func ParseHeader(line string) (Options, error) {
	var o Options
	fields := strings.SplitN(strings.TrimRight(line, "\n"), " ", 3)
	if len(fields) != 3 || fields[0] != Magic {
		return o, ErrBadHeader
	}
	sizing := false // the digits after z are the size
	for _, c := range fields[1] {
		switch {
		case c == 'z':
			sizing = true
		case sizing && c >= '0' && c <= '9':
			o.Size = min(o.Size*10+int64(c-'0'), 1<<40)
		case c == 'j':
			o.JSON = true
		case c == 'p':
			o.Pretty = true
		case c == 'd':
			o.Details = true
		case c == 'f':
			o.Force = true
		case c == 'b':
			o.Batch = true
		case c == 'r':
			o.Restore = true
		case c == '6':
			o.Inet6 = true
		case c == 'B':
			o.Brief = true
		case c == 'o':
			o.Oneline = true
		case c == 'a':
			o.Apply = true
		case c == 'n':
			o.DryRun = true
		case c == 'l':
			o.All = true
		case c >= '0' && c <= '9':
			o.Stats = o.Stats*10 + int(c-'0')
		}
	}
	o.BatchName = fields[2]
	return o, nil
}

// FrameWriter writes everything given to it as frames of one type.
type FrameWriter struct {
	W    io.Writer
	Kind byte
}

func (w *FrameWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var hdr [5]byte
	hdr[0] = w.Kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	bufs := net.Buffers{hdr[:], p}
	if _, err := bufs.WriteTo(w.W); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Tell sends a client a message for its stderr and its exit status: all
// that a session that ends before it runs says. A client that cannot read
// them is gone: no one else to Tell.
func Tell(c io.Writer, msg string, status byte) {
	_, _ = (&FrameWriter{W: c, Kind: 'e'}).Write([]byte(msg + "\n"))
	_, _ = (&FrameWriter{W: c, Kind: 'x'}).Write([]byte{status})
}

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

// QuoteArgs joins command-line arguments into one line that the daemon
// splits back into the same words (words in double or single quotes).
func QuoteArgs(args []string) []byte {
	var b []byte
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		plain := a != ""
		for j := 0; j < len(a); j++ {
			if c := a[j]; c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '#' || c == '\n' || c == '\r' {
				plain = false
			}
		}
		switch {
		case plain:
			b = append(b, a...)
		case strings.IndexByte(a, '"') < 0:
			b = append(append(append(b, '"'), a...), '"')
		default:
			b = append(append(append(b, '\''), a...), '\'')
		}
	}
	return b
}

// Matches reports whether word is an abbreviation of keyword, as
// iproute2's matches(): a non-empty prefix of it.
func Matches(word []byte, keyword string) bool {
	return len(word) > 0 && len(word) <= len(keyword) && string(word) == keyword[:len(word)]
}

// LineEnder passes a reader through and adds a final '\n' if the input
// ends without one. It ends a line only at the input's end: a read that
// fails leaves the line it cut short as it is, for the reader to drop.
type LineEnder struct {
	R    io.Reader
	last byte
	err  error // the input's error once it has one (io.EOF at its end)
}

func (l *LineEnder) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.R.Read(p)
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

// Failed is the input's error, if it failed before its end.
func (l *LineEnder) Failed() error {
	if l.err == io.EOF {
		return nil
	}
	return l.err
}

// Strerror is glibc's wording: Go's text with a capital letter.
func Strerror(e syscall.Errno) string {
	s := e.Error()
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		s = string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

// FileSize is the size of input if it is a regular file, else -1.
func FileSize(input io.Reader) int64 {
	if f, ok := input.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	}
	return -1
}
