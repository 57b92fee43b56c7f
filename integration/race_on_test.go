//go:build race

package integration

// raceBuild: under `go test -race` the daemon under test is built with the
// race detector too, and a race it reports fails the test.
const raceBuild = true
