// Package archdoc holds ARCHITECTURE.md to the code: its test reads the
// import graph written in the document's "Import graph" section and
// compares it with what `go list` says the packages import (test files
// left out), so the document cannot drift from the code unnoticed; and
// it holds each package doc comment's file map, where it has one, to the
// package's files.
//
// It has no code of its own and imports nothing; nothing imports it.
package archdoc
