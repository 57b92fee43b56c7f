package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"urouter/control"
	cli "urouter/control/client"
	"urouter/control/wire"
)

// failingReader gives its text, then fails as a disk or a pipe can.
type failingReader struct {
	text string
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.text == "" {
		return 0, f.err
	}
	n := copy(p, f.text)
	f.text = f.text[n:]
	return n, nil
}

// TestClientBatchReadError: a batch that cannot be read to its end is not
// sent as if whole: the client says so and exits non-zero, and the line
// the error cut short is not applied.
func TestClientBatchReadError(t *testing.T) {
	r := newTestRouter(t)
	sock := startServer(t, r)
	in := &failingReader{text: "route add 2001:db8:1::/48 dev d0\nroute add 2001:db8:ffff::/48 de", err: errors.New("input/output error")}
	var out, errs strings.Builder
	st := cli.Talk(sock, wire.Options{Batch: true, BatchName: "F"}, in, false, &out, &errs)
	if st == 0 || !strings.Contains(errs.String(), "Error: ") || !strings.Contains(errs.String(), "Input/output error") ||
		strings.Contains(errs.String(), "daemon closed") { // the cut is the client's, not the daemon's
		t.Fatalf("a batch cut by a read error: status %d, stderr %q", st, errs.String())
	}
	if got, _, _ := run(r, wire.Options{}, "route show 2001:db8:ffff::/48"); got != "" {
		t.Fatalf("the line cut short was applied: %q", got)
	}
}

// TestClientShortStatus: an exit-status frame cut short is a failure with
// a message, not exit status 0.
func TestClientShortStatus(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() }) // the test is over
	go func() {                          // a daemon that dies mid-answer
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = c.Close() }() // the cut is the point
		if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
			t.Error(err)
			return
		}
		put(t, c, "x\x00\x00\x00\x01") // the status's length, not the status
	}()
	var out, errs strings.Builder
	st := cli.Talk(path, wire.Options{}, strings.NewReader("route show\n"), false, &out, &errs)
	if st == 0 || errs.Len() == 0 {
		t.Fatalf("a status frame cut short: status %d, stderr %q", st, errs.String())
	}
}

// TestClientBatchSize: a batch read from a file tells the daemon its size
// in the header (so a full table's load sizes its buffers once); one from
// a pipe or a stream does not, and the header's other options, the stats
// count among them, read back as they were.
func TestClientBatchSize(t *testing.T) {
	o := wire.Options{Batch: true, Force: true, Stats: 2, Size: 10290274, BatchName: "a name with spaces"}
	if got, err := wire.ParseHeader(o.Header()); err != nil || got != o {
		t.Fatalf("header %q reads back as %+v, %v; want %+v", o.Header(), got, err, o)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "routes.batch")
	text := "route add 2001:db8:1::/48 dev d0\nroute add 2001:db8:2::/48 dev d0\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	sent := func(input io.Reader) wire.Options {
		t.Helper()
		got := make(chan wire.Options, 1)
		go func() {
			c, err := l.Accept()
			if err != nil {
				got <- wire.Options{}
				return
			}
			defer func() { _ = c.Close() }()
			line, _ := bufio.NewReader(c).ReadString('\n')
			h, _ := wire.ParseHeader(line)
			got <- h
			_, _ = c.Write([]byte{'x', 0, 0, 0, 1, 0})
		}()
		var out, errs strings.Builder
		if st := cli.Talk(sock, wire.Options{Batch: true, BatchName: "routes.batch"}, input, false, &out, &errs); st != 0 {
			t.Fatalf("status %d, stderr %q", st, errs.String())
		}
		return <-got
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read only
	if h := sent(f); h.Size != int64(len(text)) || !h.Batch {
		t.Fatalf("a batch file of %d bytes announced %+v", len(text), h)
	}
	if h := sent(strings.NewReader(text)); h.Size != 0 {
		t.Fatalf("a batch from a stream announced a size: %+v", h)
	}
}

// TestHeaderBound: a header naming a batch file by a path of PATH_MAX
// reads back; one longer than maxHeader is refused, and only as much of
// it is read as the session's buffer holds.
func TestHeaderBound(t *testing.T) {
	o := wire.Options{Batch: true, Force: true, Size: 1 << 40, BatchName: "/" + strings.Repeat("a", 4095)}
	in := bufio.NewReaderSize(strings.NewReader(o.Header()+"route show\n"), control.ReadBuf)
	if got, err := wire.ReadHeader(in); err != nil || got != o {
		t.Fatalf("a header of %d bytes read back as %+v, %v", len(o.Header()), got, err)
	}
	long := &countingReader{r: strings.NewReader(strings.Repeat("a", wire.MaxHeader) + "\n")}
	if _, err := wire.ReadHeader(bufio.NewReaderSize(long, control.ReadBuf)); !errors.Is(err, wire.ErrLongHeader) {
		t.Fatalf("a header of %d bytes: %v", wire.MaxHeader+1, err)
	}
	endless := &countingReader{r: &repeatReader{}}
	if _, err := wire.ReadHeader(bufio.NewReaderSize(endless, control.ReadBuf)); !errors.Is(err, wire.ErrLongHeader) || endless.n > control.ReadBuf {
		t.Fatalf("a header without end: %v after %d bytes read", err, endless.n)
	}
}

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// repeatReader reads as 'a's without end.
type repeatReader struct{}

func (repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}
