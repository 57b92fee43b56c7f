package feed

import (
	"fmt"
	"log"
	"sync"
	"time"
)

// logLimit holds a kind of log line to about one an interval, whatever
// its cause does: the first line is printed, those that follow within
// the interval are counted, and at its end one line says how many there
// were and the last of them. A peer that reconnects 4,000 times a second,
// or a zebra that sends a table of routes urouter refuses, so costs a few
// lines, not one each.
type logLimit struct {
	what  string        // what the summary counts
	every time.Duration // the interval
	out   func(string)  // nil: the standard logger
	clock clock         // nil: the wall clock (a test steps its own)

	mu    sync.Mutex
	next  time.Time // lines before it are held
	held  int
	since time.Time // the first held
	last  string    // the last held
}

func (l *logLimit) printf(format string, args ...any) { l.print(fmt.Sprintf(format, args...)) }

func (l *logLimit) print(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clockOf().now()
	if !now.Before(l.next) {
		l.next = now.Add(l.every)
		l.emit(s)
		return
	}
	if l.held == 0 {
		l.since = now
		l.clockOf().afterFunc(l.next.Sub(now), l.flush)
	}
	l.held++
	l.last = s
}

// flush says what the interval held; the line it prints is the next
// interval's.
func (l *logLimit) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == 0 {
		return
	}
	l.emit(fmt.Sprintf("%d more %s since %s, the last: %s", l.held, l.what, l.since.Format("15:04:05"), l.last))
	l.held, l.last = 0, ""
	l.next = l.clockOf().now().Add(l.every)
}

func (l *logLimit) clockOf() clock {
	if l.clock == nil {
		return wallClock{}
	}
	return l.clock
}

func (l *logLimit) emit(s string) {
	if l.out != nil {
		l.out(s)
		return
	}
	log.Print(s)
}
