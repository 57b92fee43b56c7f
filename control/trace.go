package control

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"sync"
	"time"

	"urouter/dataplane"
)

// `trace add COUNT [dev LINK] [FILTER]` arms a trace of the next COUNT
// packets read (on LINK) that FILTER (tcpdump's language) takes; `trace
// show` prints what each did, stage by stage, the decision in the words
// of `route get -d`; `trace clear` disarms it and forgets the records.

const (
	trAdd = iota + 1
	trShow
	trClear
	trHelp
)

var traceWords = sync.OnceValue(func() keywords {
	return newKeywords([]kw{{"add", false, trAdd}, {"show", false, trShow}, {"list", false, trShow},
		{"clear", false, trClear}, {"help", false, trHelp}})
})

const traceUsage = "Usage: urouter trace add COUNT [ dev LINK ] [ FILTER ]\n" +
	"       urouter trace { show | clear }\n" +
	"FILTER := tcpdump's filter language, for raw IPv6 packets"

func (s *Session) traceCmd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.traceShow()
	}
	switch traceWords().of(args[0]) {
	case trAdd:
		return s.traceAdd(args[1:])
	case trShow:
		if len(args) > 1 {
			return parseErr("Error: trace show takes nothing more: \"%s\".", args[1])
		}
		return s.traceShow()
	case trClear:
		s.r.DP.ClearTrace()
		return nil
	case trHelp:
		return parseErr("%s", traceUsage)
	}
	return parseErr("Command \"%s\" is unknown, try \"urouter trace help\".", args[0])
}

func (s *Session) traceAdd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return incomplete()
	}
	n, e := strconv.ParseUint(str(args[0]), 10, 31)
	if e != nil || n == 0 || n > dataplane.MaxTraces {
		return invarg("the count is a number from 1 to "+strconv.Itoa(dataplane.MaxTraces)+"\n", args[0])
	}
	rest := args[1:]
	var l *dataplane.Link
	if len(rest) > 0 && is(rest[0], "dev") {
		if len(rest) < 2 {
			return incomplete()
		}
		if l = s.r.Links.ByName(str(rest[1])); l == nil {
			return invarg("Device does not exist\n", rest[1])
		}
		rest = rest[2:]
	}
	_, f, err := compileFilter(rest)
	if err != nil {
		return err
	}
	s.r.DP.ArmTrace(int(n), l, f)
	return nil
}

// traceShow prints the records kept: a packet's steps, each with its time
// since the packet was read; in JSON its absolute time too.
func (s *Session) traceShow() *cmdErr {
	recs, left := s.r.DP.Traces()
	p := s.newPrinter()
	if !p.json() {
		if len(recs) == 0 {
			s.out.WriteString("No packets traced.")
			if left > 0 {
				s.out.WriteString(" " + strconv.Itoa(left) + " more to trace.")
			}
			s.out.WriteString("\n")
		}
		for _, r := range recs {
			s.traceText(r)
		}
		return nil
	}
	p.begin()
	for _, r := range recs {
		p.j.startObject()
		p.uint("id", "", r.ID)
		p.str("dev", "", r.Link)
		p.openArray("steps")
		for _, st := range r.Steps {
			p.j.startObject()
			p.int("time_ns", "", st.Time)
			p.int("elapsed_ns", "", st.Time-r.Steps[0].Time)
			p.str("stage", "", st.Stage.String())
			if st.Stage == dataplane.StageDecide {
				p.j.strings("decision", s.explanationLines(r))
			} else {
				p.str("text", "", st.Text)
			}
			p.j.endObject()
		}
		p.closeArray()
		p.j.endObject()
	}
	p.end()
	return nil
}

func (s *Session) traceText(r *dataplane.TraceRecord) {
	t0 := r.Steps[0].Time
	s.out.WriteString("Packet " + strconv.FormatUint(r.ID, 10) + ": dev " + r.Link + " at " +
		time.Unix(0, t0).UTC().Format("2006-01-02T15:04:05.000000000Z") + "\n")
	for _, st := range r.Steps {
		s.out.WriteString("  +" + strconv.FormatInt(st.Time-t0, 10) + " ns " + st.Stage.String() + ":")
		if st.Stage == dataplane.StageDecide {
			s.out.WriteString("\n")
			s.writeExplanation(&r.Key, r.Explain, "      ")
			continue
		}
		s.out.WriteString(" " + st.Text + "\n")
	}
}

// explanationLines are a record's decision steps as writeExplanation
// words them.
func (s *Session) explanationLines(r *dataplane.TraceRecord) []string {
	var buf bytes.Buffer
	saved := s.out
	s.out = bufio.NewWriter(&buf)
	s.writeExplanation(&r.Key, r.Explain, "")
	_ = s.out.Flush() // into memory
	s.out = saved
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}
