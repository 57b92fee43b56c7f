package control

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"syscall"

	"urouter/seg6"
)

// A route's `encap seg6 ...` and `encap seg6local ...` (iproute2's
// iproute_lwtunnel.c): parsed as lwt_parse_encap does, built and checked
// as Linux's seg6_build_state and seg6_local_build_state, printed as
// lwt_print_encap.

// encapReq is a parsed encap: seg6's mode and SRH, or seg6local's
// behaviour and the links it names.
type encapReq struct {
	local bool
	mode  int // seg6: SEG6_IPTUN_MODE_*, -1 for none given
	srh   seg6.SRH
	hmac  uint32
	// seg6local: the behaviour as given, its links' names
	l        seg6.Local
	oif, iif []byte
}

// parseEncap reads `encap TYPE ...` from ws at "encap", leaving ws at the
// last word it took (lwt_parse_encap).
func parseEncap(ws *argv) (*encapReq, *cmdErr) {
	typ, err := ws.next()
	if err != nil {
		return nil, err
	}
	if _, err := ws.next(); err != nil {
		return nil, err
	}
	if len(ws.args)-ws.i <= 1 {
		return nil, parseErr("Error: unexpected end of line after \"encap\"")
	}
	switch {
	case is(typ, "seg6"):
		return parseSeg6(ws)
	case is(typ, "seg6local"):
		return parseSeg6Local(ws)
	case is(typ, "mpls"), is(typ, "ip"), is(typ, "ip6"), is(typ, "ila"), is(typ, "bpf"), is(typ, "rpl"),
		is(typ, "ioam6"), is(typ, "xfrm"):
		return nil, unsupported([]byte("encap " + string(typ)))
	}
	return nil, invarg("\"encap type\" value is invalid\n", typ)
}

// duparg2 is iproute2's duparg2: a keyword given twice.
func duparg2(key string, arg []byte) *cmdErr {
	return parseErr("Error: either \"%s\" is duplicate, or \"%s\" is a garbage.", key, arg)
}

// parseSeg6 reads `[mode MODE] segs S1,... [hmac ID]` (parse_encap_seg6).
func parseSeg6(ws *argv) (*encapReq, *cmdErr) {
	e := &encapReq{mode: -1}
	var segs []byte
	seen := map[string]bool{}
	for ; ws.i < len(ws.args); ws.i++ {
		w := ws.args[ws.i]
		key := string(w)
		if key != "mode" && key != "segs" && key != "hmac" {
			break
		}
		v, err := ws.next()
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, duparg2(key, v)
		}
		seen[key] = true
		switch key {
		case "mode":
			if e.mode = modeOf(v); e.mode < 0 {
				return nil, badValue("mode", v)
			}
		case "segs":
			if e.mode == -1 {
				return nil, invarg("\"segs\" provided before \"mode\"\n", v)
			}
			segs = v
		case "hmac":
			n, _ := parseUint32(v) // get_u32's failure is not checked
			e.hmac = n
		}
	}
	ws.i--
	srh, err := parseSRH(segs, e.hmac, e.mode != int(seg6.ModeInline))
	e.srh = srh
	return e, err
}

func modeOf(v []byte) int {
	for i, n := range seg6.ModeNames {
		if string(v) == n {
			return i
		}
	}
	return -1
}

// parseSRH is iproute2's parse_srh: the SRH of the comma-separated
// segments, one more (the destination's room, zero) unless encap, and an
// HMAC TLV with the key id when hmac is not 0.
func parseSRH(segs []byte, hmac uint32, encap bool) (seg6.SRH, *cmdErr) {
	var list []netip.Addr
	for _, s := range strings.Split(string(segs), ",") {
		if s == "" {
			continue // strtok skips empty fields
		}
		a, err := parseAddr([]byte(s))
		if err != nil {
			return nil, err
		}
		list = append(list, a)
	}
	if len(list) == 0 {
		list = []netip.Addr{netip.IPv6Unspecified()}
	}
	if !encap {
		list = append(list, netip.IPv6Unspecified())
	}
	srh := seg6.BuildSRH(list)
	if hmac != 0 {
		tlv := make([]byte, 40)
		tlv[0], tlv[1] = 5, 38
		tlv[4], tlv[5], tlv[6], tlv[7] = byte(hmac>>24), byte(hmac>>16), byte(hmac>>8), byte(hmac)
		srh = append(srh, tlv...)
		srh[1] += 5
		srh[5] |= seg6.FlagHMAC
	}
	return srh, nil
}

// build makes the state the route's path carries of e, checked as Linux
// builds it: seg6_build_state, seg6_local_build_state and End.DT6's VRF.
func (s *Session) buildEncap(e *encapReq) (*seg6.State, *cmdErr) {
	if !e.local {
		if e.mode < 0 {
			return nil, answers(syscall.EINVAL) // no mode: iproute2 sends -1
		}
		enc, err := seg6.NewEncap(seg6.Mode(e.mode), e.srh)
		if err != nil {
			return nil, seg6Refused(err)
		}
		return &seg6.State{Encap: enc}, nil
	}
	l := &seg6.Local{Action: e.l.Action, Table: e.l.Table, VRFTable: e.l.VRFTable, NH6: e.l.NH6, SRH: e.l.SRH,
		Flavors: e.l.Flavors, Counted: e.l.Counted}
	for _, name := range [][]byte{e.iif, e.oif} {
		if name != nil && s.r.Links.ByName(string(name)) == nil {
			return nil, nodev(name)
		}
	}
	if e.oif != nil && l.Action == seg6.ActionEndX {
		l.OIF = s.r.Links.ByName(string(e.oif)).Index // only End.X takes it
	}
	if err := l.Check(); err != nil {
		return nil, seg6Refused(err)
	}
	if l.Action == seg6.ActionEndDT6 && l.VRFTable != 0 {
		switch {
		case !s.r.VRFStrict():
			return nil, extack("Strict mode for VRF is disabled")
		case s.r.Links.VRFByTable(l.VRFTable) == nil:
			return nil, extack("Table has no associated VRF device")
		}
	}
	return &seg6.State{Local: l}, nil
}

// seg6Refused words a refusal of package seg6's as the kernel's.
func seg6Refused(err error) *cmdErr {
	var e *seg6.Error
	if errors.As(err, &e) {
		if e.Msg != "" {
			return extack(e.Msg)
		}
		return answers(syscall.Errno(e.Errno))
	}
	return rejected(err)
}

// encap prints a path's encapsulation as lwt_print_encap does.
func (p *routePrinter) encap(st *seg6.State) {
	printEncap(&p.out, p.s, st, "  encap %s")
}

// printEncap prints encapsulation st with w, its first words through
// first (the spaces before them differ from route to nexthop); s names
// the links and says whether counters print (-s).
func printEncap(w *printer, s *Session, st *seg6.State, first string) {
	if st.Local == nil {
		w.str("encap", first, "seg6")
		w.str("mode", " mode %s", st.Encap.Mode.String())
		printSRH(w, st.Encap.SRH)
		return
	}
	l := st.Local
	w.str("encap", first, "seg6local")
	w.str("action", " action %s", l.Action.String())
	if l.SRH != nil {
		w.openObject("srh")
		printSRH(w, l.SRH)
		w.closeObject()
	}
	if l.Table != 0 {
		w.str("table", " table %s", tableString(l.Table))
	}
	if l.VRFTable != 0 {
		w.str("vrftable", " vrftable %s", tableString(l.VRFTable))
	}
	if l.NH6.IsValid() {
		w.addr("nh6", " nh6 %s", l.NH6)
	}
	if l.OIF != 0 {
		name := "if" + strconv.Itoa(int(l.OIF))
		if ol := s.r.Links.ByIndex(l.OIF); ol != nil {
			name = ol.Name
		}
		w.str("oif", " oif %s", name)
	}
	if l.Counted && s.opt.Stats > 0 {
		pk, by, er := l.Counters()
		w.openObject("stats64")
		w.uint("packets", " packets %d", pk)
		w.uint("bytes", " bytes %d", by)
		w.uint("errors", " errors %d", er)
		w.closeObject()
	}
	printFlavors(w, &l.Flavors)
}

// printSRH prints an SRH's segments, first to last (an SRH with an HMAC
// is refused, so its key id never prints).
func printSRH(w *printer, h seg6.SRH) {
	segs := h.Segments()
	if w.json() {
		names := make([]string, len(segs))
		for i, a := range segs {
			names[i] = a.String()
		}
		w.strings("segs", "", names)
		return
	}
	var b strings.Builder
	b.WriteString(" segs ")
	b.WriteString(strconv.Itoa(len(segs)))
	b.WriteString(" [")
	for _, a := range segs {
		b.WriteString(" " + a.String())
	}
	b.WriteString(" ]")
	w.text(b.String())
}

// printFlavors prints a behaviour's flavors, NEXT-C-SID's lengths with
// them.
func printFlavors(w *printer, f *seg6.Flavors) {
	if f.Ops == 0 {
		return
	}
	names := flavorNames(f.Ops)
	if w.json() {
		w.strings("flavors", "", names)
	} else {
		w.text(" flavors " + strings.Join(names, ","))
	}
	if f.Ops&seg6.FlavorNextCSID != 0 {
		w.uint("lblen", " lblen %d", uint64(f.LBLen))
		w.uint("nflen", " nflen %d", uint64(f.NFLen))
	}
}

// appendEncap writes a path's encapsulation (nil: none) as the words
// that make it again (save), before the path's via and dev, which end
// its words.
func (s *Session) appendEncap(b []byte, st *seg6.State) []byte {
	if st == nil {
		return b
	}
	if st.Local == nil {
		e := st.Encap
		b = append(append(b, " encap seg6 mode "...), e.Mode.String()...)
		segs := e.Segments()
		if e.Mode == seg6.ModeInline {
			segs = segs[:len(segs)-1] // the destination's room
		}
		return appendSegs(append(b, " segs "...), segs)
	}
	l := st.Local
	b = append(append(b, " encap seg6local action "...), l.Action.String()...)
	if l.Table != 0 {
		b = append(append(b, " table "...), tableString(l.Table)...)
	}
	if l.VRFTable != 0 {
		b = append(append(b, " vrftable "...), tableString(l.VRFTable)...)
	}
	if l.NH6.IsValid() {
		b = l.NH6.AppendTo(append(b, " nh6 "...))
	}
	if ol := s.r.Links.ByIndex(l.OIF); ol != nil && l.OIF != 0 {
		b = append(append(b, " oif "...), ol.Name...)
	}
	if l.SRH != nil {
		b = appendSegs(append(b, " srh segs "...), l.SRH.Segments())
	}
	if f := l.Flavors; f.Ops != 0 {
		b = append(b, " flavors "...)
		for i, n := range flavorNames(f.Ops) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, n...)
		}
		if f.Ops&seg6.FlavorNextCSID != 0 {
			b = strconv.AppendUint(append(b, " lblen "...), uint64(f.LBLen), 10)
			b = strconv.AppendUint(append(b, " nflen "...), uint64(f.NFLen), 10)
		}
	}
	if l.Counted {
		b = append(b, " count"...)
	}
	return b
}

func appendSegs(b []byte, segs []netip.Addr) []byte {
	for i, a := range segs {
		if i > 0 {
			b = append(b, ',')
		}
		b = a.AppendTo(b)
	}
	return b
}

// flavorNames are the names of the flavor operations in ops, in
// iproute2's order.
func flavorNames(ops uint32) []string {
	var names []string
	for _, fl := range []struct {
		bit  uint32
		name string
	}{{seg6.FlavorPSP, "psp"}, {seg6.FlavorUSP, "usp"}, {seg6.FlavorUSD, "usd"}, {seg6.FlavorNextCSID, "next-csid"}} {
		if ops&fl.bit != 0 {
			names = append(names, fl.name)
		}
	}
	return names
}
