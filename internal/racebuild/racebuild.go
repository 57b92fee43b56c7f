// Package racebuild tells tests whether they run under the race detector
// (Enabled), so that what it only slows runs smaller there (Sized): the
// randomised, model and full-table tests that run in one goroutine, where
// it has nothing to watch but slows each step ten to forty times. `make
// test` runs those packages once more at full size without it.
//
//	racebuild.go          Sized, and this comment
//	race_on.go, race_off.go  Enabled, by the race build tag
package racebuild

// Sized is full without the race detector and small under it.
func Sized(full, small int) int {
	if Enabled {
		return small
	}
	return full
}
