//go:build !race

package control

const underRace = false
