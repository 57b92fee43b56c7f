//go:build race

package feed

// Under the race detector the feed's tests that flood one session (one
// reader goroutine and the applier) run smaller: it makes each message
// some forty times slower. `make test` runs the package at full size
// without it too.
const (
	repeats      = 200_000
	pendingFlood = 2
)
