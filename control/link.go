package control

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"urouter/dataplane"
)

// The link object: ip link { add NAME type { dummy | tun ... } | set NAME
// up|down|mtu N | del NAME | show [NAME] }. What a link is and shows comes
// from its dataplane.Hardware; nothing here depends on its kind.

func (s *session) linkCmd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.linkShow(nil)
	}
	w, rest := args[0], args[1:]
	switch {
	case matches(w, "add"):
		return s.linkAdd(rest)
	case matches(w, "set") || matches(w, "change"):
		return s.linkSet(rest)
	case matches(w, "delete"):
		return s.linkDel(rest)
	case matches(w, "show") || matches(w, "lst") || matches(w, "list"):
		return s.linkShow(rest)
	case matches(w, "help"):
		return parseErr("Usage: ip link add NAME type dummy\n" +
			"       ip link add NAME type tun [ mtu MTU ] [ queues N ] [ netns NS ] [ gso { on | off } ]\n" +
			"       ip link set { DEVICE | dev DEVICE } [ up | down ] [ mtu MTU ]\n" +
			"       ip link delete { DEVICE | dev DEVICE }\n" +
			"       ip link show [ DEVICE ]")
	}
	return parseErr("Command \"%s\" is unknown, try \"ip link help\".", w)
}

// linkArgs is what iplink_parse reads.
type linkArgs struct {
	name    []byte
	typ     []byte
	typArgs [][]byte
	up, set bool
	mtu     int
}

func parseLinkArgs(args [][]byte) (*linkArgs, *cmdErr) {
	a := &linkArgs{mtu: -1}
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch {
		case is(w, "up"):
			a.up, a.set = true, true
		case is(w, "down"):
			a.up, a.set = false, true
		case is(w, "name"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			if a.name != nil {
				return nil, duparg("name", v)
			}
			a.name = v
		case is(w, "mtu"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			if a.mtu >= 0 {
				return nil, duparg("mtu", v)
			}
			if a.mtu, err = parseMTU(v); err != nil {
				return nil, err
			}
		case matches(w, "type"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			a.typ = v
			a.typArgs = args[ws.i+1:]
			return a, nil
		default:
			if is(w, "dev") {
				v, err := ws.next()
				if err != nil {
					return nil, err
				}
				w = v
			}
			if matches(w, "help") {
				return nil, parseErr("Usage: ip link { add | set | delete | show } ...")
			}
			if a.name != nil {
				return nil, parseErr("Error: either \"dev\" is duplicate, or \"%s\" is a garbage.", w)
			}
			a.name = w
		}
	}
	return a, nil
}

func (s *session) linkAdd(args [][]byte) *cmdErr {
	a, err := parseLinkArgs(args)
	if err != nil {
		return err
	}
	if a.typ == nil {
		return &cmdErr{msg: "Not enough information: \"type\" argument is required", code: 1}
	}
	if a.name == nil {
		return &cmdErr{msg: "Not enough information: \"dev\" argument is required.", code: 255}
	}
	if len(a.name) == 0 || len(a.name) > 15 || strings.ContainsAny(str(a.name), "/ \t:") {
		return invarg("\"name\" not a valid ifname\n", a.name)
	}
	var tun *dataplane.TUNOptions
	switch str(a.typ) {
	case "dummy":
		if len(a.typArgs) > 0 {
			return garbageArgs(a.typArgs[0])
		}
	case "tun":
		var err *cmdErr
		if tun, err = parseTUNArgs(a); err != nil {
			return err
		}
	default:
		return extack("Unknown device type.")
	}
	mtu := 1500
	if a.mtu >= 0 {
		if a.mtu < dataplane.MinMTU {
			return extack(dataplane.ErrMTU.Error())
		}
		mtu = a.mtu
	}
	var l *dataplane.Link
	var lerr error
	if tun != nil {
		tun.MTU = mtu
		l, lerr = s.r.AddTUN(string(a.name), *tun)
	} else {
		l, lerr = s.r.AddDummy(string(a.name), mtu)
	}
	if lerr != nil {
		return linkErr(lerr)
	}
	if a.set && a.up {
		if err := s.r.SetUp(l, true); err != nil {
			return linkErr(err)
		}
	}
	return nil
}

// parseTUNArgs reads `type tun [mtu N] [queues N] [netns NS] [gso on|off]`.
func parseTUNArgs(a *linkArgs) (*dataplane.TUNOptions, *cmdErr) {
	o := &dataplane.TUNOptions{Queues: 1}
	args := a.typArgs
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		v, err := ws.next()
		if err != nil {
			return nil, err
		}
		switch {
		case is(w, "mtu"):
			if a.mtu, err = parseMTU(v); err != nil {
				return nil, err
			}
		case is(w, "queues"):
			n, err := strconv.Atoi(str(v))
			if err != nil || n < 1 || n > 64 {
				return nil, invarg("\"queues\" must be 1 to 64\n", v)
			}
			o.Queues = n
		case is(w, "netns"):
			o.Netns = string(v)
		case is(w, "gso"):
			switch str(v) {
			case "on":
			case "off":
				o.NoGSO = true
			default:
				return nil, invarg("\"gso\" is on or off\n", v)
			}
		default:
			return nil, garbageArgs(w)
		}
	}
	return o, nil
}

// parseMTU reads the value of `mtu`.
func parseMTU(v []byte) (int, *cmdErr) {
	n, err := strconv.Atoi(str(v))
	if err != nil || n < 0 {
		return 0, invarg("Invalid \"mtu\" value\n", v)
	}
	return n, nil
}

func linkErr(err error) *cmdErr {
	switch {
	case errors.Is(err, dataplane.ErrLinkExists):
		return answers(syscall.EEXIST)
	}
	return extack(err.Error())
}

// namedLink parses the arguments of link set and del, and finds the link
// they name.
func (s *session) namedLink(args [][]byte) (*linkArgs, *dataplane.Link, *cmdErr) {
	a, err := parseLinkArgs(args)
	if err != nil {
		return nil, nil, err
	}
	if a.name == nil {
		return nil, nil, parseErr("Not enough information: \"dev\" argument is required.")
	}
	l, err := s.link(a.name)
	if err != nil {
		return nil, nil, err
	}
	return a, l, nil
}

func (s *session) linkSet(args [][]byte) *cmdErr {
	a, l, err := s.namedLink(args)
	if err != nil {
		return err
	}
	if a.typ != nil {
		return extack("Operation not supported.")
	}
	if a.mtu >= 0 {
		if err := s.r.SetMTU(l, a.mtu); err != nil {
			return extack(err.Error())
		}
	}
	if a.set {
		if err := s.r.SetUp(l, a.up); err != nil {
			return linkErr(err)
		}
	}
	return nil
}

func (s *session) linkDel(args [][]byte) *cmdErr {
	_, l, err := s.namedLink(args)
	if err != nil {
		return err
	}
	if derr := s.r.DeleteLink(l); derr != nil {
		return rejected(derr)
	}
	return nil
}

// shownLinks parses the `[dev] NAME` of link and address show: the links
// to show, the one named or all. A word matching skip (if any) is ignored.
func (s *session) shownLinks(args [][]byte, skip string) ([]*dataplane.Link, *cmdErr) {
	var only *dataplane.Link
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		if is(w, "dev") {
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			w = v
		} else if skip != "" && matches(w, skip) {
			continue
		}
		only = s.r.Links.ByName(str(w))
		if only == nil {
			return nil, &cmdErr{msg: fmt.Sprintf("Device \"%s\" does not exist.", w), code: 1}
		}
	}
	if only != nil {
		return []*dataplane.Link{only}, nil
	}
	return s.r.Links.All(), nil
}

func (s *session) linkShow(args [][]byte) *cmdErr {
	links, err := s.shownLinks(args, "up")
	if err != nil {
		return err
	}
	var j *jsonw
	if s.opt.json {
		j = &jsonw{w: s.out, pretty: s.opt.pretty}
		j.startArray()
	}
	for _, l := range links {
		if j != nil {
			j.startObject()
			s.linkJSON(j, l, true)
			j.endObject()
		} else {
			s.out.WriteString(s.linkLine(l, true))
			s.out.WriteString(linkL2(l))
			if s.opt.stats > 0 {
				s.out.WriteString(linkStats(l))
			}
		}
	}
	if j != nil {
		j.endArray()
		s.out.WriteByte('\n')
	}
	return nil
}

func operstate(l *dataplane.Link) string {
	if l.Up() {
		return "UNKNOWN"
	}
	return "DOWN"
}

// linkLine is the first line of `ip link show` (mode is left out by
// `ip addr show`).
func (s *session) linkLine(l *dataplane.Link, mode bool) string {
	m := ""
	if mode {
		m = "mode DEFAULT "
	}
	return fmt.Sprintf("%d: %s: <%s> mtu %d qdisc noqueue state %s %sgroup default qlen %d\n",
		l.Index, l.Name, strings.Join(l.Flags().Names(), ","), l.MTU(), operstate(l), m, l.Hardware().TxQueueLen())
}

// linkL2 is the second line: the link-layer type and addresses.
func linkL2(l *dataplane.Link) string {
	hw := l.Hardware()
	if hw.HardwareAddr() == nil {
		return "    link/" + hw.LinkType() + " \n"
	}
	return "    link/" + hw.LinkType() + " " + hw.HardwareAddr().String() + " brd " + hw.Broadcast().String() + "\n"
}

func linkStats(l *dataplane.Link) string {
	c := l.Stats()
	return fmt.Sprintf("    RX:  bytes packets errors dropped  missed   mcast           \n"+
		"    %10d %7d %6d %7d %7d %7d \n"+
		"    TX:  bytes packets errors dropped carrier collsns           \n"+
		"    %10d %7d %6d %7d %7d %7d \n",
		c.RxBytes, c.RxPackets, c.RxErrors, c.RxDropped, 0, 0,
		c.TxBytes, c.TxPackets, c.TxErrors, c.TxDropped, 0, 0) + dropReasons(c)
}

// dropReasons adds a line per drop reason the router counts, beyond what
// Linux shows, so that `link show -s` says why packets were dropped.
func dropReasons(c dataplane.Stats) string {
	var b strings.Builder
	for _, d := range c.Drops {
		if d.Count > 0 {
			fmt.Fprintf(&b, "    drop %s %d\n", d.Reason, d.Count)
		}
	}
	if c.ICMPLimited > 0 { // not drops: errors the drops earned, held back
		fmt.Fprintf(&b, "    icmp_ratelimited %d\n", c.ICMPLimited)
	}
	return b.String()
}

func (s *session) linkJSON(j *jsonw, l *dataplane.Link, full bool) {
	j.uint("ifindex", uint64(l.Index))
	j.str("ifname", l.Name)
	j.strings("flags", l.Flags().Names())
	j.uint("mtu", uint64(l.MTU()))
	j.str("qdisc", "noqueue")
	j.str("operstate", operstate(l))
	if full {
		j.str("linkmode", "DEFAULT")
	}
	j.str("group", "default")
	j.uint("txqlen", uint64(l.Hardware().TxQueueLen()))
	if !full {
		return
	}
	hw := l.Hardware()
	j.str("link_type", hw.LinkType())
	if hw.HardwareAddr() != nil {
		j.str("address", hw.HardwareAddr().String())
		j.str("broadcast", hw.Broadcast().String())
	}
	if s.opt.stats > 0 {
		c := l.Stats()
		j.name("stats64")
		j.startObject()
		for _, dir := range []struct {
			k                           string
			bytes, packets, errs, drops uint64
		}{{"rx", c.RxBytes, c.RxPackets, c.RxErrors, c.RxDropped}, {"tx", c.TxBytes, c.TxPackets, c.TxErrors, c.TxDropped}} {
			j.name(dir.k)
			j.startObject()
			j.uint("bytes", dir.bytes)
			j.uint("packets", dir.packets)
			j.uint("errors", dir.errs)
			j.uint("dropped", dir.drops)
			j.endObject()
		}
		j.name("drops")
		j.startObject()
		for _, d := range c.Drops {
			j.uint(d.Reason, d.Count)
		}
		j.endObject()
		j.uint("icmp_ratelimited", c.ICMPLimited)
		j.endObject()
	}
}
