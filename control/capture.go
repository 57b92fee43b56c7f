package control

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"urouter/dataplane"
	"urouter/internal/filter"
)

// `capture [dev LINK]... [drops] [in | out] [count N] [snaplen N] [FILTER]`
// streams the packets the packet path reads, writes or drops on the links
// as pcapng: one interface block per link (its name, raw IPv6 packets,
// nanosecond stamps), each packet's direction in its flags, a drop's
// reason and a super-packet's segmentation in its comments, and at the end
// each link's statistics (the packets the filter took, those lost to a
// reader that did not keep up). The client writes the stream to a file or
// stdout (-w), or prints a line per packet.

// CaptureRequest is the capture a capture command asks for: what the
// packet path takes (Spec), how many packets (Count), and its filter as
// the user wrote it (Expr), for the stream's interface blocks.
type CaptureRequest struct {
	Spec  dataplane.CaptureSpec
	Count int // 0: until the client stops
	Expr  string
}

const maxSnaplen = 262144 // tcpdump's default, more than any packet here

const (
	cwDev = iota + 1
	cwDrops
	cwIn
	cwOut
	cwCount
	cwSnaplen
	cwHelp
)

var captureWords = sync.OnceValue(func() keywords {
	return newKeywords([]kw{{"dev", false, cwDev}, {"drops", false, cwDrops}, {"in", false, cwIn}, {"out", false, cwOut},
		{"count", false, cwCount}, {"snaplen", false, cwSnaplen}, {"help", false, cwHelp}})
})

const captureUsage = "Usage: urouter capture [ dev LINK ]... [ drops ] [ in | out ] [ count N ] [ snaplen N ]\n" +
	"                       [ -w FILE | - ] [ FILTER ]\n" +
	"FILTER := tcpdump's filter language, for raw IPv6 packets"

// parseCapture reads capture's words; the first word that is none of them
// begins the filter, which is the rest of the line.
func (s *Session) parseCapture(args [][]byte) (*CaptureRequest, *cmdErr) {
	q := &CaptureRequest{}
	ws := argv{args: args}
	seen := map[int32]bool{}
words:
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch k := captureWords().of(w); k {
		case cwDev:
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			l := s.r.Links.ByName(str(v))
			if l == nil {
				return nil, invarg("Device does not exist\n", v)
			}
			ls := []*dataplane.Link{l}
			if l.IsVRF() { // a VRF's packets are its members'
				if ls = s.r.Links.Members(l); len(ls) == 0 {
					return nil, extack("VRF " + l.Name + " has no link to capture.")
				}
			}
			for _, l := range ls {
				if !seen[l.Index] {
					seen[l.Index] = true
					q.Spec.Links = append(q.Spec.Links, l)
				}
			}
		case cwDrops:
			q.Spec.Drops = true
		case cwIn:
			q.Spec.In = true
		case cwOut:
			q.Spec.Out = true
		case cwCount, cwSnaplen:
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			n, e := strconv.ParseUint(str(v), 10, 31)
			if e != nil || n == 0 {
				return nil, invarg("a positive number is expected\n", v)
			}
			if k == cwCount {
				q.Count = int(n)
			} else {
				q.Spec.Snaplen = int(min(n, maxSnaplen))
			}
		case cwHelp:
			return nil, parseErr("%s", captureUsage)
		default:
			break words
		}
	}
	if !q.Spec.In && !q.Spec.Out && !q.Spec.Drops {
		q.Spec.In, q.Spec.Out = true, true
	}
	var err *cmdErr
	if q.Expr, q.Spec.Filter, err = compileFilter(args[ws.i:]); err != nil {
		return nil, err
	}
	if q.Spec.Snaplen == 0 {
		q.Spec.Snaplen = maxSnaplen
	}
	return q, nil
}

// compileFilter compiles the words of a tcpdump expression, and returns
// it as one line; none takes every packet.
func compileFilter(words [][]byte) (string, dataplane.Filter, *cmdErr) {
	expr := string(bytes.Join(words, []byte(" ")))
	if strings.TrimSpace(expr) == "" {
		return expr, nil, nil
	}
	p, err := filter.Compile(expr)
	if err != nil {
		return "", nil, &cmdErr{msg: "Error: filter \"" + expr + "\": " + err.Error(), code: 1}
	}
	return expr, p, nil
}

func (s *Session) captureCmd(args [][]byte) *cmdErr {
	q, err := s.parseCapture(args)
	if err != nil {
		return err
	}
	if s.opt.Batch {
		return &cmdErr{msg: "Error: capture cannot run inside a batch.", code: 1}
	}
	s.capture = q
	return nil
}
