//go:build !race

package racebuild

// Enabled reports whether the package is built with the race detector.
const Enabled = false
