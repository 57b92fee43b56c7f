//go:build race

package fib6

// underRace: the race detector makes the model and real-table tests ten
// to twenty times slower, most of it in the models' maps and sorts, which
// no goroutine shares. Under it they run smaller (sized, realTableSized);
// `make test` runs them at full size without it.
const underRace = true
