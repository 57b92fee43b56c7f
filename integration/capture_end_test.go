package integration

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
)

// TestCaptureNinth: past the 8 captures that run at once, a ninth is
// refused with its error and exit status 1 (it exited 0), and writes
// nothing.
func TestCaptureNinth(t *testing.T) {
	parallel(t)
	needRoot(t)
	d := startDaemon(t, newNetns(t, "uro-c9"), "link add d0 type dummy", "link set d0 up")
	for i := 0; i < 8; i++ {
		c := exec.Command(plain, "--socket", d.sock, "capture", "dev", "d0", "-w", os.DevNull)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.Process.Kill() // it runs until killed
			_ = c.Wait()         // killed: its status is not the test's
		})
	}
	waitCaptures(t, d, 8)
	file := filepath.Join(t.TempDir(), "ninth.pcapng")
	_, errs, st := d.run("capture", "dev", "d0", "-w", file)
	if st != 1 || errs != "Error: 8 captures run already.\n" {
		t.Errorf("a ninth capture: exit %d, %q; want 1 and the error", st, errs)
	}
	if _, err := os.Stat(file); err == nil {
		t.Errorf("the ninth capture wrote %s", file)
	}
}

// TestCaptureLinkDeleted: a capture of a link that is then deleted ends,
// as tcpdump's does when its interface disappears: its stream whole, the
// error on stderr, exit status 1, and its slot free. It ran on, holding
// its slot and its ring's 32 MiB.
func TestCaptureLinkDeleted(t *testing.T) {
	parallel(t)
	needRoot(t)
	d := startDaemon(t, newNetns(t, "uro-cdel"), "link add d0 type dummy", "link set d0 up")
	_, file := tempFile(t, "gone.pcapng")
	c := startCapture(t, d, nil, "dev", "d0", "-w", file)
	mustRun(t, plain, "--socket", d.sock, "link", "del", "d0")
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the capture of a deleted link runs on: %s", c.errs)
	}
	if c.status != 1 || !strings.Contains(c.errs.String(), "Error: the link d0 disappeared.") {
		t.Errorf("the capture of a deleted link ended: exit %d, %q", c.status, c.errs)
	}
	waitCaptures(t, d, 0)
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read only
	ng, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatalf("the stream of a capture whose link went: %v", err)
	}
	for {
		if _, _, err := ng.ReadPacketData(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the stream of a capture whose link went: %v", err)
		}
	}
}
