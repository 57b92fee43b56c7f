package router

import (
	"time"

	"urouter/fib6"
)

// Route expiry: routes with an expiry time (an RA's, or `expires`) go when
// it passes, as Linux's fib6_gc_timer takes them.

// An expiryClock is what routineExpire keeps time by: now (Unix
// nanoseconds), a tick every expireEvery, and a retry after d. The
// router's is the wall clock's; a test gives its own.
type expiryClock interface {
	now() int64
	ticks() (c <-chan time.Time, stop func())
	after(d time.Duration) <-chan time.Time
}

type wallClock struct{}

func (wallClock) now() int64 { return time.Now().UnixNano() }
func (wallClock) ticks() (<-chan time.Time, func()) {
	t := time.NewTicker(expireEvery)
	return t.C, t.Stop
}
func (wallClock) after(d time.Duration) <-chan time.Time { return time.After(d) }

// routineExpire deletes routes whose time has come, once a second. It
// never waits for a table: a table whose lock a client holds is tried
// again shortly, and the other tables expire on time meanwhile.
func (r *Router) routineExpire(stop <-chan struct{}) {
	tick, stopTicks := r.expiry.ticks()
	defer stopTicks()
	var retry <-chan time.Time // nil: no table to try again
	var busy []*fib6.Table
	for {
		select {
		case <-stop:
			return
		case <-tick:
			busy = r.expire(r.Tables.All())
		case <-retry:
			busy = r.expire(busy)
		}
		retry = nil
		if len(busy) > 0 {
			retry = r.expiry.after(expireRetry)
		}
	}
}

// expire expires the routes of each table of ts that it can lock at once,
// and returns the others.
func (r *Router) expire(ts []*fib6.Table) []*fib6.Table {
	now := r.expiry.now()
	var busy []*fib6.Table
	for _, t := range ts {
		if !t.Expiring() {
			continue
		}
		x, ok := t.TryBegin()
		if !ok {
			busy = append(busy, t)
			continue
		}
		x.Expire(now)
		x.Commit()
	}
	return busy
}
