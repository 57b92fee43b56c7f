package ndisc

import (
	"testing"
	"time"
)

// TestProbes: a failed gateway is due once per interval until it
// recovers or is forgotten.
func TestProbes(t *testing.T) {
	p := NewProbes[int](time.Minute)
	t0 := time.Now()
	p.Fail(1, t0)
	p.Fail(2, t0)
	if !p.Failing(1) || p.Failing(3) {
		t.Fatal("Failing")
	}
	if due := p.Due(t0.Add(time.Second)); len(due) != 0 {
		t.Fatalf("due before the interval: %v", due)
	}
	if due := p.Due(t0.Add(time.Minute)); len(due) != 2 {
		t.Fatalf("due after the interval: %v", due)
	}
	if due := p.Due(t0.Add(time.Minute + time.Second)); len(due) != 0 {
		t.Fatalf("due again at once: %v", due)
	}
	p.Recover(1)
	p.Forget(func(k int) bool { return k == 2 })
	if p.Failing(1) || p.Failing(2) || len(p.Due(t0.Add(time.Hour))) != 0 {
		t.Fatal("a recovered or forgotten gateway is still probed")
	}
}
