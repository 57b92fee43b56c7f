package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCaptureNinth: past the 8 captures that run at once, a ninth is
// refused with its error and exit status 1 (it exited 0), and writes
// nothing.
func TestCaptureNinth(t *testing.T) {
	needRoot(t)
	d := startDaemon(t, newNetns(t, "uro-c9"), "link add d0 type dummy", "link set d0 up")
	for i := 0; i < 8; i++ {
		c := exec.Command(urouter, "--socket", d.sock, "capture", "dev", "d0", "-w", os.DevNull)
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
