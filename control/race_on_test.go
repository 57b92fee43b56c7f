//go:build race

package control

// underRace: the race detector makes the randomised parser tests and the
// full table's round trip (one goroutine each: nothing for it to see) ten
// times slower. Under it they run smaller; `make test` runs control at
// full size without it too.
const underRace = true
