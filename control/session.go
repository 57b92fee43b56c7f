package control

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"urouter/control/statefile"
	"urouter/control/wire"
	"urouter/dataplane"
	"urouter/fib6"
	"urouter/router"
	"urouter/rules"
)

// Session runs the commands of one client (or of the config file), in
// order, with one open route transaction at most.
type Session struct {
	r      *router.Router
	feeds  *Feeds // the daemon's route feeds; nil for none
	opt    wire.Options
	out    *bufio.Writer
	errOut func(string)
	txn    *fib6.Txn
	rtxn   *rules.Txn  // the open rule transaction
	routes routeParser // the route object's own state between commands
	args   [][]byte
	line   int
	long   []byte     // a line longer than the reader's buffer
	rule   ruleParser // the rule object's own state between commands
	// printUncached: routes are printed one by one, without the cache of
	// what routes sharing attributes print alike (see addAttrs)
	printUncached bool
	// readAheadAfter: how much of a batch it reads before it reads ahead
	// (0: defaultAheadAfter, -1: from the first line)
	readAheadAfter int
	object         memo // the OBJECT word of the last line (see exec)
	// monitor is set by a monitor command: the caller then streams events;
	// capture by a capture command: the caller streams its packets
	monitor *MonitorRequest
	capture *CaptureRequest
	// rec is the session's part of the state file (nil: none), which it
	// gives the lines that changed something; did is what the last
	// command did that its words do not say, for that record
	rec   *statefile.Recorder
	did   effect
	state *statefile.State // the daemon's, for status
	// restoring: the lines are a saved configuration (a state file, a
	// config that begins with saveHeader), whose gateways are not checked
	// again
	restoring bool
	clock     time.Time         // a replayed record's time (zero: now)
	adopt     statefile.Adopter // a replay of a feed's routes: the feed to give them
	startup   *Startup          // the daemon's start, for status
	pace      *dataplane.Pacer  // a batch's, when it yields to the data plane
	// paceBy: the data plane a batch's pacer is to yield to, taken when
	// its first line runs (a session that waits for one costs no thread)
	paceBy *dataplane.Dataplane
	// conn is the client's connection (nil for a config file); ahead
	// the line being run, when it was parsed ahead (see runAhead)
	conn     AheadConn
	ahead    *aheadLine
	shaped   fib6.Route            // the route of a run of lines shaped alike (see runShaped)
	paper    func() *router.Router // the daemon's (see Daemon.Paper)
	applying *sync.Mutex           // the daemon's (see Daemon.Applying)
}

// txnFor returns the open transaction of table t, committing any other.
// Consecutive route commands for one table so go out in one publish.
func (s *Session) txnFor(t *fib6.Table) *fib6.Txn {
	if s.txn != nil && s.txn.Table() == t {
		return s.txn
	}
	s.commit()
	s.txn = t.Begin()
	if s.opt.Batch && s.opt.Size > 0 {
		// a full table's batch is lines of ~64 bytes; one of shorter lines
		// grows the load's buffer on from there
		s.txn.Expect(int(s.opt.Size / 48))
	}
	if s.pace != nil {
		s.txn.SetHelper(s.pace.Go) // a paced writer's helpers are lowered with it
	}
	return s.txn
}

func (s *Session) commit() {
	s.commitRoutes()
	s.commitRules()
}

func (s *Session) commitRoutes() {
	if s.txn != nil {
		s.txn.Commit()
		s.txn = nil
	}
}

func (s *Session) commitRules() {
	if s.rtxn != nil {
		s.rtxn.Commit()
		s.rtxn = nil
	}
}

// paceEvery is how many lines of a batch go between its pacer's looks at
// the clock.
const paceEvery = 32

// Run executes the command lines of in, and returns the exit status: a
// single command's own, or a batch's (1 if a command failed, 255 if one
// did not parse). A batch stops at its first failure unless forced, and
// where ip exit()s (a parse error) even if forced. The
// open transaction is published at the end, when another table's command
// comes, and whenever the session would wait on its client (its caller's
// part: control/server's pausingConn asks Holding and calls Commit).
func (s *Session) Run(in *bufio.Reader) int {
	if s.opt.Apply {
		return s.applyInput(in)
	}
	status := 0
	defer s.commit()
	read := 0
	for {
		if read > s.aheadAfter() && s.opt.Batch {
			// a long batch: parsed ahead while it runs (what the small
			// buffer holds is read first)
			return s.runAhead(in, status)
		}
		if in.Buffered() == 0 {
			s.flush()
		}
		line, err := in.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a line longer than the buffer
			s.long = append(s.long[:0], line...)
			for err == bufio.ErrBufferFull && len(s.long) <= maxLine {
				line, err = in.ReadSlice('\n')
				s.long = append(s.long, line...)
			}
			if len(s.long) > maxLine {
				s.errOut("Error: command line too long")
				return 255
			}
			line = s.long
		}
		if err != nil {
			return status // a line without its '\n' is a command cut short: dropped
		}
		s.line++
		read += len(line)
		s.takePace()
		e := s.exec(line)
		if s.monitor != nil || s.capture != nil {
			return 0
		}
		s.step()
		if code, stop := s.outcome(e, &status); stop {
			return code
		}
	}
}

// takePace makes a batch's pacer, once it has a line to run: its thread
// is locked from there to the session's end (EndPace), but while the
// session waits on its client (see nextChunk; control/server's
// pausingConn parks it through Pacer).
func (s *Session) takePace() {
	if s.paceBy != nil {
		s.pace, s.paceBy = s.paceBy.NewPacer(), nil
	}
}

// EndPace ends the pacing, if a line took a pacer.
func (s *Session) EndPace() {
	if s.pace != nil {
		s.pace.Done()
	}
}

// step is the pacer's look at the clock, every paceEvery lines.
func (s *Session) step() {
	if s.pace != nil && s.line%paceEvery == 0 {
		s.pace.Step(s.commit)
	}
}

// outcome reports line s.line's error e, if any, as a batch does, and
// says whether the run stops there, with what exit status; status is the
// run's so far (1 once a forced batch had a failure).
func (s *Session) outcome(e *cmdErr, status *int) (int, bool) {
	if e == nil || s.opt.Restore && e.errno == syscall.EEXIST {
		return 0, false
	}
	s.flush()
	s.errOut(e.msg)
	if !s.opt.Batch || e.exits {
		return e.code, true // ip's exit(): it ends even a forced batch
	}
	s.errOut(fmt.Sprintf("Command failed %s:%d", s.opt.BatchName, s.line))
	*status = 1
	return 1, !s.opt.Force
}

// flush sends what the session has printed. A client that went away gets
// nothing more, but the lines it sent whole still run (a batch piped in by
// a client that died): its connection's error is the next read's.
func (s *Session) flush() {
	_ = s.out.Flush()
}

// defaultAheadAfter is how much of a batch a session reads itself before
// the rest is read and parsed ahead (see runAhead): a short batch is not
// worth a goroutine.
const defaultAheadAfter = ReadBuf * 4

// aheadAfter is the session's (Session.readAheadAfter: tests run batches
// both ways); 0 is defaultAheadAfter.
func (s *Session) aheadAfter() int { return cmp.Or(s.readAheadAfter, defaultAheadAfter) }

// A session reads and writes through small buffers, ReadBuf and
// WriteBuf (a connection costs their memory, and most carry one short
// command); a line may be longer than the read buffer, up to maxLine.
const (
	ReadBuf  = 16 << 10
	WriteBuf = 16 << 10
	maxLine  = 1 << 18
)

// objects are iproute2's OBJECT words in its matching order (a prefix of
// the first one wins); the router serves some of them.
var objects = []string{"address", "addrlabel", "maddress", "route", "rule", "neighbor", "neighbour",
	"ntable", "ntbl", "link", "l2tp", "fou", "ila", "macsec", "tunnel", "tunl", "tuntap", "tap",
	"token", "tcpmetrics", "tcp_metrics", "monitor", "xfrm", "mroute", "mrule", "netns", "netconf",
	"vrf", "sr", "nexthop", "mptcp", "ioam", "help", "stats", "ra", "fpm", "mirror", "sysctl", "save", "status",
	"capture", "trace", "apply"}

var objectWords = sync.OnceValue(func() keywords {
	return func() keywords {
		var l []kw
		for i, o := range objects {
			l = append(l, kw{o, true, i + 1})
		}
		return newKeywords(l)
	}()
})

func (s *Session) exec(line []byte) *cmdErr {
	args, err := splitLine(line, s.args)
	s.args = args
	if err != nil {
		return &cmdErr{msg: err.Error(), code: 1}
	}
	if len(args) == 0 {
		return nil
	}
	return s.execWords(line, args, classify(args, &s.object))
}

// cmdWords are a command line's object word w, its object, and the
// words after it; inet6 if the line began with -6.
type cmdWords struct {
	w     []byte
	rest  [][]byte
	obj   string
	inet6 bool
}

// classify finds the object of a line's words (at least one); m
// remembers the last object word.
func classify(args [][]byte, m *memo) cmdWords {
	cw := cmdWords{w: args[0], rest: args[1:]}
	if is(cw.w, "-6") && len(cw.rest) > 0 {
		// `-6 OBJECT ...`: ip -6 for this line alone (a saved nexthop on a
		// link alone is IPv6 only so)
		cw.inet6 = true
		cw.w, cw.rest = cw.rest[0], cw.rest[1:]
	}
	if i := m.of(objectWords(), cw.w); i > 0 {
		cw.obj = objects[i-1]
	}
	if is(cw.w, "nh") {
		cw.obj = "nexthop" // the alias; iproute2 6.1 lacks it
	}
	return cw
}

// execWords runs the command of line, split into args, whose object
// classify found.
func (s *Session) execWords(line []byte, args [][]byte, cw cmdWords) *cmdErr {
	if cw.inet6 {
		inet6 := s.opt.Inet6
		s.opt.Inet6 = true
		defer func() { s.opt.Inet6 = inet6 }()
	}
	obj, w, rest := cw.obj, cw.w, cw.rest
	if obj != "route" {
		s.commitRoutes()
	}
	if obj != "rule" {
		s.commitRules()
	}
	if s.rec == nil || !changes(obj, rest) {
		return s.dispatch(obj, w, rest)
	}
	s.rec.Enter()
	s.did.reset()
	e := s.dispatch(obj, w, rest)
	switch {
	case e == nil:
		s.record(line, args)
	case len(s.did.partial) > 0:
		// it failed, but changed this all the same
		s.record(s.did.partial, nil)
	}
	return e
}

// dispatch runs the command of object obj (w as given).
func (s *Session) dispatch(obj string, w []byte, rest [][]byte) *cmdErr {
	switch obj {
	case "route":
		return s.route(rest)
	case "link":
		return s.linkCmd(rest)
	case "address":
		return s.addrCmd(rest)
	case "nexthop":
		return s.nexthopCmd(rest)
	case "rule":
		return s.ruleCmd(rest)
	case "neighbor", "neighbour":
		return s.neighCmd(rest)
	case "ntable", "ntbl":
		return s.ntableCmd(rest)
	case "vrf":
		return s.vrfCmd(rest)
	case "sr":
		return s.srCmd(rest)
	case "ra":
		return s.raCmd(rest)
	case "fpm":
		return s.fpmCmd(rest)
	case "mirror":
		return s.mirrorCmd(rest)
	case "sysctl":
		return s.sysctlCmd(rest)
	case "save":
		return s.saveCmd(rest)
	case "status":
		return s.statusCmd(rest)
	case "monitor":
		return s.monitorCmd(rest)
	case "capture":
		return s.captureCmd(rest)
	case "trace":
		return s.traceCmd(rest)
	case "apply":
		return applyCmd(rest)
	case "help":
		return objectHelp(obj)
	case "":
		return &cmdErr{msg: fmt.Sprintf("Object \"%s\" is unknown, try \"ip help\".", w), code: 1, unknownObject: true}
	}
	return &cmdErr{msg: fmt.Sprintf("Error: object \"%s\" is not supported by this router yet.", obj), code: 1}
}

var errUnterminated = errors.New("Unterminated quoted string")

// Words is the command language as the client asks it (client.Words).
type Words struct{}

// Object is the object word w picks, "" for none.
func (Words) Object(w string) string {
	if i := objectWords().of([]byte(w)); i > 0 {
		return objects[i-1]
	}
	if w == "nh" {
		return "nexthop" // as classify
	}
	return ""
}

// Restores reports whether `obj cmd` is a restore, which reads stdin: cmd
// picks restore in the object's own order of checks (route's "r" is
// replace, rule's is restore).
func (ws Words) Restores(obj, cmd string) bool {
	w := []byte(cmd)
	switch ws.Object(obj) {
	case "route":
		return routeCmds().of(w) == rcRestore
	case "rule":
		return ruleCmds().of(w) == rlRestore
	}
	return false
}
