package control

import (
	"net/netip"
	"strings"
)

// The address object: ip address { add | del | show | flush }, the
// router's own addresses.

func (s *session) addrCmd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.addrShow(nil)
	}
	w, rest := args[0], args[1:]
	switch { // do_ipaddr's order
	case matches(w, "add"):
		return s.addrModify(rest, addrAdd)
	case matches(w, "change") || is(w, "chg") || matches(w, "replace"):
		// Linux 6.18 makes an address `change` names, as replace does
		return s.addrModify(rest, addrReplace)
	case matches(w, "delete"):
		return s.addrModify(rest, addrDel)
	case matches(w, "list") || matches(w, "show") || matches(w, "lst"):
		return s.addrShow(rest)
	case matches(w, "flush"):
		return s.addrFlush(rest)
	case matches(w, "save") || matches(w, "showdump") || matches(w, "restore"):
		return unsupported(w)
	case matches(w, "help"):
		return addrUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip address help\".", w)
}

func addrUsage() *cmdErr {
	return parseErr("Usage: ip address { add | change | replace | del } IFADDR dev IFNAME [ metric METRIC ]\n" +
		"       ip address { show | flush } [ dev IFNAME ]")
}

type addrOp uint8

const (
	addrAdd addrOp = iota
	addrReplace
	addrDel
)

func (s *session) addrModify(args [][]byte, op addrOp) *cmdErr {
	var dev []byte
	var pfx netip.Prefix
	var set, lenGiven bool
	var metric uint32
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch {
		case is(w, "dev"):
			v, err := ws.next()
			if err != nil {
				return err
			}
			dev = v
		case is(w, "peer"), is(w, "remote"), matches(w, "broadcast"), is(w, "brd"), is(w, "anycast"):
			return unsupported(w)
		case matches(w, "metric"), matches(w, "priority"), matches(w, "preference"): // before the lifetimes, as ip
			v, err := ws.next()
			if err != nil {
				return err
			}
			n, ok := parseUint32(v)
			if !ok {
				return invarg("\"metric\" value is invalid\n", v) // ip's own newline, and one more
			}
			metric = n
		case is(w, "scope"), matches(w, "valid_lft"), matches(w, "preferred_lft"), is(w, "label"):
			if _, err := ws.next(); err != nil { // accepted, the router has one kind of address
				return err
			}
		case is(w, "nodad"), is(w, "noprefixroute"), is(w, "home"), is(w, "mngtmpaddr"):
			return unsupported(w)
		default:
			if is(w, "local") {
				v, err := ws.next()
				if err != nil {
					return err
				}
				w = v
			}
			if matches(w, "help") {
				return addrUsage()
			}
			if set {
				return parseErr("Error: either \"local\" is duplicate, or \"%s\" is a garbage.", w)
			}
			p, err := parsePrefix(w)
			if err != nil {
				return err
			}
			if p.Addr().IsUnspecified() || p.Addr().IsMulticast() {
				return extack("ipv6: Invalid address.")
			}
			pfx, set, lenGiven = p, true, strings.IndexByte(str(w), '/') >= 0
		}
	}
	if dev == nil {
		return parseErr("Not enough information: \"dev\" argument is required.")
	}
	if !set {
		return incomplete()
	}
	l, err := s.link(dev)
	if err != nil {
		return err
	}
	if op == addrDel {
		if !lenGiven {
			for _, a := range l.Addrs() {
				if a.Addr() == pfx.Addr() {
					pfx = a // wildcard deletion, as ip does for an address without length
				}
			}
		}
		if _, derr := s.r.DelAddr(l, pfx); derr != nil {
			return extack(derr.Error())
		}
		return nil
	}
	if aerr := s.r.SetAddr(l, pfx, metric, op == addrReplace); aerr != nil {
		return extack(aerr.Error())
	}
	return nil
}

func (s *session) addrFlush(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return &cmdErr{msg: "Flush requires arguments.", code: 1}
	}
	f, err := s.parseAddrSel(args, addrUsage)
	if err != nil {
		return err
	}
	for _, l := range f.links {
		for _, a := range l.Addrs() {
			if f.selects(a) {
				_, _ = s.r.DelAddr(l, a) // ErrNoAddr alone: gone meanwhile, flushed all the same
			}
		}
	}
	return nil
}
