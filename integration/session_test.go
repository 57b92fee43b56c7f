package integration

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// frame is one frame of the daemon's answer: kind 'o', 'e' or 'x'.
func frame(kind byte, payload string) []byte {
	b := []byte{kind, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	return append(b, payload...)
}

// TestLongHeader: a client that sends 1 GB without a newline as its
// header is told the header is bad and let go once the daemon has read a
// few KB, and the daemon's memory does not grow (it grew by 2 GB: the
// header was read whole).
func TestLongHeader(t *testing.T) {
	bin := urouter
	if raceBuild { // a race-built daemon's memory holds the detector's
		var err error
		if bin, err = plainBuild(); err != nil {
			t.Fatal(err)
		}
	}
	d := startBinary(t, bin, "", filepath.Join(t.TempDir(), "urouter.sock"), nil)
	pid := d.cmd.Process.Pid
	status := "/proc/" + strconv.Itoa(pid) + "/status"
	hwm := statusField(status, "VmHWM")
	c, err := net.Dial("unix", d.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	// the daemon may read on without end (it did)
	_ = c.SetWriteDeadline(time.Now().Add(60 * time.Second))
	chunk := bytes.Repeat([]byte{'a'}, 1<<20)
	sent := 0
	for sent < 1<<30 {
		n, err := c.Write(chunk)
		sent += n
		if err != nil {
			break
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("reading the answer: %v", err)
	}
	grew := statusField(status, "VmHWM") - hwm
	t.Logf("the daemon took %d MB of the header; its peak RSS grew by %d kB", sent>>20, grew)
	want := append(frame('e', "Error: bad header: longer than 4224 bytes.\n"), frame('x', "\x01")...)
	if !bytes.Equal(answer, want) {
		t.Errorf("the answer to a 1 GB header: %q, want %q", answer, want)
	}
	if sent >= 1<<30 {
		t.Errorf("the daemon read all of a 1 GB header")
	}
	if grew > 16<<10 {
		t.Errorf("the daemon's peak RSS grew by %d kB for a 1 GB header", grew)
	}
	if _, errs, st := d.run("status"); st != 0 {
		t.Errorf("status after a long header: %s", errs)
	}
}
