package control

import (
	"net/netip"
	"slices"
	"strings"

	"urouter/dataplane"
	"urouter/ndisc"
)

// Showing and flushing neighbours: ipneigh.c's filter and print_neigh.

// neighFilter is what `show` and `flush` select.
type neighFilter struct {
	link   *dataplane.Link
	to     netip.Prefix
	states uint32 // NUD bits, 0x100 for NONE
	none   bool   // selects nothing (proxies, protocols: the router's entries have none)
	// master selects the entries of links enslaved to it (`master`,
	// `vrf`), -1 of links enslaved to none (`nomaster`), 0 any
	master int32
}

func (f *neighFilter) selects(i ndisc.Info) bool {
	st := uint32(i.State)
	if st == 0 {
		st = 0x100
	}
	return !f.none && f.states&st != 0 && (!f.to.IsValid() || f.to.Contains(i.Addr))
}

func (s *Session) neighShow(args [][]byte, flush bool) *cmdErr {
	f, err := s.parseNeighFilter(args, flush)
	if err != nil {
		return err
	}
	links := s.r.Links.All()
	if f.link != nil {
		links = []*dataplane.Link{f.link}
	}
	if f.master != 0 {
		sel := addrSel{master: f.master}
		links = slices.DeleteFunc(links, func(l *dataplane.Link) bool { return !sel.mastered(l) })
	}
	if flush {
		s.neighFlush(links, f)
		return nil
	}
	w := s.newPrinter()
	w.begin()
	for _, l := range links {
		t := l.Neigh()
		if t == nil {
			continue
		}
		for _, i := range t.Dump() {
			if f.selects(i) {
				s.printNeigh(&w, l, i, f.link == nil)
			}
		}
	}
	w.end()
	return nil
}

// parseNeighFilter reads show's and flush's selector, as ipneigh.c's
// do_show_or_flush.
func (s *Session) parseNeighFilter(args [][]byte, flush bool) (*neighFilter, *cmdErr) {
	f := &neighFilter{states: 0xff &^ uint32(ndisc.NoARP)}
	if flush {
		if len(args) == 0 {
			return nil, &cmdErr{msg: "Flush requires arguments.", code: 1}
		}
		f.states = ^uint32(ndisc.Permanent | ndisc.NoARP)
	}
	given := false
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch {
		case is(w, "dev"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			if f.link != nil {
				return nil, duparg("dev", v)
			}
			if f.link, err = s.link(v); err != nil {
				return nil, err
			}
		case is(w, "nud"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			if !given {
				given, f.states = true, 0
			}
			bits, err := nudBits(v, flush)
			if err != nil {
				return nil, err
			}
			f.states |= bits
		case is(w, "unused"):
		case is(w, "nomaster"):
			f.master = -1
		case is(w, "proxy"):
			f.none = true // the router keeps no proxy entries
		case is(w, "master"), is(w, "vrf"), matches(w, "protocol"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			l := s.r.Links.ByName(str(v))
			if err := neighSelects(w, v, l); err != nil {
				return nil, err
			}
			if l != nil && !matches(w, "protocol") {
				f.master = l.Index
			}
			f.none = f.none || matches(w, "protocol") && !is(v, "all")
		default:
			w, err := ws.valueAfter(w, "to")
			if err != nil {
				return nil, err
			}
			if matches(w, "help") {
				return nil, neighUsage()
			}
			if f.to, err = parsePrefix(w); err != nil {
				return nil, err // get_prefix's own exit(1)
			}
		}
	}
	return f, nil
}

// neighSelects checks the value v of a selector (master, vrf, protocol),
// as do_show_or_flush does; l is the link named v, if any.
func neighSelects(w, v []byte, l *dataplane.Link) *cmdErr {
	switch {
	case is(w, "master") && l == nil:
		return invarg("Device does not exist\n", v)
	case is(w, "vrf") && (l == nil || !l.IsVRF()):
		return invarg("Not a valid VRF name\n", v)
	case matches(w, "protocol"):
		if _, ok := parseProto(v); !ok && !is(v, "all") {
			return invarg("invalid \"protocol\"\n", v)
		}
	}
	return nil
}

// nudBits are the NUD bits `nud v` selects (all of them for all, but
// NOARP's in a flush; 0x100 for none).
func nudBits(v []byte, flush bool) (uint32, *cmdErr) {
	st, ok := parseNud(v)
	bits := uint32(st)
	switch {
	case !ok && !is(v, "all"):
		return 0, invarg("nud state is bad", v)
	case !ok:
		bits = ^uint32(0)
		if flush {
			bits &^= uint32(ndisc.NoARP)
		}
	case st == ndisc.None:
		bits = 0x100
	}
	return bits, nil
}

// neighFlush deletes the entries f selects on links; -s says how many.
func (s *Session) neighFlush(links []*dataplane.Link, f *neighFilter) {
	n := 0
	for _, l := range links {
		if t := l.Neigh(); t != nil {
			n += t.Flush(f.selects)
		}
	}
	s.flushed(n)
}

// printNeigh prints one entry as print_neigh does.
func (s *Session) printNeigh(w *printer, l *dataplane.Link, i ndisc.Info, withDev bool) {
	showMAC := i.HasMAC && i.State&(ndisc.Failed|ndisc.Incomplete) == 0 && i.State != ndisc.None
	secs := func(d interface{ Seconds() float64 }) uint64 { return uint64(max(d.Seconds(), 0)) }
	w.openObject("")
	if s.opt.Brief {
		printNeighBrief(w, l, i, withDev, showMAC)
		w.closeObject()
		return
	}
	w.addr("dst", "%s ", i.Addr)
	if withDev {
		w.str("dev", "dev %s ", l.Name)
	}
	if showMAC {
		w.str("lladdr", "lladdr %s ", i.MAC.String())
	}
	if i.Flags&ndisc.Router != 0 {
		w.null("router", "router ")
	}
	if s.opt.Stats > 0 {
		w.uint("used", " used %d", secs(i.Used))
		w.uint("confirmed", "/%d", secs(i.Confirmed))
		w.uint("updated", "/%d", secs(i.Updated))
		w.uint("probes", "probes %d ", uint64(i.Probes))
	}
	if i.State != ndisc.None {
		w.strings("state", "%s ", stateWords(i.State))
	}
	w.text("\n")
	w.closeObject()
}

// stateWords are the state's NUD bits as print_neigh_state prints them;
// NONE prints none.
func stateWords(st ndisc.State) []string {
	if st == ndisc.None {
		return nil
	}
	return strings.Split(st.String(), ",")
}

// printNeighBrief prints an entry as print_neigh_brief does (-brief): the
// address and the link in columns, then the MAC.
func printNeighBrief(w *printer, l *dataplane.Link, i ndisc.Info, withDev, showMAC bool) {
	w.column("dst", i.Addr.String(), 39)
	if withDev {
		w.column("dev", l.Name, 16)
	}
	if showMAC {
		w.str("lladdr", "%s", i.MAC.String())
	}
	w.text("\n")
}
