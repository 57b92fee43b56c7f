package control

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Replaying a state file at the start: its snapshot, then its changes in
// the order they ran.

// replayer applies a state file's lines as a forced batch.
type replayer struct {
	st *State
	s  *session
}

func (st *State) replayer() *replayer {
	return &replayer{st: st, s: &session{r: st.r, feeds: st.feeds, opt: options{batch: true, force: true, batchName: st.path},
		out: bufio.NewWriter(io.Discard), restoring: true}}
}

// run applies line, line fileLine of the file, written at t (0: now): a
// route's expires counts from then. A line that does not parse is the
// error; one the router refuses is logged and counted.
func (rp *replayer) run(line []byte, fileLine int, t int64) error {
	st, s := rp.st, rp.s
	s.line = fileLine
	s.clock = time.Time{}
	if t != 0 {
		s.clock = time.Unix(0, t)
	}
	if len(line) > maxLine {
		return fmt.Errorf("%s:%d: command line too long", st.path, fileLine)
	}
	st.Loaded.Lines++
	e := s.exec(line)
	if e == nil {
		return nil
	}
	if e.exits || e.code == 255 || strings.HasPrefix(e.msg, "Object \"") {
		return fmt.Errorf("%s:%d: %s", st.path, fileLine, e.msg)
	}
	st.Loaded.Errors++
	why := fmt.Sprintf("%s:%d: %s", st.path, fileLine, e.msg)
	st.log("state " + why)
	if s.adopt == nil { // a feed's line comes back from its daemon
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
	defer rp.s.commit()
	feedPart := false
	return lines(rec.text, rec.line, func(line []byte, n int) error {
		if bytes.Equal(line, feedMark) {
			rp.s.commit()
			feedPart = true
			if st.fpm != nil {
				rp.s.adopt = st.fpm
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
	defer rp.s.commit()
	for _, c := range cs {
		if err := rp.run(c.line, c.n, c.time); err != nil {
			return err
		}
	}
	return nil
}
