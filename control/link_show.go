package control

import (
	"fmt"
	"strings"

	"urouter/dataplane"
)

// Showing links: `ip link show [-s]`, and the link lines `ip address show`
// and `ip monitor` print.

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
	j := s.jsonArray()
	for _, l := range links {
		if j != nil {
			j.startObject()
			s.linkJSON(j, l, true)
			j.endObject()
		} else {
			s.out.WriteString(s.linkLine(l, true))
			s.out.WriteString(linkL2(l))
			s.out.WriteString(s.mirrorLine(l))
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

// operstate: an Ethernet link up has its carrier (UP); a TUN's or the
// loopback's is UNKNOWN, as Linux says of them.
func operstate(l *dataplane.Link) string {
	switch {
	case !l.Up():
		return "DOWN"
	case l.Neigh() != nil:
		return "UP"
	}
	return "UNKNOWN"
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

// mirrorLine says which kernel interface stands for the link (and, with
// -s, what crossed it).
func (s *session) mirrorLine(l *dataplane.Link) string {
	m := l.Mirror()
	if m == nil {
		return ""
	}
	line := fmt.Sprintf("    mirror %s ifindex %d\n", m.Name, m.Index)
	if s.opt.stats > 0 {
		line += fmt.Sprintf("    mirror up %d packets %d bytes down %d packets %d bytes dropped %d\n",
			m.UpPackets.Load(), m.UpBytes.Load(), m.DownPackets.Load(), m.DownBytes.Load(), m.Dropped.Load())
	}
	return line
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
	hw := l.Hardware()
	j.str("link_type", hw.LinkType())
	if hw.HardwareAddr() != nil {
		j.str("address", hw.HardwareAddr().String())
		j.str("broadcast", hw.Broadcast().String())
	}
	if m := l.Mirror(); m != nil {
		j.name("mirror")
		j.startObject()
		j.str("ifname", m.Name)
		j.uint("ifindex", uint64(m.Index))
		if s.opt.stats > 0 {
			j.uint("up_packets", m.UpPackets.Load())
			j.uint("up_bytes", m.UpBytes.Load())
			j.uint("down_packets", m.DownPackets.Load())
			j.uint("down_bytes", m.DownBytes.Load())
			j.uint("dropped", m.Dropped.Load())
		}
		j.endObject()
	}
	if !full {
		return
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
