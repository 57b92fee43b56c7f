package control

import (
	"bytes"
	"net/netip"
	"strconv"

	"urouter/nexthop"
)

// Parsing nexthop commands: ipnexthop_modify's words, groups and
// resilient arguments, and the id that del and get take.

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
	idSet     bool
	encap     *encapReq
}

// parseNexthop reads ipnexthop_modify's words.
func (s *Session) parseNexthop(q *nhReq, args [][]byte) *cmdErr {
	*q = nhReq{}
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		var v []byte
		var err *cmdErr
		switch {
		case is(w, "id"):
			if v, err = ws.next(); err == nil {
				q.sp.ID, err = parseNhID(v)
				q.idSet = true
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
					return invarg("invalid protocol value", v)
				}
				q.sp.Proto = uint8(p)
			}
		case is(w, "encap"):
			q.encap, err = parseEncap(&ws)
		case is(w, "fdb"):
			return unsupported(w)
		case is(w, "help"):
			return nexthopUsage()
		default:
			return invarg("", w)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
