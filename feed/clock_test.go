package feed

import (
	"sync"
	"testing"
	"time"
)

// stepClock is a listener's clock the test moves: its timers fire, in
// the order they fall due, only within advance; resets is signalled
// when a timer is armed.
type stepClock struct {
	mu     sync.Mutex
	at     time.Time
	timers []*stepTimer
	resets chan struct{}
}

type stepTimer struct {
	c     *stepClock
	when  time.Time
	f     func()
	armed bool
}

func newStepClock() *stepClock {
	return &stepClock{at: time.Unix(1_000_000_000, 0), resets: make(chan struct{}, 1)}
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *stepClock) afterFunc(d time.Duration, f func()) timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &stepTimer{c: c, when: c.at.Add(d), f: f, armed: true}
	c.timers = append(c.timers, t)
	return t
}

func (t *stepTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.armed
	t.when, t.armed = t.c.at.Add(d), true
	select {
	case t.c.resets <- struct{}{}:
	default: // signalled already
	}
	return was
}

func (t *stepTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.armed
	t.armed = false
	return was
}

// armed says whether a timer waits to fire.
func (c *stepClock) armed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.timers {
		if t.armed {
			return true
		}
	}
	return false
}

// advance moves the clock by d, calling each timer that falls due
// meanwhile at its time.
func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	end := c.at.Add(d)
	for {
		var next *stepTimer
		for _, t := range c.timers {
			if t.armed && !t.when.After(end) && (next == nil || t.when.Before(next.when)) {
				next = t
			}
		}
		if next == nil {
			break
		}
		next.armed = false
		c.at = next.when
		c.mu.Unlock()
		next.f()
		c.mu.Lock()
	}
	c.at = end
	c.mu.Unlock()
}

// stepUntil advances the clock by step while a timer is armed, and waits
// for one to be armed otherwise, until cond holds.
func stepUntil(t *testing.T, c *stepClock, step time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		default:
		}
		if c.armed() {
			c.advance(step)
			continue
		}
		select {
		case <-c.resets:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
