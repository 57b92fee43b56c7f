package control

import (
	"bufio"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
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
	st := talk(sock, options{batch: true, batchName: "F"}, in, false, &out, &errs)
	if st == 0 || !strings.Contains(errs.String(), "Error: ") || !strings.Contains(errs.String(), "Input/output error") ||
		strings.Contains(errs.String(), "daemon closed") { // the cut is the client's, not the daemon's
		t.Fatalf("a batch cut by a read error: status %d, stderr %q", st, errs.String())
	}
	if got, _, _ := run(r, options{}, "route show 2001:db8:ffff::/48"); got != "" {
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
	st := talk(path, options{}, strings.NewReader("route show\n"), false, &out, &errs)
	if st == 0 || errs.Len() == 0 {
		t.Fatalf("a status frame cut short: status %d, stderr %q", st, errs.String())
	}
}
