package seg6

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

var (
	src   = netip.MustParseAddr("2001:db8:a::1")
	dst   = netip.MustParseAddr("2001:db8:b::1")
	sid1  = netip.MustParseAddr("fc00:0:1::1")
	sid2  = netip.MustParseAddr("fc00:0:2::1")
	sid3  = netip.MustParseAddr("fc00:0:3::1")
	tsrc  = [16]byte(netip.MustParseAddr("2001:db8:ff::1").AsSlice())
	room  = 256
	extra = 64 // payload bytes
)

// inner is an IPv6 packet (UDP next header) with traffic class 0x28, flow
// label 0x12345 and hop limit 17, placed at buf[room:].
func inner() ([]byte, int) {
	buf := make([]byte, room+40+extra)
	p := buf[room:]
	binary.BigEndian.PutUint32(p[0:], 6<<28|0x28<<20|0x12345)
	binary.BigEndian.PutUint16(p[4:], uint16(extra))
	p[6], p[7] = 17, 17
	copy(p[8:24], src.AsSlice())
	copy(p[24:40], dst.AsSlice())
	for i := range p[40:] {
		p[40+i] = byte(i)
	}
	return buf, room
}

func addr(b []byte) netip.Addr { return netip.AddrFrom16([16]byte(b)) }

func mustEncap(t *testing.T, m Mode, segs ...netip.Addr) *Encap {
	t.Helper()
	srh := BuildSRH(segs)
	if m == ModeInline {
		srh = BuildSRH(append(segs, netip.IPv6Unspecified()))
	}
	e, err := NewEncap(m, srh)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEncapModes(t *testing.T) {
	for _, tc := range []struct {
		mode        Mode
		segs        []netip.Addr
		grow        int
		sl, last    int // -1: no SRH
		outerSource netip.Addr
	}{
		{ModeEncap, []netip.Addr{sid1, sid2, sid3}, 40 + 8 + 48, 2, 2, addr(tsrc[:])},
		{ModeEncapRed, []netip.Addr{sid1, sid2, sid3}, 40 + 8 + 32, 2, 1, addr(tsrc[:])},
		{ModeEncapRed, []netip.Addr{sid1}, 40, -1, -1, addr(tsrc[:])},
		{ModeInline, []netip.Addr{sid1, sid2}, 8 + 48, 2, 2, src},
	} {
		e := mustEncap(t, tc.mode, tc.segs...)
		buf, at := inner()
		orig := append([]byte(nil), buf[at:]...)
		start := e.Apply(buf, at, tsrc)
		p := buf[start:]
		if at-start != tc.grow || e.Len() != tc.grow {
			t.Fatalf("%v: grew %d (Len %d), want %d", tc.mode, at-start, e.Len(), tc.grow)
		}
		if got := int(binary.BigEndian.Uint16(p[4:])); got != len(p)-40 {
			t.Errorf("%v: payload length %d, want %d", tc.mode, got, len(p)-40)
		}
		if addr(p[24:40]) != sid1 || addr(p[8:24]) != tc.outerSource {
			t.Errorf("%v: outer %v -> %v", tc.mode, addr(p[8:24]), addr(p[24:40]))
		}
		if !bytes.Equal(p[:4], orig[:4]) || p[7] != 17 {
			t.Errorf("%v: traffic class, flow label or hop limit not the inner's: % x hl %d", tc.mode, p[:4], p[7])
		}
		if tc.sl < 0 {
			if p[6] != ProtoIPv6 || !bytes.Equal(p[40:], orig) {
				t.Errorf("%v: want the inner packet right after the outer header", tc.mode)
			}
			continue
		}
		if p[6] != ProtoRouting {
			t.Fatalf("%v: next header %d", tc.mode, p[6])
		}
		off := Find(p, false)
		h := SRHAt(p, off)
		if h == nil || int(h.SegmentsLeft()) != tc.sl || int(h.LastEntry()) != tc.last {
			t.Fatalf("%v: SRH %x", tc.mode, []byte(h))
		}
		if tc.mode == ModeInline {
			if h.NextHeader() != 17 || addr(h.Segment(0)) != dst || !bytes.Equal(p[off+h.Len():], orig[40:]) {
				t.Errorf("inline: SRH % x, payload moved", []byte(h))
			}
			continue
		}
		if h.NextHeader() != ProtoIPv6 || !bytes.Equal(p[off+h.Len():], orig) {
			t.Errorf("%v: the inner packet is not whole after the SRH", tc.mode)
		}
		if addr(h.Segment(0)) != sid3 {
			t.Errorf("%v: last segment %v", tc.mode, addr(h.Segment(0)))
		}
	}
}

// encapped is inner() after H.Encaps through segs, its SRH's Segments
// Left set to sl.
func encapped(t *testing.T, sl int, segs ...netip.Addr) ([]byte, int) {
	buf, at := inner()
	start := mustEncap(t, ModeEncap, segs...).Apply(buf, at, tsrc)
	buf[start+40+3] = uint8(sl)
	return buf, start
}

func TestEnd(t *testing.T) {
	end := &Local{Action: ActionEnd}
	buf, at := encapped(t, 2, sid1, sid2, sid3)
	s := end.Process(buf, at)
	if s.Next != Route || s.Start != at || addr(buf[at+24:at+40]) != sid2 || buf[at+43] != 1 {
		t.Fatalf("End: %+v dst %v SL %d", s, addr(buf[at+24:at+40]), buf[at+43])
	}
	// no segments left: End drops
	buf, at = encapped(t, 0, sid1, sid2, sid3)
	if s := end.Process(buf, at); s.Next != Drop {
		t.Errorf("End with SL 0: %+v", s)
	}
	// a bad SRH: Segments Left past the list
	buf, at = encapped(t, 5, sid1, sid2, sid3)
	if s := end.Process(buf, at); s.Next != Drop {
		t.Errorf("End with SL 5 of 3: %+v", s)
	}
}

func TestEndPSP(t *testing.T) {
	psp := &Local{Action: ActionEnd, Flavors: Flavors{Ops: FlavorPSP}}
	if err := psp.Check(); err != nil {
		t.Fatal(err)
	}
	buf, at := encapped(t, 1, sid1, sid2)
	s := psp.Process(buf, at)
	p := buf[s.Start:]
	if s.Next != Route || s.Start != at+8+32 || p[6] != ProtoIPv6 || addr(p[24:40]) != sid2 {
		t.Fatalf("PSP: %+v next %d dst %v", s, p[6], addr(p[24:40]))
	}
	if int(binary.BigEndian.Uint16(p[4:])) != len(p)-40 || p[40]>>4 != 6 || addr(p[40+24:40+40]) != dst {
		t.Errorf("PSP: the packet after the pop is not the outer header and the inner packet")
	}
	// two left: a plain End, the SRH kept
	buf, at = encapped(t, 2, sid1, sid2, sid3)
	if s := psp.Process(buf, at); s.Next != Route || s.Start != at || buf[at+43] != 1 {
		t.Errorf("PSP with two left: %+v", s)
	}
}

func TestNextCSID(t *testing.T) {
	l := &Local{Action: ActionEnd, Flavors: Flavors{Ops: FlavorNextCSID, LBLen: 32, NFLen: 16}}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	// fc00:0 is the block; 0100 this node; 0200 0300 the next ones
	container := netip.MustParseAddr("fc00:0:100:200:300::")
	buf, at := inner()
	copy(buf[at+24:at+40], container.AsSlice())
	if s := l.Process(buf, at); s.Next != Route || addr(buf[at+24:at+40]) != netip.MustParseAddr("fc00:0:200:300::") {
		t.Fatalf("NEXT-C-SID: %+v dst %v", s, addr(buf[at+24:at+40]))
	}
	// the last C-SID and no SRH: the classic End, which drops
	copy(buf[at+24:at+40], netip.MustParseAddr("fc00:0:300::").AsSlice())
	if s := l.Process(buf, at); s.Next != Drop {
		t.Errorf("NEXT-C-SID at the last C-SID without an SRH: %+v", s)
	}
	for _, f := range []Flavors{{Ops: FlavorNextCSID, LBLen: 12, NFLen: 16}, {Ops: FlavorNextCSID, LBLen: 120, NFLen: 16},
		{Ops: FlavorNextCSID, LBLen: 32}} {
		if err := (&Local{Action: ActionEnd, Flavors: f}).Check(); err != ErrCSIDLens {
			t.Errorf("%+v: %v", f, err)
		}
	}
	if err := (&Local{Action: ActionEndX, NH6: sid1, Flavors: Flavors{Ops: FlavorPSP}}).Check(); err != ErrFlavorOps {
		t.Errorf("PSP on End.X: %v", err)
	}
}

func TestDecap(t *testing.T) {
	dt6 := &Local{Action: ActionEndDT6, Table: 100}
	buf, at := encapped(t, 0, sid1, sid2)
	s := dt6.Process(buf, at)
	if s.Next != Route || s.Table != 100 || !s.Local || addr(buf[s.Start+24:s.Start+40]) != dst || buf[s.Start+7] != 17 {
		t.Fatalf("End.DT6: %+v", s)
	}
	buf, at = encapped(t, 1, sid1, sid2)
	if s := dt6.Process(buf, at); s.Next != Drop {
		t.Errorf("End.DT6 with a segment left: %+v", s)
	}
	// reduced encapsulation of one SID: no SRH, still decapsulated
	buf, at = inner()
	start := mustEncap(t, ModeEncapRed, sid1).Apply(buf, at, tsrc)
	if s := (&Local{Action: ActionEndDX6, NH6: sid3}).Process(buf, start); s.Next != Route || s.Start != at || s.Via != sid3 {
		t.Errorf("End.DX6: %+v", s)
	}
	// not IPv6 inside: dropped
	buf, at = inner()
	if s := dt6.Process(buf, at); s.Next != Drop {
		t.Errorf("End.DT6 of a UDP packet: %+v", s)
	}
	if err := (&Local{Action: ActionEndDT6, Table: 1, VRFTable: 2}).Check(); err != ErrDT6Table {
		t.Errorf("End.DT6 with both tables: %v", err)
	}
}

func TestB6Encaps(t *testing.T) {
	l := &Local{Action: ActionEndB6Encaps, SRH: BuildSRH([]netip.Addr{sid3})}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	buf, at := encapped(t, 1, sid1, sid2)
	s := l.Process(buf, at)
	if s.Next != Route || s.Encap == nil || buf[at+43] != 0 || addr(buf[at+24:at+40]) != sid2 {
		t.Fatalf("End.B6.Encaps: %+v", s)
	}
	start := s.Encap.Apply(buf, s.Start, tsrc)
	if addr(buf[start+24:start+40]) != sid3 || s.Start-start != 40+8+16 {
		t.Errorf("End.B6.Encaps pushed %d bytes to %v", s.Start-start, addr(buf[start+24:start+40]))
	}
}

func TestValid(t *testing.T) {
	h := BuildSRH([]netip.Addr{sid1, sid2})
	if !h.Valid(false) {
		t.Fatal("a built SRH is not valid")
	}
	bad := append(SRH(nil), h...)
	bad[2] = 0
	if bad.Valid(true) {
		t.Error("routing type 0 is valid")
	}
	bad = append(SRH(nil), h...)
	bad[3] = 2 // one past the list: only a reduced SRH may
	if bad.Valid(false) || !bad.Valid(true) {
		t.Error("Segments Left one past the list")
	}
	withTLV := append(append(SRH(nil), h...), 4, 6, 0, 0, 0, 0, 0, 0) // a PadN of 8 bytes
	withTLV[1] += 1
	if !withTLV.Valid(false) {
		t.Error("a TLV filling the rest is not valid")
	}
	withTLV[SRHFixed+32+1] = 7
	if withTLV.Valid(false) {
		t.Error("a TLV overrunning the header is valid")
	}
	if _, err := NewEncap(ModeEncap, append(h[:0:0], h...)[:len(h)-8]); err != ErrBadSRH {
		t.Errorf("a short SRH: %v", err)
	}
	hm := append(SRH(nil), h...)
	hm[5] = FlagHMAC
	if _, err := NewEncap(ModeEncap, hm); err != ErrHMAC {
		t.Errorf("HMAC: %v", err)
	}
}

func BenchmarkEncap(b *testing.B) {
	e, _ := NewEncap(ModeEncap, BuildSRH([]netip.Addr{sid1, sid2, sid3}))
	buf, at := inner()
	b.ReportAllocs()
	for b.Loop() {
		e.Apply(buf, at, tsrc)
	}
}

func BenchmarkEnd(b *testing.B) {
	l := &Local{Action: ActionEnd}
	buf, at := make([]byte, 512), 0
	e, _ := NewEncap(ModeEncap, BuildSRH([]netip.Addr{sid1, sid2, sid3}))
	ib, iat := inner()
	start := e.Apply(ib, iat, tsrc)
	n := copy(buf, ib[start:])
	buf = buf[:n]
	b.ReportAllocs()
	for b.Loop() {
		buf[43] = 2
		l.Process(buf, at)
	}
}
