package control

import (
	"bytes"
	"net/netip"
	"strconv"
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

func (s *session) nexthopCmd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.nexthopShow(nil, false)
	}
	w, rest := args[0], args[1:]
	switch {
	case is(w, "add"), is(w, "create"):
		return s.nexthopModify(rest, false)
	case is(w, "replace"), is(w, "change"), is(w, "chg"):
		return s.nexthopModify(rest, true)
	case is(w, "delete"), is(w, "del"):
		return s.nexthopDel(rest)
	case matches(w, "list"), matches(w, "show"), is(w, "lst"):
		return s.nexthopShow(rest, false)
	case is(w, "get"):
		return s.nexthopGet(rest)
	case matches(w, "flush"):
		return s.nexthopShow(rest, true)
	case matches(w, "bucket"):
		return s.nexthopBucket(rest)
	case matches(w, "help"):
		return nexthopUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip nexthop help\".", w)
}

// parseNhID reads an id as get_unsigned does: up to 2^32-1.
func parseNhID(v []byte) (uint32, *cmdErr) {
	n, err := strconv.ParseUint(str(v), 0, 32)
	if err != nil {
		return 0, invarg("invalid id value", v)
	}
	return uint32(n), nil
}

// nhReq is a parsed `nexthop add/replace`.
type nhReq struct {
	sp        nexthop.Spec
	dev       []byte
	blackhole bool
}

func (s *session) nexthopModify(args [][]byte, replace bool) *cmdErr {
	q, err := s.parseNexthop(args)
	if err != nil {
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
	}
	if _, err := s.r.Nexthops.Add(*sp, replace); err != nil {
		return rejected(err)
	}
	return nil
}

// parseNexthop reads ipnexthop_modify's words.
func (s *session) parseNexthop(args [][]byte) (*nhReq, *cmdErr) {
	q := &nhReq{}
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		var v []byte
		var err *cmdErr
		switch {
		case is(w, "id"):
			if v, err = ws.next(); err == nil {
				q.sp.ID, err = parseNhID(v)
			}
		case is(w, "dev"):
			if v, err = ws.next(); err == nil && s.r.Links.ByName(str(v)) == nil {
				err = invarg("Device does not exist\n", v)
			}
			q.dev = v
		case is(w, "via"):
			if v, err = ws.nextVia(); err == nil {
				q.sp.Gateway, err = parseNhGateway(v)
			}
		case is(w, "blackhole"):
			q.blackhole = true
		case is(w, "onlink"):
			q.sp.Flags |= nexthop.OnLink
		case is(w, "group"):
			if v, err = ws.next(); err == nil {
				q.sp.Group, err = parseGroup(v)
			}
		case is(w, "type"):
			err = parseNhType(&q.sp, &ws)
		case matches(w, "protocol"):
			if v, err = ws.next(); err == nil {
				p, ok := parseProto(v)
				if !ok {
					return nil, invarg("invalid protocol value", v)
				}
				q.sp.Proto = uint8(p)
			}
		case is(w, "fdb"), is(w, "encap"), is(w, "vrf"), is(w, "master"):
			return nil, unsupported(w)
		case matches(w, "help"):
			return nil, nexthopUsage()
		default:
			return nil, invarg("", w)
		}
		if err != nil {
			return nil, err
		}
	}
	return q, nil
}

func parseNhGateway(v []byte) (netip.Addr, *cmdErr) {
	a, err := netip.ParseAddr(str(v))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, invarg("invalid address", v)
	}
	return a, nil
}

// parseNhType reads `type { mpath | resilient [ RESILIENT_ARGS ] }`.
func parseNhType(sp *nexthop.Spec, ws *argv) *cmdErr {
	v, err := ws.next()
	if err != nil {
		return err
	}
	switch {
	case is(v, "mpath"):
		sp.Type = nexthop.Mpath
	case is(v, "resilient"):
		sp.Type = nexthop.ResilientType
		return parseResArgs(sp, ws)
	default:
		return badValue("type", v)
	}
	return nil
}

// nexthopKind checks that the nexthop is one kind (a group, a blackhole
// or a path through a link) as Linux's rtm_to_nh_config does, and gives
// it its family.
func (s *session) nexthopKind(q *nhReq) *cmdErr {
	sp := &q.sp
	switch {
	case sp.IsGroup():
		if q.blackhole || sp.Gateway.IsValid() || q.dev != nil || s.opt.inet6 { // a group is AF_UNSPEC
			return extack("Invalid family for group.")
		}
	case q.blackhole:
		if sp.Gateway.IsValid() || q.dev != nil {
			return extack("Blackhole attribute can not be used with gateway, oif, encap or fdb.")
		}
		sp.Flags |= nexthop.Blackhole
	case q.dev == nil:
		if !sp.Gateway.IsValid() && !s.opt.inet6 {
			return extack("Invalid address family.")
		}
		return extack("Device attribute required for non-blackhole and non-fdb nexthops.")
	}
	sp.Family = nexthop.FamilyInet
	if s.opt.inet6 || sp.Gateway.Is6() {
		sp.Family = nexthop.FamilyInet6
	}
	if sp.IsGroup() {
		sp.Family = nexthop.FamilyUnspec
	}
	return nil
}

// checkNexthopGateway validates a nexthop's gateway on its link as Linux's
// nh_create_ipv6 (through fib6_nh_init) does.
func (s *session) checkNexthopGateway(sp *nexthop.Spec) *cmdErr {
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
	if gw.IsLoopback() || s.r.Decider.IsLocal(gw) {
		return extack("Gateway can not be a local address.")
	}
	rt := fib6.Route{}
	rt.Nexthop = sp.Nexthop
	return s.checkGateway(&rt, fib6.TableMain, s.r.Tables.Main())
}

// parseGroup reads `A[,W]/B[,W]...`.
func parseGroup(v []byte) ([]nexthop.Entry, *cmdErr) {
	var out []nexthop.Entry
	for _, part := range bytes.Split(v, []byte{'/'}) {
		id, w := part, []byte(nil)
		if i := bytes.IndexByte(part, ','); i >= 0 {
			id, w = part[:i], part[i+1:]
		}
		n, err := strconv.ParseUint(str(id), 0, 32)
		if err != nil || len(id) == 0 {
			return nil, badValue("group", id)
		}
		e := nexthop.Entry{ID: uint32(n), Weight: 1}
		if w != nil {
			wn, err := strconv.ParseUint(str(w), 0, 32)
			if err != nil || wn == 0 || wn > nexthop.MaxWeight {
				return nil, invarg("\"weight\" is invalid\n", w)
			}
			e.Weight = uint32(wn)
		}
		out = append(out, e)
	}
	return out, nil
}

func parseResArgs(sp *nexthop.Spec, ws *argv) *cmdErr {
	for ws.i+1 < len(ws.args) {
		w := ws.args[ws.i+1]
		var dst *uint32
		var set *bool
		var most uint64
		switch {
		case is(w, "buckets"):
			dst, set, most = &sp.Buckets, &sp.BucketsSet, nexthop.MaxBuckets
		case is(w, "idle_timer"): // iproute2 sends centiseconds in 32 bits
			dst, set, most = &sp.IdleTimer, &sp.IdleSet, 42949671
		case is(w, "unbalanced_timer"):
			dst, set, most = &sp.UnbalancedTimer, &sp.UnbSet, 42949671
		default:
			return nil
		}
		ws.i++
		v, err := ws.next()
		if err != nil {
			return err
		}
		n, perr := strconv.ParseUint(str(v), 0, 32)
		if perr != nil || n > most {
			return invarg("invalid "+str(w)+" value", v)
		}
		*dst, *set = uint32(n), true
	}
	return nil
}

func (s *session) nexthopDel(args [][]byte) *cmdErr {
	id, err := s.nexthopIDArg(args)
	if err != nil {
		return err
	}
	if err := s.r.DeleteNexthop(id); err != nil {
		return rejected(err)
	}
	return nil
}

// nexthopIDArg reads the `id ID` that del and get take.
func (s *session) nexthopIDArg(args [][]byte) (uint32, *cmdErr) {
	var id uint32
	seen := false
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		if !is(w, "id") {
			return 0, invarg("", w)
		}
		v, err := ws.next()
		if err != nil {
			return 0, err
		}
		if id, err = parseNhID(v); err != nil {
			return 0, err
		}
		seen = true
	}
	if !seen {
		return 0, extack("Nexthop id is missing.")
	}
	return id, nil
}

func (s *session) nexthopGet(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return nexthopUsage()
	}
	id, err := s.nexthopIDArg(args)
	if err != nil {
		return err
	}
	o := s.r.Nexthops.Get(id)
	if o == nil {
		return answers(syscall.ENOENT)
	}
	p := s.nhPrinter()
	p.begin()
	p.print(o.Load())
	p.end()
	return nil
}
