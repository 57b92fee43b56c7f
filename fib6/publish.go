package fib6

import (
	"sync/atomic"
	"time"
)

// PublishBuckets are the upper bounds of the publish-time histogram.
var PublishBuckets = [...]time.Duration{
	time.Microsecond, 10 * time.Microsecond, 100 * time.Microsecond,
	time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second,
}

// publishTimes is a histogram of how long commits took to publish (the
// trie's commit: what a transaction grew, made visible with one store).
// Only the table's writer adds to it, under the table's lock.
type publishTimes struct {
	count, nanos atomic.Uint64
	buckets      [len(PublishBuckets)]atomic.Uint64 // not cumulative
}

func (p *publishTimes) observe(d time.Duration) {
	p.count.Add(1)
	p.nanos.Add(uint64(d))
	for i, b := range PublishBuckets {
		if d <= b {
			p.buckets[i].Add(1)
			return
		}
	}
}

// PublishStats is a table's publish-time histogram: how many commits
// published, their total time, and per bucket of PublishBuckets how many
// took at most that long (cumulative, as Prometheus counts them).
type PublishStats struct {
	Count      uint64
	Total      time.Duration
	Cumulative [len(PublishBuckets)]uint64
}

// Publishes returns the table's publish-time histogram.
func (t *Table) Publishes() PublishStats {
	var s PublishStats
	var cum uint64
	for i := range PublishBuckets {
		cum += t.publishes.buckets[i].Load()
		s.Cumulative[i] = cum
	}
	s.Count, s.Total = t.publishes.count.Load(), time.Duration(t.publishes.nanos.Load())
	return s
}
