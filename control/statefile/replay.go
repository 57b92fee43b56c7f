package statefile

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Replaying a state file at the start: its snapshot, then its changes in
// the order they ran.

// replayer runs a state file's lines through the language, and keeps
// those the router refuses.
type replayer struct {
	st *State
	rp Replayer
	// adopted: the lines are a feed's, which come back from its daemon
	// and are not held
	adopted bool
}

func (st *State) replayer() *replayer {
	return &replayer{st: st, rp: st.lang.Replayer(st.path)}
}

// run applies line, line fileLine of the file, written at t (0: now). A
// line that does not parse is the error; one the router refuses is logged,
// counted and held.
func (rp *replayer) run(line []byte, fileLine int, t int64) error {
	st := rp.st
	var when time.Time
	if t != 0 {
		when = time.Unix(0, t)
	}
	st.Loaded.Lines++
	err := rp.rp.Run(line, fileLine, when)
	if err == nil {
		return nil
	}
	why := fmt.Sprintf("%s:%d: %v", st.path, fileLine, err)
	var r refused
	if !errors.As(err, &r) || !r.Refused() {
		return errors.New(why)
	}
	st.Loaded.Errors++
	st.log("state " + why)
	if !rp.adopted {
		text := append(bytes.Clone(bytes.TrimRight(line, "\n")), '\n')
		st.held = append(st.held, heldLine{text: text, why: why})
	}
	return nil
}

// lines calls fn with each line of text (its '\n' kept) and its number,
// from first.
func lines(text []byte, first int, fn func(line []byte, n int) error) error {
	for n := first; len(text) > 0; n++ {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i+1], text[i+1:]
		} else {
			text = nil
		}
		if err := fn(line, n); err != nil {
			return err
		}
	}
	return nil
}

// replay applies the snapshot record; after the feed's mark, what it adds
// is the FPM feed's again (without --fpm, nobody's: it is passed over).
func (st *State) replay(rec *journalRecord) error {
	rp := st.replayer()
	defer rp.rp.Commit()
	feedPart := false
	return lines(rec.text, rec.line, func(line []byte, n int) error {
		if bytes.Equal(line, feedMark) {
			rp.rp.Commit()
			feedPart = true
			if st.fpm != nil {
				rp.rp.Adopt(st.fpm)
				rp.adopted = true
			}
			return nil
		}
		if feedPart && st.fpm == nil {
			return nil
		}
		return rp.run(line, n, rec.time)
	})
}

// seqMark is the line `#@seq N` a session's record puts before a line
// whose number in the run is not the one after its line before (another
// session's changes came between): N, and whether line is one.
func seqMark(line []byte) (uint64, bool) {
	rest, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\n")), []byte(seqWord))
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(rest), 10, 64)
	return n, err == nil
}

const seqWord = "#@seq "

// replayChanges applies the change records' lines in the order they ran,
// which is not the order of the records when sessions overlapped (each is
// sealed when it ends): by the numbers of their #@seq marks; a line without
// one comes after the line before it, and a record's first unmarked line
// after every line before it in the file.
func (st *State) replayChanges(recs []journalRecord) error {
	type change struct {
		seq  uint64
		line []byte
		n    int
		time int64
	}
	var cs []change
	var last, top uint64
	sorted := true
	for i := range recs {
		rec := &recs[i]
		next := top + 1
		_ = lines(rec.text, rec.line, func(line []byte, n int) error {
			if seq, ok := seqMark(line); ok {
				next = seq
				return nil
			}
			cs = append(cs, change{next, line, n, rec.time})
			sorted = sorted && next > last
			last, top = next, max(top, next)
			next++
			return nil
		})
	}
	if !sorted {
		slices.SortStableFunc(cs, func(a, b change) int { return cmp.Compare(a.seq, b.seq) })
	}
	st.seq.Store(top)
	rp := st.replayer()
	defer rp.rp.Commit()
	for _, c := range cs {
		if err := rp.run(c.line, c.n, c.time); err != nil {
			return err
		}
	}
	return nil
}
