package control

import (
	"net/netip"
	"urouter/ndisc"
)

// Showing addresses: ip addr show, each link with its addresses.

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
	w := s.newPrinter()
	w.begin()
	for _, l := range f.links {
		if !f.shown(l) {
			continue
		}
		w.openObject("")
		s.printLink(&w, l, false)
		w.openArray("addr_info")
		for _, a := range l.Addrs() {
			if !f.selects(a) {
				continue
			}
			w.openObject("")
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
			w.closeObject()
		}
		w.closeArray()
		w.closeObject()
	}
	w.end()
	return nil
}
