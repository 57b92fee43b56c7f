package control

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"

	"urouter/dataplane"
	"urouter/ndisc"
)

// The neighbour object: ip neigh { add | del | change | replace } ADDR
// [lladdr LLADDR] [nud STATE] [router] dev DEV, and ip neigh { show |
// flush } [to PREFIX] [dev DEV] [nud STATE], over the Ethernet links'
// caches (ipneigh.c's grammar and output).

func (s *session) neighCmd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.neighShow(nil, false)
	}
	w, rest := args[0], args[1:]
	switch {
	case matches(w, "add"):
		return s.neighModify(rest, ndisc.Add)
	case matches(w, "change") || is(w, "chg"):
		return s.neighModify(rest, ndisc.Change)
	case matches(w, "replace"):
		return s.neighModify(rest, ndisc.Replace)
	case matches(w, "delete"):
		return s.neighModify(rest, neighDel)
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

func (s *session) neighModify(args [][]byte, mode ndisc.Mode) *cmdErr {
	state := ndisc.Permanent
	var dev, lla []byte
	var dst netip.Addr
	var flags ndisc.Flags
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch {
		case matches(w, "lladdr"):
			v, err := ws.next()
			if err != nil {
				return err
			}
			if lla != nil {
				return duparg("lladdr", v)
			}
			lla = v
		case is(w, "nud"):
			v, err := ws.next()
			if err != nil {
				return err
			}
			st, ok := parseNud(v)
			if !ok {
				return invarg("nud state is bad", v)
			}
			state = st
		case is(w, "router"):
			flags |= ndisc.Router
		case is(w, "dev"):
			v, err := ws.next()
			if err != nil {
				return err
			}
			dev = v
		case matches(w, "proxy"), is(w, "use"), is(w, "managed"), matches(w, "extern_learn"), matches(w, "protocol"):
			return unsupported(w)
		default:
			w, err := ws.valueAfter(w, "to")
			if err != nil {
				return err
			}
			if matches(w, "help") {
				return neighUsage()
			}
			if dst.IsValid() {
				return parseErr("Error: either \"to\" is duplicate, or \"%s\" is a garbage.", w)
			}
			a, err := parseAddr(w)
			if err != nil {
				return err
			}
			dst = a
		}
	}
	if dev == nil || !dst.IsValid() {
		return &cmdErr{msg: "Device and destination are required arguments.", code: 255}
	}
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

// parseLLAddr reads a link-layer address as iproute2's ll_addr_a2n: bytes
// in hex between colons, the first bad one named.
func parseLLAddr(b []byte) ([]byte, *cmdErr) {
	var out []byte
	for _, part := range strings.Split(str(b), ":") {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(part, "0x"), "0X"), 16, 16)
		if err != nil || v > 255 || len(out) == 20 {
			return nil, &cmdErr{msg: fmt.Sprintf("\"%s\" is invalid lladdr.", part), code: 1}
		}
		out = append(out, byte(v))
	}
	return out, nil
}

// neighFilter is what `show` and `flush` select.
type neighFilter struct {
	link   *dataplane.Link
	to     netip.Prefix
	states uint32 // NUD bits, 0x100 for NONE
}

func (f *neighFilter) selects(i ndisc.Info) bool {
	st := uint32(i.State)
	if st == 0 {
		st = 0x100
	}
	return f.states&st != 0 && (!f.to.IsValid() || f.to.Contains(i.Addr))
}

func (s *session) neighShow(args [][]byte, flush bool) *cmdErr {
	f := neighFilter{states: 0xff &^ uint32(ndisc.NoARP)}
	if flush {
		if len(args) == 0 {
			return &cmdErr{msg: "Flush requires arguments.", code: 1}
		}
		f.states = ^uint32(ndisc.Permanent | ndisc.NoARP)
	}
	given := false
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch {
		case is(w, "dev"):
			v, err := ws.next()
			if err != nil {
				return err
			}
			if f.link != nil {
				return duparg("dev", v)
			}
			if f.link = s.r.Links.ByName(str(v)); f.link == nil {
				return nodev(v)
			}
		case is(w, "nud"):
			v, err := ws.next()
			if err != nil {
				return err
			}
			if !given {
				given, f.states = true, 0
			}
			st, ok := parseNud(v)
			bits := uint32(st)
			switch {
			case !ok && !is(v, "all"):
				return invarg("nud state is bad", v)
			case !ok:
				bits = ^uint32(0)
				if flush {
					bits &^= uint32(ndisc.NoARP)
				}
			case st == ndisc.None:
				bits = 0x100
			}
			f.states |= bits
		case is(w, "unused"), is(w, "nomaster"):
		case is(w, "proxy"), is(w, "master"), is(w, "vrf"), matches(w, "protocol"):
			return unsupported(w)
		default:
			w, err := ws.valueAfter(w, "to")
			if err != nil {
				return err
			}
			if matches(w, "help") {
				return neighUsage()
			}
			p, err := parsePrefix(w)
			if err != nil {
				return invarg("to value is invalid\n", w)
			}
			f.to = p
		}
	}
	links := s.r.Links.All()
	if f.link != nil {
		links = []*dataplane.Link{f.link}
	}
	if flush {
		n := 0
		for _, l := range links {
			if t := l.Neigh(); t != nil {
				n += t.Flush(f.selects)
			}
		}
		if s.opt.stats > 0 {
			if n == 0 {
				s.out.WriteString("Nothing to flush.\n")
			} else {
				fmt.Fprintf(s.out, "\n*** Round 1, deleting %d entries ***\n*** Flush is complete after 1 round ***\n", n)
			}
		}
		return nil
	}
	j := s.jsonArray()
	for _, l := range links {
		t := l.Neigh()
		if t == nil {
			continue
		}
		for _, i := range t.Dump() {
			if f.selects(i) {
				s.neighLine(j, l, i, f.link == nil)
			}
		}
	}
	if j != nil {
		j.endArray()
		s.out.WriteByte('\n')
	}
	return nil
}

// neighLine prints one entry as print_neigh does.
func (s *session) neighLine(j *jsonw, l *dataplane.Link, i ndisc.Info, withDev bool) {
	showMAC := i.HasMAC && i.State&(ndisc.Failed|ndisc.Incomplete) == 0 && i.State != ndisc.None
	secs := func(d interface{ Seconds() float64 }) uint64 { return uint64(max(d.Seconds(), 0)) }
	if j != nil {
		j.startObject()
		j.str("dst", i.Addr.String())
		if withDev {
			j.str("dev", l.Name)
		}
		if showMAC {
			j.str("lladdr", i.MAC.String())
		}
		if i.Flags&ndisc.Router != 0 {
			j.null("router")
		}
		if s.opt.stats > 0 {
			j.uint("used", secs(i.Used))
			j.uint("confirmed", secs(i.Confirmed))
			j.uint("updated", secs(i.Updated))
			j.uint("probes", uint64(i.Probes))
		}
		if i.State != ndisc.None {
			j.strings("state", stateWords(i.State))
		}
		j.endObject()
		return
	}
	s.out.WriteString(i.Addr.String())
	s.out.WriteByte(' ')
	if withDev {
		fmt.Fprintf(s.out, "dev %s ", l.Name)
	}
	if showMAC {
		fmt.Fprintf(s.out, "lladdr %s ", i.MAC)
	}
	if i.Flags&ndisc.Router != 0 {
		s.out.WriteString("router ")
	}
	if s.opt.stats > 0 {
		fmt.Fprintf(s.out, " used %d/%d/%dprobes %d ", secs(i.Used), secs(i.Confirmed), secs(i.Updated), i.Probes)
	}
	for _, w := range stateWords(i.State) {
		s.out.WriteString(w)
		s.out.WriteByte(' ')
	}
	s.out.WriteByte('\n')
}

// stateWords are the state's NUD bits as print_neigh_state prints them;
// NONE prints none.
func stateWords(st ndisc.State) []string {
	if st == ndisc.None {
		return nil
	}
	return strings.Split(st.String(), ",")
}
