// Package client is urouter's command-line client: it reads ip's global
// options, sends a command or a batch to the daemon over its socket (the
// format is package wire's) and prints the answer as it comes; `capture`
// streams a pcapng capture to a file, to stdout, or printed a line per
// packet; `apply` sends a config file for the daemon to converge to. It
// knows the command language only through Words.
//
//	client.go   the options, the request, the answer
//	capture.go  the capture client
//	apply.go    apply FILE's words and file
package client

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"

	"urouter/control/wire"
)

// Words is what the client asks of the command language: the object a
// word picks ("" for none), whether `obj cmd` is a restore, which reads
// stdin (in the object's own order of checks: route's "r" is replace,
// rule's is restore), and what `urouter OBJECT help` prints for an
// object word (`urouter help`'s usage for "help"), which the client
// prints itself, with no daemon to ask.
type Words interface {
	Object(word string) string
	Restores(obj, cmd string) bool
	Help(obj string) (text string, ok bool)
}

// helpStatus is parseOptions' status for -help: the usage, then ip's
// exit status of a usage, 255.
const helpStatus = -2

// Main is the client: it parses ip's global options, sends the command (or
// the batch) to the daemon and prints what comes back. It returns the exit
// status.
func Main(args []string, words Words) int {
	o, socket, args, status := parseOptions(args)
	switch {
	case status >= 0:
		return status
	case status == helpStatus, !o.Batch && len(args) == 0:
		o.Batch, args = false, []string{"help"} // ip's usage()
	}
	if text, ok := help(words, args); ok && !o.Batch {
		fmt.Fprintln(os.Stderr, text)
		return 255
	}
	var input io.Reader
	keepOpen := false
	switch {
	case o.Batch:
		if o.BatchName == "-" {
			input = os.Stdin
		} else {
			f, err := os.Open(o.BatchName)
			if err != nil {
				fmt.Fprintf(os.Stderr, "Cannot open file \"%s\" for reading: %s\n", o.BatchName, strerrorOf(err))
				return 1
			}
			defer func() { _ = f.Close() }() // read only: nothing to lose
			input = f
		}
	case len(args) >= 2 && words.Restores(args[0], args[1]):
		// restore replays what `route save` or `rule save` wrote: a batch on stdin
		o.Batch, o.Restore, o.BatchName, input = true, true, "-", os.Stdin
	case words.Object(args[0]) == "capture":
		return captureMain(o, socket, args)
	case args[0] == "apply":
		usage, _ := words.Help("apply")
		return applyMain(o, socket, args[1:], usage)
	default:
		w := []byte(args[0])
		keepOpen = wire.Matches(w, "monitor") && !wire.Matches(w, "maddress")
		input = strings.NewReader(string(wire.QuoteArgs(args)) + "\n")
	}
	return Talk(wire.SocketPath(socket), o, input, keepOpen, os.Stdout, os.Stderr)
}

// help is the usage the client prints itself for args, if they ask for
// one: `urouter help` (a word that picks the help object) or `urouter
// OBJECT help`, for an object that has one.
func help(words Words, args []string) (string, bool) {
	switch {
	case len(args) >= 1 && words.Object(args[0]) == "help":
		return words.Help("help")
	case len(args) >= 2 && args[1] == "help":
		return words.Help(args[0])
	}
	return "", false
}

// parseOptions reads ip's global options and returns what follows them;
// status is the client's exit status when an option ends it (an error,
// -Version), helpStatus for -help, else -1.
func parseOptions(args []string) (o wire.Options, socket string, rest []string, status int) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		opt := args[0]
		if opt == "--" {
			args = args[1:]
			break
		}
		if opt == "--socket" || opt == "-socket" {
			if len(args) < 2 {
				fmt.Fprintln(os.Stderr, "Error: argument \"socket path\" is required")
				return o, "", nil, 255
			}
			socket, args = args[1], args[2:]
			continue
		}
		if strings.HasPrefix(opt, "--") {
			opt = opt[1:]
		}
		var st int
		if args, st = option(&o, opt, args); st != -1 {
			return o, "", nil, st
		}
		args = args[1:]
	}
	return o, socket, args, -1
}

// option reads one option, args[0] (written opt), and any value it takes
// from args; it returns args less that value, and an exit status as
// parseOptions does.
func option(o *wire.Options, opt string, args []string) ([]string, int) {
	w := []byte(opt[1:])
	next := func() (string, bool) {
		if len(args) < 2 {
			return "", false
		}
		args = args[1:]
		return args[0], true
	}
	switch {
	// ip checks -resolve before -rcvbuf: -r is resolve, a flag
	case wire.Matches(w, "loops"), wire.Matches(w, "rcvbuf") && !wire.Matches(w, "resolve"):
		if _, ok := next(); !ok {
			fmt.Fprintf(os.Stderr, "Error: argument \"%s\" is required\n", opt)
			return args, 255
		}
	case wire.Matches(w, "family"):
		f, ok := next()
		if !ok {
			fmt.Fprintln(os.Stderr, "Error: argument \"family type\" is required")
			return args, 255
		}
		if f == "help" {
			return args, helpStatus
		}
		if f != "inet6" {
			fmt.Fprintf(os.Stderr, "Error: only the inet6 family is routed here, not \"%s\".\n", f)
			return args, 255
		}
		o.Inet6 = true
	case wire.Matches(w, "batch"):
		f, ok := next()
		if !ok {
			fmt.Fprintln(os.Stderr, "Error: argument \"batch file\" is required")
			return args, 255
		}
		o.Batch, o.BatchName = true, f
	default:
		return args, flag(o, opt, w, args[0])
	}
	return args, -1
}

// flag reads an option that takes no value.
func flag(o *wire.Options, opt string, w []byte, arg string) int {
	switch {
	case opt == "-6":
		o.Inet6 = true
	case opt == "-4", opt == "-0", opt == "-M", opt == "-B":
		fmt.Fprintf(os.Stderr, "Error: only IPv6 (-6) is routed here, not %s.\n", opt)
		return 255
	case wire.Matches(w, "human"), wire.Matches(w, "human-readable"), wire.Matches(w, "iec"):
	case wire.Matches(w, "stats"), wire.Matches(w, "statistics"):
		o.Stats++
	case wire.Matches(w, "details"):
		o.Details = true
	case wire.Matches(w, "resolve"):
	case wire.Matches(w, "oneline"):
		o.Oneline = true
	case wire.Matches(w, "timestamp"), wire.Matches(w, "tshort"):
	case wire.Matches(w, "Version"):
		fmt.Println("urouter, iproute2-compatible command language (ip utility 6.x words)")
		return 0
	case wire.Matches(w, "force"):
		o.Force = true
	case wire.Matches(w, "brief"):
		o.Brief = true
	case wire.Matches(w, "json"):
		o.JSON = true
	case wire.Matches(w, "pretty"):
		o.Pretty = true
	case strings.HasPrefix(opt, "-c"):
	case wire.Matches(w, "help"):
		return helpStatus
	case wire.Matches(w, "netns"):
		fmt.Fprintln(os.Stderr, "Error: -netns is not supported: start the client in the namespace.")
		return 255
	case wire.Matches(w, "Numeric"), wire.Matches(w, "all"), opt == "-echo":
	default:
		fmt.Fprintf(os.Stderr, "Option \"%s\" is unknown, try \"ip -help\".\n", arg)
		return 255
	}
	return -1
}

// writeSize is the client's send buffer: a batch file's size (size, from
// fileSize) up to 256 KiB (a long batch goes in big writes, a short
// command costs little).
func writeSize(input io.Reader, size int64) int {
	if size >= 0 {
		return int(min(max(size+512, 4<<10), 1<<18))
	}
	if _, ok := input.(*os.File); ok {
		return 1 << 18 // a pipe: as long as it goes
	}
	return 4 << 10
}

func strerrorOf(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return wire.Strerror(errno)
	}
	if pe, ok := err.(*os.PathError); ok {
		err = pe.Err
	}
	s := err.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// Talk sends the header and input to the daemon, writing its answer to
// stdout and stderr as it comes, and returns the exit status it sends.
func Talk(socket string, o wire.Options, input io.Reader, keepOpen bool, stdoutW, stderr io.Writer) int {
	c, err := net.Dial("unix", socket)
	if err != nil {
		say(stderr, "urouter: cannot reach the daemon at %s: %v\n", socket, err)
		return 1
	}
	defer func() { _ = c.Close() }() // a socket read to its end: nothing left to lose
	uc := c.(*net.UnixConn)
	var sendErr atomic.Pointer[error]
	go func() {
		if err := send(uc, o, input, keepOpen); err != nil {
			sendErr.Store(&err)
			// Cut the connection without the rest of the input: the
			// daemon applies the lines it has whole and drops the one it
			// was cut off in, as when a client dies mid-batch.
			_ = uc.Close() // the error reported is the input's
		}
	}()
	st, failure := Answer(uc, stdoutW, stderr)
	if e := sendErr.Load(); e != nil { // the connection was cut for it
		say(stderr, "Error: cannot read the batch %q: %s\n", o.BatchName, strerrorOf(*e))
		return 1
	}
	if failure != "" {
		say(stderr, "urouter: %s\n", failure)
	}
	return st
}

// send writes the header and the input to the daemon, then closes the
// writing side unless the session streams (monitor). It returns only a
// failure to read the input: a failed write means the daemon stopped
// reading (a batch that failed), and its answer says why.
func send(uc *net.UnixConn, o wire.Options, input io.Reader, keepOpen bool) error {
	size := wire.FileSize(input)
	w := bufio.NewWriterSize(uc, writeSize(input, size))
	if o.Batch {
		o.Size = max(size, 0)
	}
	w.WriteString(o.Header())
	in := &wire.LineEnder{R: input}
	if _, err := io.Copy(w, in); err != nil {
		return in.Failed() // nil: the write failed, the daemon stopped reading
	}
	if err := w.Flush(); err != nil {
		return nil // the daemon stopped reading; its answer tells
	}
	if !keepOpen {
		_ = uc.CloseWrite() // as a failed Flush: the daemon's answer tells
	}
	return nil
}

// Answer copies the daemon's frames to stdout and stderr and returns the
// exit status of its 'x' frame, or 1 and what went wrong with the answer.
// A frame's payload goes out as it is read, in writes of up to the read
// buffer (a dump's frames are big: see bigFrame), with nothing held back:
// what the daemon sent together is written together.
func Answer(uc *net.UnixConn, stdout, stderr io.Writer) (int, string) {
	r := bufio.NewReaderSize(uc, answerBuf)
	var hdr [5]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return 1, "the daemon closed the connection"
		}
		n := int(binary.BigEndian.Uint32(hdr[1:]))
		switch hdr[0] {
		case 'o':
			if !relay(r, n, stdout) {
				return 1, ""
			}
		case 'e':
			if !relay(r, n, stderr) {
				return 1, ""
			}
		case 'x':
			var b [1]byte
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return 1, "the daemon closed the connection before its exit status"
			}
			return int(b[0]), ""
		default:
			return 1, "garbled answer from the daemon"
		}
	}
}

// answerBuf is the client's read buffer: a big frame is read into it and
// written out in a few large writes.
const answerBuf = 256 << 10

// relay writes the next n bytes of r to w, straight from r's buffer.
func relay(r *bufio.Reader, n int, w io.Writer) bool {
	for n > 0 {
		if r.Buffered() == 0 {
			if _, err := r.Peek(1); err != nil {
				return false
			}
		}
		b, _ := r.Peek(min(n, r.Buffered())) // buffered: no error
		if _, err := w.Write(b); err != nil {
			return false
		}
		_, _ = r.Discard(len(b)) // buffered
		n -= len(b)
	}
	return true
}

// say writes a message to the client's stderr: if that fails, there is
// no one left to tell.
func say(stderr io.Writer, format string, a ...any) {
	_, _ = fmt.Fprintf(stderr, format, a...)
}
