package control

import (
	"net/netip"
	"strings"
)

// The address object: ip address { add | del | show | flush }, the
// router's own addresses.

func (s *Session) addrCmd(args [][]byte) *cmdErr {
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

// addrReq is an address command's words.
type addrReq struct {
	dev      []byte
	pfx      netip.Prefix
	set      bool // pfx was given
	lenGiven bool // with its length
	metric   uint32
}

func (s *Session) addrModify(args [][]byte, op addrOp) *cmdErr {
	q, err := parseAddrReq(args)
	if err != nil {
		return err
	}
	l, err := s.link(q.dev)
	if err != nil {
		return err
	}
	pfx := q.pfx
	if op == addrDel {
		if !q.lenGiven {
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
	if aerr := s.r.SetAddr(l, pfx, q.metric, op == addrReplace); aerr != nil {
		return extack(aerr.Error())
	}
	return nil
}

// parseAddrReq reads an address command's words in ip's order of checks.
func parseAddrReq(args [][]byte) (q addrReq, _ *cmdErr) {
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch {
		case is(w, "dev"):
			v, err := ws.next()
			if err != nil {
				return q, err
			}
			q.dev = v
		case is(w, "peer"), is(w, "remote"), matches(w, "broadcast"), is(w, "brd"), is(w, "anycast"):
			return q, unsupported(w)
		case matches(w, "metric"), matches(w, "priority"), matches(w, "preference"): // before the lifetimes, as ip
			v, err := ws.next()
			if err != nil {
				return q, err
			}
			n, ok := parseUint32(v)
			if !ok {
				return q, invarg("\"metric\" value is invalid\n", v) // ip's own newline, and one more
			}
			q.metric = n
		case is(w, "scope"), matches(w, "valid_lft"), matches(w, "preferred_lft"), is(w, "label"):
			if _, err := ws.next(); err != nil { // accepted, the router has one kind of address
				return q, err
			}
		case is(w, "nodad"), is(w, "noprefixroute"), is(w, "home"), is(w, "mngtmpaddr"):
			return q, unsupported(w)
		default:
			if err := q.local(&ws, w); err != nil {
				return q, err
			}
		}
	}
	if q.dev == nil {
		return q, parseErr("Not enough information: \"dev\" argument is required.")
	}
	if !q.set {
		return q, incomplete()
	}
	return q, nil
}

// local reads the address, w or (after "local") the word after it.
func (q *addrReq) local(ws *argv, w []byte) *cmdErr {
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
	if q.set {
		return parseErr("Error: either \"local\" is duplicate, or \"%s\" is a garbage.", w)
	}
	p, err := parsePrefix(w)
	if err != nil {
		return err
	}
	if p.Addr().IsUnspecified() || p.Addr().IsMulticast() {
		return extack("ipv6: Invalid address.")
	}
	q.pfx, q.set, q.lenGiven = p, true, strings.IndexByte(str(w), '/') >= 0
	return nil
}

func (s *Session) addrFlush(args [][]byte) *cmdErr {
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
