//go:build !race

package feed

const repeats = 5_000_000
