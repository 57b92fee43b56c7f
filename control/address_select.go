package control

import (
	"net/netip"

	"urouter/dataplane"
)

// The selector of address show and flush, and of link show:
// ipaddr_list_flush_or_save's words (all exact but help), in its order.

// addrSel is a parsed selector.
type addrSel struct {
	links []*dataplane.Link // the links it names (dev, up), in order
	to    netip.Prefix      // addresses in it, if valid
	scope string            // addresses of that scope, if not ""
	none  bool              // selects no address (a label: IPv6 has none; a master)
	kind  string            // links of this kind only (`type KIND`), if not ""
	dev   []byte            // the device named, as written
	// master selects the links enslaved to that link (`master`, `vrf`),
	// -1 those enslaved to none (`nomaster`), 0 any
	master int32
}

// selects reports whether address a of a link is selected.
func (f *addrSel) selects(a netip.Prefix) bool {
	return !f.none && (!f.to.IsValid() || f.to.Contains(a.Addr())) && (f.scope == "" || scopeOf(a.Addr()) == f.scope)
}

// shown reports whether link l is listed: once addresses are filtered,
// or their family is (inet6: ip -6 addr), only a link with a selected
// address is, as ipaddr_filter does.
func (f *addrSel) shown(l *dataplane.Link, inet6 bool) bool {
	if !inet6 && !f.none && !f.to.IsValid() && f.scope == "" {
		return true
	}
	for _, a := range l.Addrs() {
		if f.selects(a) {
			return true
		}
	}
	return false
}

func (s *Session) parseAddrSel(args [][]byte, usage func() *cmdErr) (*addrSel, *cmdErr) {
	f := &addrSel{}
	up := false
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch {
		case is(w, "up"):
			up = true
			continue
		case is(w, "nomaster"):
			f.master = -1
			continue
		case !is(w, "to") && !is(w, "scope") && !is(w, "label") && !is(w, "group") && !is(w, "master") &&
			!is(w, "vrf") && !is(w, "type"):
			if err := f.parseDev(&ws, w, usage); err != nil {
				return nil, err
			}
			continue
		}
		v, err := ws.next()
		if err != nil {
			return nil, err
		}
		if err := f.parseValue(s, w, v); err != nil {
			return nil, err
		}
	}
	f.links = s.r.Links.All()
	if f.dev != nil {
		l := s.r.Links.ByName(str(f.dev))
		if l == nil {
			return nil, &cmdErr{msg: "Device \"" + string(f.dev) + "\" does not exist.", code: 1}
		}
		f.links = []*dataplane.Link{l}
	}
	if up || f.kind != "" || f.master != 0 {
		var ls []*dataplane.Link
		for _, l := range f.links {
			if (!up || l.Up()) && (f.kind == "" || l.Hardware().Kind() == f.kind) && f.mastered(l) {
				ls = append(ls, l)
			}
		}
		f.links = ls
	}
	return f, nil
}

// parseValue reads the value v of keyword w.
func (f *addrSel) parseValue(s *Session, w, v []byte) *cmdErr {
	switch {
	case is(w, "to"):
		p, err := parsePrefix(v)
		if err != nil {
			return err // get_prefix's own exit(1)
		}
		f.to = p
	case is(w, "scope"):
		switch {
		case is(v, "all"):
			f.scope = ""
		case is(v, "global"), is(v, "link"), is(v, "host"):
			f.scope = str(v)
		case is(v, "site"), is(v, "nowhere"):
			f.none = true // no address of the router has these
		default:
			return invarg("invalid \"scope\"\n", v)
		}
	case is(w, "type"):
		f.kind = str(v)
	case is(w, "label"):
		f.none = true // an IPv6 address has no label
	case is(w, "group"):
		if n, ok := parseUint32(v); !is(v, "default") && !ok {
			return invarg("Invalid \"group\" value\n", v)
		} else if ok && n != 0 {
			f.none = true // every link is in group 0
		}
	case is(w, "master"):
		l := s.r.Links.ByName(str(v))
		if l == nil {
			return invarg("Device does not exist\n", v)
		}
		f.master = l.Index
	case is(w, "vrf"):
		l, err := s.vrfNamed(v, "Not a valid VRF name\n")
		if err != nil {
			return err
		}
		f.master = l.Index
	}
	return nil
}

// mastered reports whether l is enslaved as the selector asks.
func (f *addrSel) mastered(l *dataplane.Link) bool {
	switch {
	case f.master > 0:
		return l.Master() == f.master
	case f.master < 0:
		return l.Master() == 0
	}
	return true
}

// parseDev reads the word that is no keyword: `[dev] NAME`, once.
func (f *addrSel) parseDev(ws *argv, w []byte, usage func() *cmdErr) *cmdErr {
	if is(w, "dev") {
		var err *cmdErr
		if w, err = ws.next(); err != nil {
			return err
		}
	} else if matches(w, "help") {
		return usage()
	}
	if f.dev != nil {
		return parseErr("Error: either \"dev\" is duplicate, or \"%s\" is a garbage.", w)
	}
	f.dev = w
	return nil
}
