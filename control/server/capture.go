package server

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"urouter/control"
	"urouter/dataplane"
	"urouter/dataplane/port"
)

// A capture's stream (the capture command's words are control's): the
// packets as pcapng, written as the packet path hands them over.

// streamCapture runs the session's capture until its count, until the
// client closes its side (Ctrl-C: the stream still ends whole, with its
// statistics) or goes away, or until a link it names is removed (the
// stream ends whole, and the capture fails, as tcpdump's does when its
// interface disappears). The capture leaves the packet path first. It
// returns the exit status, and whether the client is still there for it.
func streamCapture(dp *dataplane.Dataplane, s *control.Session, in *bufio.Reader) (int, bool) {
	q := s.Capture()
	c, err := dp.StartCapture(q.Spec)
	if err != nil {
		s.ReportError("Error: " + err.Error() + ".")
		return 1, true
	}
	start := time.Now()
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in) // EOF or an error: the client is done
		close(gone)
	}()
	w, err := pcapngHeader(s.Out(), c, q)
	if err != nil {
		dp.StopCapture(c)
		return 0, false
	}
	written := 0
	var failed error
	put := func(place int, p *dataplane.Captured) {
		if failed != nil || q.Count > 0 && written >= q.Count {
			return
		}
		failed = w.WritePacketWithOptions(captureInfo(place, p), p.Data, packetOptions(p))
		written++
	}
loop:
	for failed == nil && (q.Count == 0 || written < q.Count) {
		if c.Next(put) {
			select {
			case <-gone: // Ctrl-C while packets keep coming
				break loop
			default:
				continue
			}
		}
		if failed = w.Flush(); failed == nil {
			failed = s.Out().Flush()
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
	dp.StopCapture(c)
	// what the ring holds was taken before the end: it goes out too (the
	// client's end and a wake may be seen in either order)
	for failed == nil && (q.Count == 0 || written < q.Count) && c.Next(put) {
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
	if l := c.Gone(); l != nil {
		s.ReportError("Error: the link " + l.Name + " disappeared.")
		return 1, true
	}
	_ = s.Out().Flush() // as above
	return 0, true
}

// pcapngHeader writes the section header and an interface block per link.
func pcapngHeader(out *bufio.Writer, c *dataplane.Capture, q *control.CaptureRequest) (*pcapgo.NgWriter, error) {
	links := c.Links()
	intf := func(l *dataplane.Link) pcapgo.NgInterface {
		return pcapgo.NgInterface{Name: l.Name, Description: "urouter link " + l.Name + " (link/" + l.Hardware().LinkType() + ")",
			Filter: q.Expr, OS: "Linux", LinkType: layers.LinkTypeIPv6, TimestampResolution: 9,
			SnapLength: uint32(q.Spec.Snaplen)}
	}
	w, err := pcapgo.NewNgWriterInterface(out, intf(links[0]), pcapgo.NgWriterOptions{
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
	return w, out.Flush()
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
