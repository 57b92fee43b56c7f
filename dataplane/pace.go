package dataplane

import (
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A control-plane writer yields to the data plane. On a small machine the
// goroutine applying a long batch (a route storm, a full table) competes
// with the forwarding workers, and with the hosts' own traffic, for the
// same cores: a CPU it takes is one forwarding loses. So while the
// workers are busy (they read busyBatches batches or more in a slice), a
// writer works a slice of paceSlice CPU time, publishes what it did, and
// sleeps so that it takes at most its share of one CPU. When nothing is
// forwarded, or the share is 100%, a writer runs flat out. A writer
// that waits on something that is not its work (a client's next lines)
// gives its thread back meanwhile (Park), so that a thousand writers
// waiting cost no thread.

const (
	paceSlice   = 500 * time.Microsecond
	busyBatches = 4 // ~8,000 batches/s: traffic, not a ping every 10 ms
)

// SetControlShare sets the share of one CPU, in (0, 1], a control-plane
// writer takes at most while the workers forward; 1 is no limit.
func (dp *Dataplane) SetControlShare(share float64) {
	dp.controlShare.Store(uint64(share * 1e6))
}

// NiceIdle is the control nice value that puts a writer's threads in
// SCHED_IDLE, below any nice value: a waking worker then always preempts
// them, as the kernel's softirq forwarding preempts any process. Nice 19
// alone does not do that under EEVDF, which lets the running thread keep
// the CPU to the end of its slice.
const NiceIdle = 20

// SetControlNice sets the nice value (0 to 19, or NiceIdle) of a paced
// writer's threads, the applier's and its helpers', while they are paced.
func (dp *Dataplane) SetControlNice(nice int) {
	dp.controlNice.Store(int32(nice))
}

// lowerThread gives the calling goroutine's thread, locked to it, the
// data plane's control priority, and returns what undoes it, which says
// whether the thread was given back. A thread that cannot be given its
// priority back (raising it needs CAP_SYS_NICE) stays locked to its
// goroutine and ends with it, so that no other goroutine runs at the
// writer's priority.
func (dp *Dataplane) lowerThread() (undo func() bool) {
	nice := dp.controlNice.Load()
	runtime.LockOSThread()
	unlock := func() bool { runtime.UnlockOSThread(); return true }
	if nice <= 0 {
		return unlock
	}
	tid := unix.Gettid()
	was, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return unlock
	}
	low := unix.SchedAttr{Policy: was.Policy, Nice: nice}
	if nice >= NiceIdle {
		low = unix.SchedAttr{Policy: unix.SCHED_IDLE}
	}
	if unix.SchedSetAttr(tid, &low, 0) != nil {
		return unlock
	}
	return func() bool {
		if unix.SchedSetAttr(tid, was, 0) != nil {
			return false
		}
		return unlock()
	}
}

// held is a lowered thread a goroutine holds (see lowerThread), which it
// gives back while it waits on something that is not work (a client)
// and takes again after: a thousand writers waiting so cost no thread.
type held struct {
	dp   *Dataplane
	undo func() bool
	// kept: the thread could not be given its priority back, and so
	// stays the goroutine's to its end; parked: the goroutine has no thread
	kept, parked bool
}

func (h *held) park() {
	if h.parked || h.kept {
		return
	}
	if h.parked = h.undo(); !h.parked {
		h.kept = true
	}
}

func (h *held) resume() {
	if h.parked {
		h.undo, h.parked = h.dp.lowerThread(), false
	}
}

func (h *held) done() {
	if !h.parked && !h.kept {
		h.undo()
	}
}

// Pacer paces one writer goroutine, and the CPU its helpers charge it.
type Pacer struct {
	dp     *Dataplane
	clock  paceClock
	thread held // locked and lowered, or parked
	share  float64
	start  time.Duration // the thread's CPU time at the slice's start
	ran    time.Duration // while parked: the slice's CPU time so far
	seen   uint64        // the workers' batches then
	// helpers: CPU time the writer's helpers (a batch's parser) spent for
	// it, charged through a Meter; helped what of it the slice has seen
	helpers atomic.Int64
	helped  int64
}

// Meter charges a pacer with the CPU time of a helper goroutine.
type Meter struct {
	p      *Pacer
	thread held
	last   time.Duration
}

// Meter returns a meter of the calling goroutine, locked to its thread
// until Done. A nil pacer gives a nil meter, whose methods do nothing.
func (p *Pacer) Meter() *Meter {
	if p == nil {
		return nil
	}
	undo := p.dp.lowerThread()
	return &Meter{p: p, thread: held{dp: p.dp, undo: undo}, last: p.clock.threadCPU()}
}

// Go runs work on a helper goroutine of the writer's (a table's build in
// two halves): its thread lowered as the writer's is, its CPU charged to
// the pacer.
func (p *Pacer) Go(work func()) {
	go func() {
		m := p.Meter()
		defer m.Done()
		work()
	}()
}

// Charge adds the CPU time the goroutine spent since its last charge.
func (m *Meter) Charge() {
	if m == nil {
		return
	}
	now := m.p.clock.threadCPU()
	m.p.helpers.Add(int64(now - m.last))
	m.last = now
}

// Done charges what is left and ends the metering.
func (m *Meter) Done() {
	if m == nil {
		return
	}
	m.Charge()
	m.thread.done()
}

// Park charges what the goroutine spent and gives its thread back while
// it waits (on the client); Resume takes one again, lowered.
func (m *Meter) Park() {
	if m == nil {
		return
	}
	m.Charge()
	m.thread.park()
}

// Resume ends a Park.
func (m *Meter) Resume() {
	if m == nil || !m.thread.parked {
		return
	}
	m.thread.resume()
	m.last = m.p.clock.threadCPU()
}

// NewPacer returns the calling goroutine's pacer, or nil when neither the
// share nor the priority limits anything. It locks the goroutine to its
// thread until Done, so that the thread's CPU time is the writer's (and
// its priority the lowered one): a slice is measured in CPU, not wall
// time, because on a busy machine the writer is itself kept off the CPU
// for part of a slice, and a wall-clock share would give it less than its
// share.
func (dp *Dataplane) NewPacer() *Pacer {
	share := float64(dp.controlShare.Load()) / 1e6
	if share <= 0 || share > 1 {
		share = 1 // no limit
	}
	if share == 1 && dp.controlNice.Load() <= 0 {
		return nil
	}
	undo := dp.lowerThread()
	clock := dp.paceClock
	if clock == nil {
		clock = kernelClock{}
	}
	return &Pacer{dp: dp, clock: clock, thread: held{dp: dp, undo: undo}, share: share, start: clock.threadCPU(), seen: dp.Batches()}
}

// Done ends the pacing (on the goroutine that made the pacer).
func (p *Pacer) Done() { p.thread.done() }

// Park gives the writer's thread back while it waits on something that is
// not its work (its client), on the goroutine that made the pacer; the
// slice goes on after Resume, on whatever thread it then gets. A nil
// pacer does nothing.
func (p *Pacer) Park() {
	if p == nil || p.thread.parked {
		return
	}
	p.ran = p.clock.threadCPU() - p.start
	p.thread.park()
}

// Resume ends a Park: the writer's goroutine locked to a thread again,
// lowered.
func (p *Pacer) Resume() {
	if p == nil || !p.thread.parked {
		return
	}
	p.thread.resume()
	p.start = p.clock.threadCPU() - p.ran
}

// Step is called between the writer's units of work (every few lines of
// a batch). Once a slice is used up and the workers are busy, it calls
// publish (the writer's commit: nothing is held while it sleeps, and what
// the slice did reaches the packets), then sleeps.
func (p *Pacer) Step(publish func()) {
	if p.share == 1 { // only lowered
		return
	}
	helped := p.helpers.Load()
	ran := p.clock.threadCPU() - p.start + time.Duration(helped-p.helped)
	if ran < paceSlice {
		return
	}
	p.helped = helped
	seen := p.dp.Batches()
	if seen-p.seen >= busyBatches {
		if publish != nil {
			publish()
		}
		p.clock.sleep(time.Duration(float64(ran) * (1 - p.share) / p.share))
		seen = p.dp.Batches() // what the workers read while it slept is not the next slice's
	}
	p.start, p.seen = p.clock.threadCPU(), seen
}

// A paceClock is what a pacer measures its slices and waits by: the
// calling thread's CPU time, and a sleep.
type paceClock interface {
	threadCPU() time.Duration
	sleep(d time.Duration)
}

// kernelClock is the kernel's CLOCK_THREAD_CPUTIME_ID, and time.Sleep.
type kernelClock struct{}

func (kernelClock) threadCPU() time.Duration { return threadCPU() }
func (kernelClock) sleep(d time.Duration)    { time.Sleep(d) }

// threadCPU is the CPU time of the calling thread.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0 // never on Linux; a pacer then never sleeps
	}
	return time.Duration(ts.Nano())
}
