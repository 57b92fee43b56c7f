package router

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"urouter/dataplane"
)

// TestHostLinkCycles: an Ethernet link on an interface (AF_PACKET on a
// veth) added, brought up and deleted 100 times leaves nothing the first
// collection after cannot free. Each link's worker has 4 MiB of buffers;
// with the collector off during the cycles, anything that keeps a deleted
// link reachable (a sync.Pool of its own is in the runtime's list of
// pools until the second collection after its last use) shows as 4 MiB a
// cycle, and the daemon's GOGC=400 made that 5 MB a cycle of heap.
func TestHostLinkCycles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (a network namespace, a veth, AF_PACKET)")
	}
	// The test's goroutine works in a namespace of its own: its thread
	// enters it and is never given back (it ends with the goroutine).
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		t.Skipf("unshare: %v", err)
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "v0"}, PeerName: "v1"}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	peer, err := netlink.LinkByName("v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(peer); err != nil {
		t.Fatal(err)
	}

	r := New()
	r.Start()
	defer r.Close()
	cycle := func() {
		l, err := r.AddHost("e1", "v0", dataplane.EtherOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.SetUp(l, true); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // its ND sends (DAD), as between two commands
		if err := r.DeleteLink(l); err != nil {
			t.Fatal(err)
		}
	}
	inUse := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	cycle() // what the first link allocates once
	before := inUse()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for i := 0; i < 100; i++ {
		cycle()
	}
	after := inUse()
	t.Logf("heap in use after a collection: %.1f MiB before, %.1f MiB after 100 cycles", float64(before)/(1<<20), float64(after)/(1<<20))
	if after > before+20<<20 {
		t.Errorf("heap in use after a collection grew %.1f MiB over 100 cycles (bound 20 MiB)", float64(after-before)/(1<<20))
	}
}
