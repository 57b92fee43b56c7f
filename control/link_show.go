package control

import (
	"fmt"
	"strings"

	"urouter/dataplane"
	"urouter/dataplane/port"
)

// Showing links: `ip link show [-s]`, and the link lines `ip address show`
// and `ip monitor` print.

func (s *Session) linkShow(args [][]byte) *cmdErr {
	f, err := s.parseAddrSel(args, linkUsage)
	if err != nil {
		return err
	}
	w := s.recordPrinter()
	w.begin()
	for _, l := range f.links {
		if !f.shown(l, false) { // ip link's family is AF_PACKET, whatever -6 says
			continue
		}
		w.openObject("")
		if s.opt.Brief {
			printLinkBrief(&w, l, true)
		} else {
			s.printLink(&w, l, linkMsg{full: true})
			w.endRecord()
		}
		w.closeObject()
	}
	w.end()
	return nil
}

// printLinkBrief prints a link as print_linkinfo_brief does (-brief): its
// name and operstate in columns, then, for ip link (withLL), its MAC and
// flags and the line's end; ip addr's addresses end it there.
func printLinkBrief(w *printer, l *dataplane.Link, withLL bool) {
	name, mdown := vlanName(w, l)
	w.column("ifname", name, 16)
	w.column("operstate", operstate(l), 14)
	if !withLL {
		return
	}
	if mac := l.Hardware().HardwareAddr(); mac != nil {
		w.str("address", "%s ", mac.String())
	}
	names := flagNames(l)
	if mdown {
		names = append(names, "M-DOWN")
	}
	w.strings("flags", "", names)
	w.text("<" + strings.Join(names, ",") + "> \n")
}

// operstate: an Ethernet link up has its carrier (UP) or not (a veth
// whose peer is down: LOWERLAYERDOWN); a TUN's or the loopback's is
// UNKNOWN, as Linux says of them. A host link waiting for its interface
// is NOTPRESENT (RFC 2863's notPresent: a component is missing), up or
// down.
func operstate(l *dataplane.Link) string {
	switch {
	case l.Waiting():
		return "NOTPRESENT"
	case !l.Up():
		return "DOWN"
	case l.IsVRF():
		return "UP" // vrf_dev_init's IF_OPER_UP
	case l.Neigh() == nil:
		return "UNKNOWN"
	case !l.Carrier():
		return "LOWERLAYERDOWN"
	}
	return "UP"
}

// flagNames are a link's flags as iproute2's print_link_flags prints
// them: NO-CARRIER first for a link up without its carrier.
func flagNames(l *dataplane.Link) []string {
	f := l.Flags()
	names := f.Names()
	if f&port.FlagUp != 0 && f&port.FlagLowerUp == 0 && l.Neigh() != nil {
		names = append([]string{"NO-CARRIER"}, names...)
	}
	return names
}

// linkMsg says which message ip prints a link from: ip link's (full:
// its mode, statistics, and mirror in text too), ip addr's, or the
// inet6 family's that ip -6 addr dumps (inet6: inet6_fill_ifinfo's has
// no qdisc, master, group, broadcast nor linkinfo); noLL leaves the
// link/ line out (ip -6 addr's text, but with -d).
type linkMsg struct{ full, inet6, noLL bool }

// printLink prints a link as iplink.c's print_linkinfo does, from the
// message m.
func (s *Session) printLink(w *printer, l *dataplane.Link, m linkMsg) {
	w.uint("ifindex", "%d: ", uint64(l.Index))
	name, mdown := vlanName(w, l)
	w.str("ifname", "%s: ", name)
	names := flagNames(l)
	if mdown {
		names = append(names, "M-DOWN")
	}
	w.strings("flags", "", names)
	w.text("<" + strings.Join(names, ",") + ">")
	w.uint("mtu", " mtu %d", uint64(l.MTU()))
	if !m.inet6 {
		qdisc := "noqueue"
		if !l.Activated() {
			qdisc = "noop" // Linux's qdisc of a device never up
		}
		w.str("qdisc", " qdisc %s", qdisc)
		printMaster(w, s, l)
	}
	w.str("operstate", " state %s ", operstate(l))
	if m.full {
		w.str("linkmode", "mode %s ", "DEFAULT")
	}
	if !m.inet6 {
		w.str("group", "group %s ", "default")
	}
	hw := l.Hardware()
	w.uint("txqlen", "qlen %d", uint64(hw.TxQueueLen())) // ip asks the kernel for it if the message lacks it
	if !m.noLL {
		w.str("link_type", "\n    link/%s ", hw.LinkType())
		if hw.HardwareAddr() != nil {
			w.str("address", "%s", hw.HardwareAddr().String())
			if !m.inet6 {
				w.str("broadcast", " brd %s", hw.Broadcast().String())
			}
		}
	}
	w.text("\n")
	if s.opt.Details && !m.inet6 {
		printLinkInfo(w, l)
	}
	if m.full || w.json() { // ip addr's text leaves the mirror out, its JSON has it
		s.printMirror(w, l)
	}
	if m.full && s.opt.Stats > 0 {
		printLinkStats(w, l.Stats(), below(l))
	}
}

// belowIP is what an Ethernet link counts under IPv6 that Linux's link
// counters have: the frames its socket's queue dropped before the router
// read them (a NIC's missed: the kernel's PACKET_STATISTICS drops, which
// a UDP flood makes) and the multicast frames it took.
type belowIP struct{ missed, mcast uint64 }

func below(l *dataplane.Link) belowIP {
	if e := l.EtherStats(); e != nil {
		return belowIP{missed: e.QueueDrops.Load(), mcast: e.Multicast.Load()}
	}
	return belowIP{}
}

// printMirror says which kernel interface stands for the link (and, with
// -s, what crossed it).
func (s *Session) printMirror(w *printer, l *dataplane.Link) {
	m := l.Mirror()
	if m == nil {
		return
	}
	w.openObject("mirror")
	w.str("ifname", "    mirror %s", m.Name)
	w.uint("ifindex", " ifindex %d", uint64(m.Index))
	w.str("type", " type %s\n", m.Kind)
	if s.opt.Stats > 0 {
		w.uint("up_packets", "    mirror up %d packets", m.UpPackets.Load())
		w.uint("up_bytes", " %d bytes", m.UpBytes.Load())
		w.uint("down_packets", " down %d packets", m.DownPackets.Load())
		w.uint("down_bytes", " %d bytes", m.DownBytes.Load())
		w.uint("dropped", " dropped %d", m.Dropped.Load())
		w.uint("ra_held", " ra_held %d\n", m.RAsHeld.Load())
	}
	w.closeObject()
}

// printLinkStats prints a link's counters. As in iproute2's
// print_link_stats64, the text is a table of its own and the JSON an
// object of its own; beyond Linux's, the reasons the router dropped for.
func printLinkStats(w *printer, c dataplane.Stats, b belowIP) {
	if !w.json() {
		w.text(linkStats(c, b))
		return
	}
	w.openObject("stats64")
	for _, dir := range []struct {
		k                           string
		bytes, packets, errs, drops uint64
	}{{"rx", c.RxBytes, c.RxPackets, c.RxErrors, c.RxDropped}, {"tx", c.TxBytes, c.TxPackets, c.TxErrors, c.TxDropped}} {
		w.openObject(dir.k)
		w.uint("bytes", "", dir.bytes)
		w.uint("packets", "", dir.packets)
		w.uint("errors", "", dir.errs)
		w.uint("dropped", "", dir.drops)
		if dir.k == "rx" { // as iproute2's print_link_stats64 (missed is text's only)
			w.uint("over_errors", "", 0)
			w.uint("multicast", "", b.mcast)
		}
		w.closeObject()
	}
	w.openObject("drops")
	for _, d := range c.Drops {
		w.uint(d.Reason, "", d.Count)
	}
	w.closeObject()
	w.uint("icmp_ratelimited", "", c.ICMPLimited)
	w.openObject("copp")
	for _, k := range c.CoPP {
		w.openObject(k.Class)
		w.uint("passed", "", k.Passed)
		w.uint("dropped", "", k.Dropped)
		w.closeObject()
	}
	w.closeObject()
	w.closeObject()
}

func linkStats(c dataplane.Stats, b belowIP) string {
	return fmt.Sprintf("    RX:  bytes packets errors dropped  missed   mcast           \n"+
		"    %10d %7d %6d %7d %7d %7d \n"+
		"    TX:  bytes packets errors dropped carrier collsns           \n"+
		"    %10d %7d %6d %7d %7d %7d \n",
		c.RxBytes, c.RxPackets, c.RxErrors, c.RxDropped, b.missed, b.mcast,
		c.TxBytes, c.TxPackets, c.TxErrors, c.TxDropped, 0, 0) + dropReasons(c)
}

// dropReasons adds a line per drop reason the router counts, beyond what
// Linux shows, so that `link show -s` says why packets were dropped, and
// a line per CoPP class that saw packets.
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
	for _, k := range c.CoPP { // what was punted to the router, by class
		if k.Passed > 0 || k.Dropped > 0 {
			fmt.Fprintf(&b, "    copp %s passed %d dropped %d\n", k.Class, k.Passed, k.Dropped)
		}
	}
	return b.String()
}
