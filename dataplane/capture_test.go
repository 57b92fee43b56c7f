package dataplane_test

import (
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"urouter/dataplane"
	"urouter/decide"
)

// matchFunc is a capture's filter made of a function.
type matchFunc func(p []byte) bool

func (f matchFunc) Match(p []byte) bool { return f(p) }

type seen struct {
	link    int32
	dir     dataplane.Direction
	dropped bool
	reason  string
	hl      uint8
	next    uint8
}

func start(t testing.TB, r *rig, spec dataplane.CaptureSpec) *dataplane.Capture {
	t.Helper()
	c, err := r.dp.StartCapture(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func drain(c *dataplane.Capture) []seen {
	var got []seen
	for c.Next(func(_ int, p *dataplane.Captured) {
		s := seen{link: p.Link, dir: p.Dir, dropped: p.Dropped, hl: p.Data[7], next: p.Data[6]}
		if p.Dropped {
			s.reason = p.Reason.String()
		}
		got = append(got, s)
	}) {
	}
	return got
}

// TestCapture: a capture of two links sees what the packet path read,
// wrote and dropped there, with the reason, in the order of the path;
// a filter takes only what it matches; a stopped capture sees nothing.
func TestCapture(t *testing.T) {
	r := newRig(t)
	c := start(t, r, dataplane.CaptureSpec{Links: []*dataplane.Link{r.ta, r.tb}, In: true, Out: true, Drops: true})
	fwd := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, host2, layers.IPProtocolUDP, 64)}, udp(8)...)...)
	expired := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, host2, layers.IPProtocolUDP, 1)}, udp(8)...)...)
	noRoute := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:66::1"), layers.IPProtocolUDP, 64)}, udp(8)...)...)
	r.run(fwd, expired, noRoute)
	ta, tb := r.ta.Index, r.tb.Index
	want := []seen{
		{ta, dataplane.DirIn, false, "", 64, 17}, {ta, dataplane.DirIn, false, "", 1, 17}, {ta, dataplane.DirIn, false, "", 64, 17},
		{ta, dataplane.DirIn, true, "hop_limit", 1, 17}, {ta, dataplane.DirIn, true, "no_route", 64, 17},
		{tb, dataplane.DirOut, false, "", 63, 17},
		{ta, dataplane.DirOut, false, "", 64, 58}, {ta, dataplane.DirOut, false, "", 64, 58}, // the two errors
	}
	got := drain(c)
	if len(got) != len(want) {
		t.Fatalf("captured %+v, want %+v", got, want)
	}
	// the two outgoing runs (tb's, ta's) are written in the order queued
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("packet %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := c.Stats(0).Taken.Load(); n != 7 || c.Stats(1).Taken.Load() != 1 {
		t.Errorf("taken on ta %d, tb %d; want 7, 1", n, c.Stats(1).Taken.Load())
	}
	r.dp.StopCapture(c)
	r.recv(r.ta)
	r.recv(r.tb)

	icmp := start(t, r, dataplane.CaptureSpec{In: true, Out: true, Filter: matchFunc(func(p []byte) bool { return p[6] == 58 })})
	defer r.dp.StopCapture(icmp)
	r.run(fwd, expired)
	if got := drain(icmp); len(got) != 1 || got[0].next != 58 || got[0].dir != dataplane.DirOut {
		t.Errorf("a filter for ICMPv6 took %+v, want the one error out", got)
	}
	r.dp.StopCapture(icmp)
	r.run(fwd)
	if got := drain(c); len(got) != 0 {
		t.Errorf("a stopped capture took %+v", got)
	}
}

// TestCaptureFull: a capture nobody reads loses what its ring has no room
// for, counted, and forwarding goes on.
func TestCaptureFull(t *testing.T) {
	r := newRig(t)
	c := start(t, r, dataplane.CaptureSpec{Links: []*dataplane.Link{r.ta}, In: true, Slots: 8})
	defer r.dp.StopCapture(c)
	var pkts [][]byte
	for i := 0; i < 20; i++ {
		pkts = append(pkts, craft(t, ipv6(host1, host2, layers.IPProtocolUDP, 64), &layers.UDP{SrcPort: layers.UDPPort(1000 + i), DstPort: 9}, gopacket.Payload("x")))
	}
	r.run(pkts...)
	if got := len(r.recv(r.tb)); got != 20 {
		t.Errorf("%d packets forwarded, want 20", got)
	}
	st := c.Stats(0)
	if st.Taken.Load() != 20 || st.Lost.Load() != 12 {
		t.Errorf("taken %d, lost %d; want 20, 12", st.Taken.Load(), st.Lost.Load())
	}
	if got := drain(c); len(got) != 8 {
		t.Errorf("the ring held %d, want 8", len(got))
	}
}

// TestCaptureRace: workers on four links at once fill one capture while
// its reader empties it: every packet taken is read whole or counted
// lost, none twice.
func TestCaptureRace(t *testing.T) {
	r := newRig(t)
	c := start(t, r, dataplane.CaptureSpec{Links: []*dataplane.Link{r.ta}, In: true, Slots: 64})
	defer r.dp.StopCapture(c)
	const workers, batches = 4, 200
	var wg sync.WaitGroup
	for id := 0; id < workers; id++ {
		w := dataplane.NewTestWorker(r.dp, r.ta, 100+id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; b < batches; b++ {
				var pkts [][]byte
				for i := 0; i < 8; i++ {
					payload := make([]byte, 8)
					binary.BigEndian.PutUint32(payload, uint32(id))
					binary.BigEndian.PutUint32(payload[4:], uint32(b*8+i))
					pkts = append(pkts, craft(t, ipv6(host1, net.ParseIP("2001:db8:68::1"), layers.IPProtocolUDP, 64), &layers.UDP{SrcPort: 1, DstPort: 2}, gopacket.Payload(payload)))
				}
				w.Forward(pkts...)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	last := map[uint32]int64{}
	read := 0
	check := func(_ int, p *dataplane.Captured) {
		id, seq := binary.BigEndian.Uint32(p.Data[48:]), int64(binary.BigEndian.Uint32(p.Data[52:]))
		if prev, ok := last[id]; ok && seq <= prev {
			t.Errorf("worker %d's packet %d after %d", id, seq, prev)
		}
		last[id] = seq
		read++
	}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		for c.Next(check) {
		}
	}
	st := c.Stats(0)
	if total := uint64(workers * batches * 8); st.Taken.Load() != total || uint64(read)+st.Lost.Load() != total {
		t.Errorf("taken %d, read %d, lost %d; want %d = read + lost", st.Taken.Load(), read, st.Lost.Load(), total)
	}
}

// TestTrace: a trace takes the next packets it matches and no more; a
// packet's record has every stage, its decision explained as route get -d
// does, and the link it left by is the one its record says.
func TestTrace(t *testing.T) {
	r := newRig(t)
	r.dp.ArmTrace(2, r.ta, matchFunc(func(p []byte) bool { return p[24] == 0x20 && p[29] == 0x6b })) // to 2001:db8:6b::/48
	other := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, host2, layers.IPProtocolUDP, 64)}, udp(8)...)...)
	multi := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:6b::9"), layers.IPProtocolUDP, 64)}, udp(8)...)...)
	expired := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:6b::9"), layers.IPProtocolUDP, 1)}, udp(8)...)...)
	r.run(other) // not traced: another destination
	r.recv(r.tb)
	r.run(multi, expired, multi)
	recs, left := r.dp.Traces()
	if len(recs) != 2 || left != 0 {
		t.Fatalf("%d records, %d left; want 2, 0", len(recs), left)
	}
	stages := func(rec *dataplane.TraceRecord) string {
		var s []string
		for _, st := range rec.Steps {
			s = append(s, st.Stage.String())
		}
		return strings.Join(s, " ")
	}
	if got := stages(recs[0]); got != "read parse decide forward write" {
		t.Errorf("the multipath packet's stages: %s", got)
	}
	if got := stages(recs[1]); got != "read parse decide drop icmp6 write" {
		t.Errorf("the expired packet's stages: %s", got)
	}
	ex := recs[0].Explain
	sel := ex.Steps[len(ex.Steps)-1]
	if sel.Kind != decide.Selected {
		t.Fatalf("the last step is %v, want the member selected", sel.Kind)
	}
	out := ex.Result.Path.Link
	fwd := recs[0].Steps[3].Text
	name := r.dp.Links.ByIndex(out).Name
	if !strings.HasPrefix(fwd, "dev "+name+" ") {
		t.Errorf("forward step %q, but the decision explained takes %s", fwd, name)
	}
	if got := len(r.recv(r.dp.Links.ByIndex(out))); got != 2 {
		t.Errorf("%s got %d packets, want both to 2001:db8:6b::9", name, got)
	}
	if w := recs[0].Steps[4].Text; !strings.HasPrefix(w, "dev "+name+" ") || !strings.HasSuffix(w, "done") {
		t.Errorf("write step %q", w)
	}
	r.recv(r.tb)
	r.recv(r.tc)

	// a flow's datagrams leave as one super-packet, but traced ones alone,
	// each with its own steps to its write
	r.dp.ClearTrace()
	r.dp.ArmTrace(2, nil, nil)
	r.run(multi, multi, multi, multi)
	recs, _ = r.dp.Traces()
	if len(recs) != 2 || stages(recs[0]) != "read parse decide forward write" || stages(recs[1]) != stages(recs[0]) {
		t.Errorf("traced datagrams of one flow: %d records, %v", len(recs), recs)
	}
	r.dp.ClearTrace()
	if recs, _ := r.dp.Traces(); len(recs) != 0 {
		t.Errorf("%d records after clear", len(recs))
	}
}

// TestCaptureLimit: captures past MaxCaptures are refused, and a stopped
// one makes room.
func TestCaptureLimit(t *testing.T) {
	r := newRig(t)
	var cs []*dataplane.Capture
	for i := 0; i < dataplane.MaxCaptures; i++ {
		cs = append(cs, start(t, r, dataplane.CaptureSpec{In: true, Snaplen: 128}))
	}
	if _, err := r.dp.StartCapture(dataplane.CaptureSpec{In: true}); err != dataplane.ErrTooManyCaptures {
		t.Fatalf("capture %d: %v, want %v", dataplane.MaxCaptures+1, err, dataplane.ErrTooManyCaptures)
	}
	r.dp.StopCapture(cs[0])
	if r.dp.Captures() != dataplane.MaxCaptures-1 {
		t.Errorf("%d captures after one stopped", r.dp.Captures())
	}
	for _, c := range cs[1:] {
		r.dp.StopCapture(c)
	}
	if r.dp.Captures() != 0 {
		t.Errorf("%d captures after all stopped", r.dp.Captures())
	}
}

// TestCaptureLinkRemoved: removing a link ends the captures that name it
// (they leave the packet path, their slots free, their readers told which
// link went), not a capture of every link nor one of other links; a
// capture of a link removed since it was named is refused.
func TestCaptureLinkRemoved(t *testing.T) {
	r := newRig(t)
	named := start(t, r, dataplane.CaptureSpec{Links: []*dataplane.Link{r.ta, r.d0}, In: true, Snaplen: 128})
	every := start(t, r, dataplane.CaptureSpec{In: true, Snaplen: 128})
	other := start(t, r, dataplane.CaptureSpec{Links: []*dataplane.Link{r.ta}, In: true, Snaplen: 128})
	if err := r.r.DeleteLink(r.d0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-named.Ended():
	default:
		t.Fatal("a capture of a removed link runs on")
	}
	if named.Gone() != r.d0 {
		t.Errorf("the capture was ended by %v, want d0", named.Gone())
	}
	for _, c := range []*dataplane.Capture{every, other} {
		select {
		case <-c.Ended():
			t.Errorf("a capture not naming d0 ended (by %v)", c.Gone())
		default:
		}
	}
	if n := r.dp.Captures(); n != 2 {
		t.Errorf("%d captures run, want 2", n)
	}
	r.dp.StopCapture(named) // as its reader does: nothing more
	if _, err := r.dp.StartCapture(dataplane.CaptureSpec{Links: []*dataplane.Link{r.d0}, In: true}); err == nil {
		t.Error("a capture of a removed link started")
	}
	r.dp.StopCapture(every)
	r.dp.StopCapture(other)
}
