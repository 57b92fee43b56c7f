package control

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"urouter/control/wire"
	"urouter/router"
)

// `urouter apply FILE [ --dry-run ] [ --all ]`: the running router made to
// say what a config says (save's language, or one written by hand), by
// the commands that change only what differs (apply_plan.go). The config
// is loaded into a router on paper (router.NewPaper): that checks every
// line as a start would, before anything changes, and gives what it says
// in save's words. The changes are tried on a paper copy of the running
// router first, which must then save what the config's saves; only then
// do they run, in this session: its record in the state file is one, so a
// crash leaves the old configuration or the new, whole.

func applyUsage() *cmdErr {
	return parseErr("Usage: urouter apply FILE [ --dry-run ] [ --all ]\n" +
		"The running router made to say what FILE says, by the commands that differ (docs/apply.md).")
}

// applyCmd is `apply` as a line of a batch: the file is the client's to
// read and send (urouter apply FILE), not the session's.
func applyCmd(args [][]byte) *cmdErr {
	if len(args) > 0 && matches(args[0], "help") {
		return applyUsage()
	}
	e := applyUsage()
	e.msg = "Error: apply reads its FILE in the client, not in a batch.\n" + e.msg
	return e
}

// maxApply bounds a config apply takes: a full table's, with room.
const maxApply = 512 << 20

// applyInput runs `apply`: the session's input is the config, read whole.
func (s *Session) applyInput(in *bufio.Reader) int {
	content, err := io.ReadAll(io.LimitReader(in, maxApply+1))
	switch {
	case err != nil:
		s.errOut(fmt.Sprintf("Error: cannot read the config %q: %v", s.opt.BatchName, err))
		return 1
	case len(content) > maxApply:
		s.errOut(fmt.Sprintf("Error: the config %q is longer than %d bytes.", s.opt.BatchName, maxApply))
		return 1
	case int64(len(content)) != s.opt.Size:
		// the client said how much: less is a client gone mid-send
		s.errOut(fmt.Sprintf("Error: the config %q was cut short (%d of %d bytes): nothing changed.", s.opt.BatchName, len(content), s.opt.Size))
		return 1
	}
	return s.Apply(s.opt.BatchName, content, s.opt.DryRun, s.opt.All)
}

// Apply makes the router say what config content (named name) says and
// prints the commands that did it (dryRun: that would). Without all,
// what the feeds own is neither compared nor changed. It returns the
// exit status.
func (s *Session) Apply(name string, content []byte, dryRun, all bool) int {
	ran, status := s.applyLocked(name, content, dryRun, all)
	for _, c := range ran {
		s.out.WriteString(c + "\n")
	}
	return status
}

// applyLocked plans and runs apply under the daemon's lock on applies,
// and returns the commands that ran: its client is told once the lock
// is let go (one that does not read holds up no other apply).
func (s *Session) applyLocked(name string, content []byte, dryRun, all bool) ([]string, int) {
	if s.applying != nil {
		s.applying.Lock()
		defer s.applying.Unlock()
	}
	cmds, err := s.applyPlan(name, content, all)
	if err != nil {
		s.errOut(err.Error())
		return nil, 1
	}
	if dryRun {
		return cmds, 0
	}
	n, status := s.runApplied(name, cmds, all)
	return cmds[:n], status
}

// applyPlan is the commands that make the router say content.
func (s *Session) applyPlan(name string, content []byte, all bool) ([]string, error) {
	paper := s.paper
	if paper == nil {
		paper = router.NewPaper
	}
	file := paper()
	defer file.Discard()
	if n, err := RunConfig(file, name, bytes.NewReader(content), int64(len(content)), io.Discard); err != nil {
		msg := err.Error()
		if !strings.Contains(msg, "Command failed ") { // a line that did not parse: ip says no more
			msg += fmt.Sprintf("\nCommand failed %s:%d", name, n)
		}
		return nil, fmt.Errorf("%s\nError: %s not applied: nothing changed.", msg, name)
	}
	// what the feeds own now is the feeds' (unless all), in the file too
	target := parseConfig(saveOf(file, s.feeds, all))
	free := freeLinks(content)
	running := s.saveLines(all)
	pl := &planner{target: target, free: free}
	if sameConfig(pl.norm(parseConfig(running)), pl.norm(target)) {
		return nil, nil // nothing to do: no copy to try it on
	}
	copied := paper()
	defer copied.Discard()
	if _, err := RunConfig(copied, "the running configuration", strings.NewReader(saveHeader+strings.Join(running, "")), 0, io.Discard); err != nil {
		return nil, fmt.Errorf("Error: apply: the running configuration does not load on paper:\n%v", err)
	}
	pl.s = paperSession(copied)
	if err := pl.plan(); err != nil {
		return nil, fmt.Errorf("Error: apply: %v", err)
	}
	return pl.cmds, nil
}

// runApplied runs cmds in the session as one batch, and says how many
// ran. The lines' gateways were checked on paper (the order that changes
// converge in is not the order a config loads in): they are not checked
// again. One that fails stops them, and the router is brought back to
// what it said before, as far as it goes.
func (s *Session) runApplied(name string, cmds []string, all bool) (int, int) {
	before := s.saveLines(all)
	restoring, batch, bname := s.restoring, s.opt.Batch, s.opt.BatchName
	s.restoring, s.opt.Batch, s.opt.BatchName = true, true, name
	defer func() { s.restoring, s.opt.Batch, s.opt.BatchName = restoring, batch, bname }()
	for i, c := range cmds {
		s.line++
		e := s.exec([]byte(c + "\n"))
		s.step()
		if e == nil {
			continue
		}
		s.commit()
		s.errOut(e.msg)
		s.errOut(fmt.Sprintf("Error: apply %s: %q failed; bringing the router back", name, c))
		if err := s.revert(before, all); err != nil {
			s.errOut(err.Error())
		}
		return i, 1
	}
	s.commit()
	return len(cmds), 0
}

// revert applies before, the configuration the router had.
func (s *Session) revert(before []string, all bool) error {
	cmds, err := s.applyPlan("the configuration before", []byte(saveHeader+strings.Join(before, "")), all)
	if err != nil {
		return err
	}
	for _, c := range cmds {
		if e := s.exec([]byte(c + "\n")); e != nil {
			return errors.New(e.msg)
		}
	}
	return nil
}

// saveLines is the session's router's save (all: with what feeds own), a
// line each, each ending in '\n'.
func (s *Session) saveLines(all bool) []string {
	return saveOf(s.r, s.feeds, all)
}

// saveOf is router r's save, as saveLines.
func saveOf(r *router.Router, feeds *Feeds, all bool) []string {
	var lines []string
	sv := &Session{r: r, feeds: feeds}
	sv.save(all, func(_ string, line []byte) { lines = append(lines, string(line)) })
	return lines
}

// paperSession is a session on a router on paper, whose lines are save's
// or apply's: their gateways are not checked again.
func paperSession(r *router.Router) *Session {
	s := NewSession(r, wire.Options{Batch: true, BatchName: "apply"}, bufio.NewWriter(io.Discard), func(string) {})
	s.restoring = true
	return s
}

// runLine runs one line in a paper session, and says how it failed.
func (s *Session) runLine(line string) error {
	e := s.exec([]byte(line + "\n"))
	s.commit()
	if e != nil {
		return errors.New(strings.TrimPrefix(e.msg, "Error: "))
	}
	return nil
}
