package control

import (
	"syscall"

	"urouter/ndisc"
)

// The neighbour object: ip neigh { add | del | change | replace } ADDR
// [lladdr LLADDR] [nud STATE] [router] dev DEV, and ip neigh { show |
// flush } [to PREFIX] [dev DEV] [nud STATE], over the Ethernet links'
// caches (ipneigh.c's grammar and output).

func (s *Session) neighCmd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.neighShow(nil, false)
	}
	w, rest := args[0], args[1:]
	switch { // do_ipneigh's order
	case matches(w, "add"):
		return exiting(s.neighModify(rest, ndisc.Add))
	case matches(w, "change") || is(w, "chg"):
		return exiting(s.neighModify(rest, ndisc.Change))
	case matches(w, "replace"):
		return exiting(s.neighModify(rest, ndisc.Replace))
	case matches(w, "delete"):
		return exiting(s.neighModify(rest, neighDel))
	case matches(w, "get"):
		return unsupported(w)
	case matches(w, "show") || matches(w, "lst") || matches(w, "list"):
		return s.neighShow(rest, false)
	case matches(w, "flush"):
		return s.neighShow(rest, true)
	case matches(w, "help"):
		return neighUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip neigh help\".", w)
}

const neighDel ndisc.Mode = 255

// exiting is e as ipneigh_modify ends on it: a refusal is its exit(2),
// which ends a batch (an unknown device is returned, and does not).
func exiting(e *cmdErr) *cmdErr {
	if e != nil && e.code == 2 {
		e.exits = true
	}
	return e
}

func neighUsage() *cmdErr {
	return parseErr("Usage: ip neigh { add | del | change | replace }\n" +
		"                { ADDR [ lladdr LLADDR ] [ nud STATE ] }\n" +
		"                [ dev DEV ] [ router ]\n" +
		"\n" +
		"	ip neigh { show | flush } [ to PREFIX ] [ dev DEV ] [ nud STATE ]\n" +
		"\n" +
		"STATE := { delay | failed | incomplete | noarp | none |\n" +
		"           permanent | probe | reachable | stale }")
}

func (s *Session) neighModify(args [][]byte, mode ndisc.Mode) *cmdErr {
	var q neighReq
	if err := parseNeighModify(&q, args); err != nil {
		return err
	}
	dev, lla, dst, state, flags := q.dev, q.lla, q.dst, q.state, q.flags
	var mac ndisc.MAC
	hasMAC := lla != nil && str(lla) != "null"
	if hasMAC {
		hw, err := parseLLAddr(lla)
		if err != nil {
			return err
		}
		if len(hw) < 6 {
			return extack("Invalid link address.")
		}
		mac = ndisc.MAC(hw[:6]) // longer ones are cut, as the kernel cuts them
	}
	l, err := s.link(dev)
	if err != nil {
		return err
	}
	t := l.Neigh()
	if t == nil {
		return answers(syscall.EOPNOTSUPP) // the link has no neighbours (TUN, loopback)
	}
	if dst.IsMulticast() || dst.IsUnspecified() || dst.IsLoopback() {
		return answers(syscall.EINVAL)
	}
	if mode == neighDel {
		if derr := t.Delete(dst); derr != nil {
			return rejected(derr)
		}
		return nil
	}
	if state&ndisc.Valid != 0 && !hasMAC && (mode == ndisc.Add || t.Lookup(dst) == nil) {
		return extack("No link layer address given.")
	}
	if serr := t.Set(dst, mac, hasMAC, state, flags, mode); serr != nil {
		return rejected(serr)
	}
	return nil
}
