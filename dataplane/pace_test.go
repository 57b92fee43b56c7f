package dataplane

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeClock is a pacer's clock the test moves: each thread's CPU time
// grows by what spend says it worked, and the wall clock by that and by
// what the pacer slept.
type fakeClock struct {
	mu    sync.Mutex
	cpu   map[int]time.Duration // by thread
	wall  time.Duration
	slept time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{cpu: map[int]time.Duration{}} }

func (c *fakeClock) threadCPU() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cpu[unix.Gettid()]
}

func (c *fakeClock) sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall += d
	c.slept += d
}

// spend is d of work on the calling thread.
func (c *fakeClock) spend(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cpu[unix.Gettid()] += d
	c.wall += d
}

func (c *fakeClock) now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

// TestPacer: while the workers read batches, a writer that calls Step
// between units of work takes about its share of a CPU (here 25%); when
// they read none, it never sleeps; a share of 100% makes no pacer.
func TestPacer(t *testing.T) {
	clock := newFakeClock()
	dp := &Dataplane{paceClock: clock}
	w := &worker{}
	ws := []*worker{w}
	dp.workers.Store(&ws)
	if dp.NewPacer() != nil {
		t.Fatal("a pacer without a share")
	}
	dp.SetControlShare(1)
	if dp.NewPacer() != nil {
		t.Fatal("a pacer at 100%")
	}
	dp.SetControlShare(0.25)

	run := func(busy bool) (cpu, wall time.Duration) {
		p := dp.NewPacer()
		defer p.Done()
		publishes := 0
		start, c0 := clock.now(), clock.threadCPU()
		for i := 0; i < 400; i++ {
			clock.spend(50 * time.Microsecond)
			if busy {
				w.epoch.Add(2 * busyBatches) // the workers read batches meanwhile
			}
			p.Step(func() { publishes++ })
		}
		cpu, wall = clock.threadCPU()-c0, clock.now()-start
		if busy && publishes < 30 || !busy && publishes != 0 {
			t.Errorf("busy %v: %d publishes", busy, publishes)
		}
		return cpu, wall
	}
	// idle: no publish is no sleep (the pacer publishes before each)
	if cpu, wall := run(false); wall != cpu {
		t.Errorf("an idle data plane: the writer worked %v and slept %v", cpu, wall-cpu)
	}
	cpu, wall := run(true)
	if share := float64(cpu) / float64(wall); share > 0.3 || share < 0.1 {
		t.Errorf("busy data plane: the writer ran %.0f%% of the time (%v of %v), want about 25%%", share*100, cpu, wall)
	}
}

// TestPacerMeter: the CPU a helper goroutine charges counts as the
// writer's own, so a writer whose parsing is done by a helper still takes
// its share in all (25%: each half of the work about 12.5%).
func TestPacerMeter(t *testing.T) {
	clock := newFakeClock()
	dp := &Dataplane{paceClock: clock}
	w := &worker{}
	ws := []*worker{w}
	dp.workers.Store(&ws)
	dp.SetControlShare(0.25)
	p := dp.NewPacer()
	defer p.Done()
	todo, charged, done := make(chan bool), make(chan bool), make(chan time.Duration)
	go func() {
		m := p.Meter()
		c0 := clock.threadCPU()
		for range todo {
			clock.spend(25 * time.Microsecond)
			m.Charge()
			charged <- true // the writer's next Step sees it
		}
		m.Done()
		done <- clock.threadCPU() - c0
	}()
	start, c0 := clock.now(), clock.threadCPU()
	for i := 0; i < 400; i++ {
		todo <- true
		clock.spend(25 * time.Microsecond)
		<-charged
		w.epoch.Add(2 * busyBatches)
		p.Step(nil)
	}
	close(todo)
	cpu := clock.threadCPU() - c0 + <-done
	wall := clock.now() - start
	if share := float64(cpu) / float64(wall); share > 0.35 || share < 0.1 {
		t.Errorf("the writer and its helper ran %.0f%% of a CPU (%v of %v), want about 25%%", share*100, cpu, wall)
	}
}

// TestPacerNice: a paced writer's thread, and its helpers' (a Meter's, and
// what its Go runs), run at the control priority (a nice value, or SCHED_IDLE) while paced and at their
// own after; with a share of 100% the priority alone still makes a pacer,
// one that never sleeps.
func TestPacerNice(t *testing.T) {
	prio := func() [2]int {
		a, err := unix.SchedGetAttr(unix.Gettid(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if a.Policy == unix.SCHED_IDLE {
			return [2]int{unix.SCHED_IDLE, 0}
		}
		return [2]int{int(a.Policy), int(a.Nice)}
	}
	for _, c := range []struct {
		nice int
		want [2]int
	}{{12, [2]int{unix.SCHED_NORMAL, 12}}, {NiceIdle, [2]int{unix.SCHED_IDLE, 0}}} {
		clock, w := newFakeClock(), &worker{}
		dp := &Dataplane{paceClock: clock}
		ws := []*worker{w}
		dp.workers.Store(&ws)
		dp.SetControlShare(1)
		dp.SetControlNice(c.nice)
		runtime.LockOSThread() // the thread compared before and after
		was := prio()
		p := dp.NewPacer()
		if p == nil {
			t.Fatal("no pacer for a priority")
		}
		if got := prio(); got != c.want {
			t.Errorf("nice %d: the writer's thread at %v, want %v", c.nice, got, c.want)
		}
		helper := make(chan [2][2]int)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			before := prio()
			m := p.Meter()
			in := prio()
			m.Done()
			if after := prio(); after != before {
				in = [2]int{-1, after[1]}
			}
			helper <- [2][2]int{in, before}
		}()
		if h := <-helper; h[0] != c.want {
			t.Errorf("nice %d: the helper's thread at %v while paced (-1: not given back its %v after)", c.nice, h[0], h[1])
		}
		went := make(chan [2]int)
		p.Go(func() { went <- prio() })
		if got := <-went; got != c.want {
			t.Errorf("nice %d: work the pacer's Go ran at %v, want %v", c.nice, got, c.want)
		}
		for i := 0; i < 1000; i++ {
			clock.spend(paceSlice)
			w.epoch.Add(2 * busyBatches)
			p.Step(func() { t.Fatal("a pacer at 100% published") })
		}
		if clock.slept != 0 {
			t.Errorf("1,000 steps at 100%% slept %v", clock.slept)
		}
		p.Done()
		if got := prio(); got != was {
			t.Errorf("nice %d: after the pacing the thread is at %v, was %v", c.nice, got, was)
		}
		runtime.UnlockOSThread()
	}
}

// TestPacerPark: a parked writer's thread has its own priority back (and
// is no longer the writer's), a resumed one is lowered again, and Done
// after a Park and a Resume leaves the thread as it was; a nil pacer's
// Park and Resume do nothing.
func TestPacerPark(t *testing.T) {
	prio := func() unix.SchedAttr {
		a, err := unix.SchedGetAttr(unix.Gettid(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return unix.SchedAttr{Policy: a.Policy, Nice: a.Nice}
	}
	dp := &Dataplane{}
	dp.SetControlShare(1)
	dp.SetControlNice(NiceIdle)
	runtime.LockOSThread() // the thread compared: it stays this goroutine's
	defer runtime.UnlockOSThread()
	was := prio()
	p := dp.NewPacer()
	for i := 0; i < 3; i++ {
		if got := prio(); got.Policy != unix.SCHED_IDLE {
			t.Fatalf("round %d: the writer's thread at %+v, want SCHED_IDLE", i, got)
		}
		p.Park()
		p.Park() // once is enough, more are nothing
		if got := prio(); got != was {
			t.Fatalf("round %d: a parked writer's thread at %+v, was %+v", i, got, was)
		}
		p.Resume()
		p.Resume()
	}
	p.Done()
	if got := prio(); got != was {
		t.Errorf("after the pacing the thread is at %+v, was %+v", got, was)
	}
	var none *Pacer
	none.Park()
	none.Resume()
}
