package control

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"urouter/ndisc"
)

// Parsing neighbour commands: ipneigh_modify's words, NUD states and
// link-layer addresses.

// parseNud reads a STATE as nud_state_a2n: some by prefix, the rest
// exactly, or a single NUD bit as a number.
func parseNud(w []byte) (ndisc.State, bool) {
	switch {
	case matches(w, "permanent"):
		return ndisc.Permanent, true
	case matches(w, "reachable"):
		return ndisc.Reachable, true
	case matches(w, "failed"):
		return ndisc.Failed, true
	}
	for _, n := range []string{"noarp", "none", "stale", "incomplete", "delay", "probe"} {
		if is(w, n) {
			st, _ := ndisc.ParseState(n)
			return st, true
		}
	}
	if n, err := strconv.ParseUint(str(w), 0, 32); err == nil && n < 0x100 && n&(n-1) == 0 {
		return ndisc.State(n), true
	}
	return 0, false
}

// neighReq is a parsed `neigh add/del/change/replace`.
type neighReq struct {
	state    ndisc.State
	dev, lla []byte
	dst      netip.Addr
	flags    ndisc.Flags
}

// parseNeighModify reads ipneigh_modify's words.
func parseNeighModify(q *neighReq, args [][]byte) *cmdErr {
	*q = neighReq{state: ndisc.Permanent}
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		var v []byte
		var err *cmdErr
		switch {
		case matches(w, "lladdr"):
			if v, err = ws.next(); err == nil && q.lla != nil {
				err = duparg("lladdr", v)
			}
			q.lla = v
		case is(w, "nud"):
			if v, err = ws.next(); err == nil {
				st, ok := parseNud(v)
				if !ok {
					return invarg("nud state is bad", v)
				}
				q.state = st
			}
		case is(w, "router"):
			q.flags |= ndisc.Router
		case is(w, "dev"):
			q.dev, err = ws.next()
		case matches(w, "proxy"), is(w, "use"), is(w, "managed"), matches(w, "extern_learn"), matches(w, "protocol"):
			return unsupported(w)
		default:
			err = q.parseDst(&ws, w)
		}
		if err != nil {
			return err
		}
	}
	if q.dev == nil || !q.dst.IsValid() {
		return &cmdErr{msg: "Device and destination are required arguments.", code: 255}
	}
	return nil
}

// parseDst reads the word that is no keyword: `[to] ADDR`, once.
func (q *neighReq) parseDst(ws *argv, w []byte) *cmdErr {
	w, err := ws.valueAfter(w, "to")
	if err != nil {
		return err
	}
	if matches(w, "help") { // ipneigh_modify takes the word after help as the address
		if w, err = ws.next(); err != nil {
			return err
		}
	}
	if q.dst.IsValid() {
		return parseErr("Error: either \"to\" is duplicate, or \"%s\" is a garbage.", w)
	}
	q.dst, err = parseAddr(w)
	return err
}

// parseLLAddr reads a link-layer address as iproute2's ll_addr_a2n: each
// byte between colons read as sscanf's %x (leading hex digits, the rest
// ignored), the first bad one named.
func parseLLAddr(b []byte) ([]byte, *cmdErr) {
	var out []byte
	for _, part := range strings.Split(str(b), ":") {
		if len(out) == 20 {
			break // ll_addr_a2n stops at its buffer's end
		}
		h := strings.TrimPrefix(strings.TrimPrefix(part, "0x"), "0X")
		n := 0
		for n < len(h) && strings.IndexByte("0123456789abcdefABCDEF", h[n]) >= 0 {
			n++
		}
		v, err := strconv.ParseUint(h[:n], 16, 64)
		if err != nil || v > 255 {
			return nil, &cmdErr{msg: fmt.Sprintf("\"%s\" is invalid lladdr.", part), code: 1}
		}
		out = append(out, byte(v))
	}
	return out, nil
}
