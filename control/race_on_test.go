//go:build race

package control

// underRace: the race detector makes the randomised parser tests and the
// full table's round trip (one goroutine each: nothing for it to see) ten
// times slower, and the read-ahead's 52 batches run both ways, whose
// handover between reader and session it watches as well on a third of
// their lines. Under it they run smaller; `make test` runs control at
// full size without it too.
const underRace = true
