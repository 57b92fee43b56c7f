//go:build race

package feed

const repeats = 1_000_000
