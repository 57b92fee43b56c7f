package seg6

import (
	"net/netip"
	"testing"
)

// FuzzProcess: no packet, however malformed, makes a behaviour panic or
// step outside the packet and its room; what it hands back is a packet
// within the buffer.
func FuzzProcess(f *testing.F) {
	buf, at := inner()
	f.Add(append([]byte(nil), buf[at:]...))
	e, _ := NewEncap(ModeEncap, BuildSRH([]netip.Addr{sid1, sid2, sid3}))
	start := e.Apply(buf, at, tsrc)
	f.Add(append([]byte(nil), buf[start:]...))
	f.Add(make([]byte, 40))
	b6 := &Local{Action: ActionEndB6Encaps, SRH: BuildSRH([]netip.Addr{sid3})}
	if err := b6.Check(); err != nil {
		f.Fatal(err)
	}
	locals := []*Local{
		{Action: ActionEnd}, {Action: ActionEnd, Flavors: Flavors{Ops: FlavorPSP}},
		{Action: ActionEnd, Flavors: Flavors{Ops: FlavorNextCSID, LBLen: 32, NFLen: 16}},
		{Action: ActionEndX, NH6: sid1}, {Action: ActionEndT, Table: 5},
		{Action: ActionEndDX6, NH6: sid1}, {Action: ActionEndDT6, Table: 5}, b6,
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) < 40 {
			return // the packet path checks the fixed header first
		}
		for _, l := range locals {
			buf := make([]byte, 128+len(p))
			copy(buf[128:], p)
			s := l.Process(buf, 128)
			if s.Next == Drop {
				continue
			}
			if s.Start < 0 || s.Start+40 > len(buf) {
				t.Fatalf("%v: start %d of a %d-byte buffer", l.Action, s.Start, len(buf))
			}
		}
	})
}
