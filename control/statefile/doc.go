// Package statefile owns a daemon's state file (`urouter daemon --state
// FILE`): the configuration kept across a kill -9, as a snapshot and the
// changes since, each session's sealed as one record and on disk before
// its client is told its status.
//
// It knows the file, not the command language: what it replays and what
// its snapshots say come from a Language (package control's), which runs
// a line and tells a line that does not parse (the start stops) from one
// the router refused (Refused: the line is logged and kept in the file
// until it applies). A session gives its changing lines to a Recorder,
// with what the router chose for them already in their words.
//
//	journal.go       records and seals, appended and compacted, durable
//	journal_load.go  a file read back: its records checked, a torn tail
//	state.go         State: the start's replay, compactions, the FPM feed's snapshot
//	record.go        Recorder: one session's lines, sealed when it ends
//	replay.go        the start's replay: the snapshot, then the changes in the order they ran
package statefile
