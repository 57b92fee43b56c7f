package control

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"urouter/dataplane"
	"urouter/dataplane/port"
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

type captureReq struct {
	spec  dataplane.CaptureSpec
	count int // 0: until the client stops
	expr  string
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
func (s *session) parseCapture(args [][]byte) (*captureReq, *cmdErr) {
	q := &captureReq{}
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
			if !seen[l.Index] {
				seen[l.Index] = true
				q.spec.Links = append(q.spec.Links, l)
			}
		case cwDrops:
			q.spec.Drops = true
		case cwIn:
			q.spec.In = true
		case cwOut:
			q.spec.Out = true
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
				q.count = int(n)
			} else {
				q.spec.Snaplen = int(min(n, maxSnaplen))
			}
		case cwHelp:
			return nil, parseErr("%s", captureUsage)
		default:
			break words
		}
	}
	if !q.spec.In && !q.spec.Out && !q.spec.Drops {
		q.spec.In, q.spec.Out = true, true
	}
	var err *cmdErr
	if q.expr, q.spec.Filter, err = compileFilter(args[ws.i:]); err != nil {
		return nil, err
	}
	if q.spec.Snaplen == 0 {
		q.spec.Snaplen = maxSnaplen
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

func (s *session) captureCmd(args [][]byte) *cmdErr {
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

// streamCapture runs the session's capture until its count, until the
// client closes its side (Ctrl-C: the stream still ends whole, with its
// statistics) or goes away, or until a link it names is removed (the
// stream ends whole, and the capture fails, as tcpdump's does when its
// interface disappears). The capture leaves the packet path first. It
// returns the exit status, and whether the client is still there for it.
func (s *session) streamCapture(in *bufio.Reader) (int, bool) {
	q := s.capture
	c, err := s.r.DP.StartCapture(q.spec)
	if err != nil {
		s.errOut("Error: " + err.Error() + ".")
		s.flush()
		return 1, true
	}
	start := time.Now()
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in) // EOF or an error: the client is done
		close(gone)
	}()
	w, err := s.pcapngHeader(c, q)
	if err != nil {
		s.r.DP.StopCapture(c)
		return 0, false
	}
	written := 0
	var failed error
	put := func(place int, p *dataplane.Captured) {
		if failed != nil || q.count > 0 && written >= q.count {
			return
		}
		failed = w.WritePacketWithOptions(captureInfo(place, p), p.Data, packetOptions(p))
		written++
	}
loop:
	for failed == nil && (q.count == 0 || written < q.count) {
		if c.Next(put) {
			select {
			case <-gone: // Ctrl-C while packets keep coming
				break loop
			default:
				continue
			}
		}
		if failed = w.Flush(); failed == nil {
			failed = s.out.Flush()
		}
		select {
		case <-gone:
			break loop
		case <-c.Ended():
			break loop
		case <-c.Wake():
		case <-time.After(100 * time.Millisecond): // a wake lost to a race with the last read
		}
	}
	s.r.DP.StopCapture(c)
	// what the ring holds was taken before the end: it goes out too (the
	// client's end and a wake may be seen in either order)
	for failed == nil && (q.count == 0 || written < q.count) && c.Next(put) {
	}
	if failed != nil {
		return 0, false // the client went away
	}
	end := time.Now()
	for i := range c.Links() {
		st := c.Stats(i)
		taken, lost := st.Taken.Load(), st.Lost.Load()
		_ = w.WriteInterfaceStats(i, pcapgo.NgInterfaceStatistics{LastUpdate: end, StartTime: start, EndTime: end,
			PacketsReceived: taken, PacketsDropped: lost, // as Flush reports
			Comment: fmt.Sprintf("urouter: the filter took %d packets (isb_ifrecv); %d were lost to a reader that did not keep up (isb_ifdrop)", taken, lost)})
	}
	_ = w.Flush() // a client gone: nobody to tell
	s.flush()
	if l := c.Gone(); l != nil {
		s.errOut("Error: the link " + l.Name + " disappeared.")
		return 1, true
	}
	return 0, true
}

// pcapngHeader writes the section header and an interface block per link.
func (s *session) pcapngHeader(c *dataplane.Capture, q *captureReq) (*pcapgo.NgWriter, error) {
	links := c.Links()
	intf := func(l *dataplane.Link) pcapgo.NgInterface {
		return pcapgo.NgInterface{Name: l.Name, Description: "urouter link " + l.Name + " (link/" + l.Hardware().LinkType() + ")",
			Filter: q.expr, OS: "Linux", LinkType: layers.LinkTypeIPv6, TimestampResolution: 9,
			SnapLength: uint32(q.spec.Snaplen)}
	}
	w, err := pcapgo.NewNgWriterInterface(s.out, intf(links[0]), pcapgo.NgWriterOptions{
		SectionInfo: pcapgo.NgSectionInfo{OS: "Linux", Application: "urouter capture"}})
	if err != nil {
		return nil, err
	}
	for _, l := range links[1:] {
		if _, err := w.AddInterface(intf(l)); err != nil {
			return nil, err
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return w, s.out.Flush()
}

func captureInfo(place int, p *dataplane.Captured) gopacket.CaptureInfo {
	return gopacket.CaptureInfo{Timestamp: time.Unix(0, p.Time), CaptureLength: len(p.Data), Length: p.Len,
		InterfaceIndex: place}
}

// packetOptions are a packet's direction and comments: why it was
// dropped; a super-packet's segmentation, which the capture keeps whole
// as the router forwards it.
func packetOptions(p *dataplane.Captured) pcapgo.NgPacketOptions {
	dir := pcapgo.NgEpbFlagDirectionInbound
	if p.Dir == dataplane.DirOut {
		dir = pcapgo.NgEpbFlagDirectionOutbound
	}
	o := pcapgo.NgPacketOptions{Flags: &pcapgo.NgEpbFlags{Direction: dir}}
	if p.Dropped {
		o.Comments = append(o.Comments, "drop: "+p.Reason.String())
	}
	if p.GSOType != 0 {
		o.Comments = append(o.Comments, "gso "+port.GSOName(p.GSOType)+" gso_size "+strconv.Itoa(int(p.GSOSize)))
	}
	return o
}
