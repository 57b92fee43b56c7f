//go:build !race

package feed

// repeats is how often TestFPMRepeats says its one route; pendingFlood,
// in MaxPendings, how many waiting groups TestPendingBounded sends.
const (
	repeats      = 5_000_000
	pendingFlood = 8
)
