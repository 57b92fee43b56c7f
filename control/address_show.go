package control

import (
	"net/netip"

	"urouter/dataplane"
	"urouter/ndisc"
)

// Showing addresses: ip addr show, each link with its addresses
// (ipaddr_list_flush_or_save): under -brief a line a link, its addresses
// after its name and state; under -oneline a line an address, after its
// link's index and name, and no link's own lines.

func scopeOf(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "host"
	case a.IsLinkLocalUnicast():
		return "link"
	}
	return "global"
}

func (s *Session) addrShow(args [][]byte) *cmdErr {
	f, err := s.parseAddrSel(args, addrUsage)
	if err != nil {
		return err
	}
	w := s.recordPrinter()
	w.begin()
	for _, l := range f.links {
		if !f.shown(l, s.opt.Inet6) {
			continue
		}
		w.openObject("")
		switch {
		case s.opt.Brief:
			printLinkBrief(&w, l, false)
		case !s.opt.Oneline:
			// ip -6 dumps the links in the inet6 family, but for a link it
			// names, which it gets whole
			s.printLink(&w, l, linkMsg{inet6: s.opt.Inet6 && f.dev == nil, noLL: s.opt.Inet6 && !s.opt.Details})
		}
		w.openArray("addr_info")
		for _, a := range l.Addrs() {
			// an object for each of the link's addresses, as
			// print_selected_addrinfo opens: one not selected is {}
			w.openObject("")
			switch {
			case !f.selects(a):
			case s.opt.Brief:
				s.printAddrBrief(&w, l, a)
			default:
				s.printAddr(&w, l, a)
				w.endRecord()
			}
			w.closeObject()
		}
		w.closeArray()
		if s.opt.Brief {
			w.text("\n")
		}
		w.closeObject()
	}
	w.end()
	return nil
}

// printAddr prints address a of link l as print_addrinfo does; under
// -oneline after its link's index and name.
func (s *Session) printAddr(w *printer, l *dataplane.Link, a netip.Prefix) {
	if s.opt.Oneline {
		w.uint("index", "%d: ", uint64(l.Index))
		w.str("dev", "%s", l.Name)
	}
	w.str("family", "    %s", "inet6")
	w.addr("local", " %s", a.Addr())
	w.uint("prefixlen", "/%d", uint64(a.Bits()))
	if m := s.r.AddrMetric(l, a.Addr()); m != 0 {
		w.uint("metric", " metric %d", uint64(m))
	}
	w.str("scope", " scope %s ", scopeOf(a.Addr()))
	dad := l.DAD(a.Addr())
	if !l.Up() && dad == ndisc.DADDone {
		dad = ndisc.Tentative // as Linux: DAD waits for the link to come up
	}
	if dad == ndisc.DADFailed { // iproute2's order of the flags
		w.flag("dadfailed", "dadfailed ")
	}
	if dad != ndisc.DADDone {
		w.flag("tentative", "tentative ")
	}
	w.text("\n")
	w.uint("valid_life_time", "       valid_lft forever", 4294967295)
	w.uint("preferred_life_time", " preferred_lft forever\n", 4294967295)
}

// printAddrBrief prints an address as print_addrinfo does under -brief:
// the prefix and the metric, on its link's line.
func (s *Session) printAddrBrief(w *printer, l *dataplane.Link, a netip.Prefix) {
	w.addr("local", "%s", a.Addr())
	w.uint("prefixlen", "/%d ", uint64(a.Bits()))
	if m := s.r.AddrMetric(l, a.Addr()); m != 0 {
		w.uint("metric", "metric %d ", uint64(m))
	}
}
