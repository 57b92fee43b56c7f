package control

import (
	"sync"
	"syscall"
	"urouter/fib6"
	"urouter/nexthop"
)

// The nexthop object: ip nexthop { add | replace | del | get | show |
// list | flush | bucket }, with ipnexthop.c's grammar, output and errors.

func nexthopUsage() *cmdErr {
	return parseErr(`Usage: ip nexthop { list | flush } [ protocol ID ] SELECTOR
       ip nexthop { add | replace } id ID NH [ protocol ID ]
       ip nexthop { get | del } id ID
       ip nexthop bucket list BUCKET_SELECTOR
       ip nexthop bucket get id ID index INDEX
SELECTOR := [ id ID ] [ dev DEV ] [ vrf NAME ] [ master DEV ]
            [ groups ] [ fdb ]
BUCKET_SELECTOR := SELECTOR | [ nhid ID ]
NH := { blackhole | [ via ADDRESS ] [ dev DEV ] [ onlink ]
        [ encap ENCAPTYPE ENCAPHDR ] |
        group GROUP [ fdb ] [ type TYPE [ TYPE_ARGS ] ] }
GROUP := [ <id[,weight]>/<id[,weight]>/... ]
TYPE := { mpath | resilient }
TYPE_ARGS := [ RESILIENT_ARGS ]
RESILIENT_ARGS := [ buckets BUCKETS ] [ idle_timer IDLE ]
                  [ unbalanced_timer UNBALANCED ]
ENCAPTYPE := [ mpls ]
ENCAPHDR := [ MPLSLABEL ]`)
}

func (s *Session) nexthopCmd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.nexthopShow(nil, false)
	}
	w, rest := args[0], args[1:]
	switch nexthopCmds().of(w) {
	case ncAdd:
		return s.nexthopModify(rest, false)
	case ncReplace:
		return s.nexthopModify(rest, true)
	case ncDelete:
		return s.nexthopDel(rest)
	case ncList:
		return s.nexthopShow(rest, false)
	case ncGet:
		return s.nexthopGet(rest)
	case ncFlush:
		return s.nexthopShow(rest, true)
	case ncBucket:
		return s.nexthopBucket(rest)
	case ncHelp:
		return nexthopUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip nexthop help\".", w)
}

const (
	ncAdd = iota + 1
	ncReplace
	ncDelete
	ncList
	ncGet
	ncFlush
	ncBucket
	ncHelp
)

// nexthopCmds() are do_ipnh's command words, in its order.
var nexthopCmds = sync.OnceValue(func() keywords {
	return newKeywords([]kw{{"add", true, ncAdd}, {"replace", true, ncReplace}, {"delete", true, ncDelete},
		{"list", true, ncList}, {"show", true, ncList}, {"lst", true, ncList}, {"get", true, ncGet},
		{"flush", true, ncFlush}, {"bucket", true, ncBucket}, {"help", true, ncHelp}})
})

func (s *Session) nexthopModify(args [][]byte, replace bool) *cmdErr {
	var req nhReq
	q := &req
	if err := s.parseNexthop(q, args); err != nil {
		return err
	}
	sp := &q.sp
	if err := s.nexthopKind(q); err != nil {
		return err
	}
	if q.dev != nil {
		l, err := s.link(q.dev)
		if err != nil {
			return err
		}
		sp.Link = l.Index
		if err := s.checkNexthopGateway(sp); err != nil {
			return err
		}
		if q.encap != nil {
			if q.encap.local && sp.Family != nexthop.FamilyInet6 {
				return answers(syscall.EINVAL) // seg6_local_build_state: IPv6 only
			}
			if sp.Encap, err = s.buildEncap(q.encap); err != nil {
				return err
			}
		}
	}
	o, err := s.r.Nexthops.Add(*sp, replace)
	if err != nil {
		return rejected(err)
	}
	if sp.ID == 0 {
		s.did.nexthopID = o.ID() // the journal says it: a replay must make the same
	}
	if s.adopt != nil {
		s.adopt.AdoptNexthop(o.ID())
	}
	return nil
}

// nexthopKind checks that the nexthop is one kind (a group, a blackhole
// or a path through a link) as Linux's rtm_to_nh_config does, and gives
// it its family.
func (s *Session) nexthopKind(q *nhReq) *cmdErr {
	sp := &q.sp
	switch {
	case sp.IsGroup():
		if q.blackhole || sp.Gateway.IsValid() || q.dev != nil || s.opt.Inet6 { // a group is AF_UNSPEC
			return extack("Invalid family for group.")
		}
		if q.encap != nil {
			return extack("No other attributes can be set in nexthop groups.")
		}
	case q.blackhole:
		if sp.Gateway.IsValid() || q.dev != nil || q.encap != nil {
			return extack("Blackhole attribute can not be used with gateway, oif, encap or fdb.")
		}
		sp.Flags |= nexthop.Blackhole
	case q.dev == nil:
		if !sp.Gateway.IsValid() && !s.opt.Inet6 {
			return extack("Invalid address family.")
		}
		return extack("Device attribute required for non-blackhole and non-fdb nexthops.")
	case sp.Flags&nexthop.OnLink != 0 && !sp.Gateway.IsValid():
		return extack("ONLINK flag can not be set for nexthop without a gateway.")
	}
	sp.Family = nexthop.FamilyInet
	if s.opt.Inet6 || sp.Gateway.Is6() {
		sp.Family = nexthop.FamilyInet6
	}
	if sp.IsGroup() {
		sp.Family = nexthop.FamilyUnspec
	}
	return nil
}

// checkNexthopGateway validates a nexthop's gateway on its link as Linux's
// nh_create_ipv6 (through fib6_nh_init) does.
func (s *Session) checkNexthopGateway(sp *nexthop.Spec) *cmdErr {
	gw := sp.Gateway
	if !gw.IsValid() {
		return nil
	}
	if !gw.Is6() || gw.Is4In6() {
		return extack("Nexthop has invalid gateway.")
	}
	if gw.IsMulticast() || gw.IsUnspecified() {
		return extack("Invalid gateway address.")
	}
	if gw.IsLoopback() || s.r.Decider.IsLocal(gw, sp.Nexthop.Link) {
		return extack("Gateway can not be a local address.")
	}
	rt := fib6.Route{}
	rt.Nexthop = sp.Nexthop
	return s.checkGateway(&rt, fib6.TableMain, s.r.Tables.Main())
}

// nexthopDel reads del's words as iproute2 6.1 does, with add's grammar,
// and checks them as Linux's nh_valid_get_del_req: only the id may be
// sent.
func (s *Session) nexthopDel(args [][]byte) *cmdErr {
	var q nhReq
	if err := s.parseNexthop(&q, args); err != nil {
		return err
	}
	sp := &q.sp
	switch {
	case q.dev != nil || sp.Gateway.IsValid() || q.blackhole || sp.IsGroup() || sp.Type != 0:
		return extack("Unknown attribute type.")
	case sp.Proto != 0 || sp.Flags != 0:
		return extack("Invalid values in header.")
	case !q.idSet:
		return extack("Nexthop id is missing.")
	}
	return s.nexthopDelID(sp.ID)
}

func (s *Session) nexthopDelID(id uint32) *cmdErr {
	if err := s.r.DeleteNexthop(id); err != nil {
		return rejected(err)
	}
	return nil
}
