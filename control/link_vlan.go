package control

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"urouter/dataplane"
	"urouter/dataplane/port"
)

// VLAN links: `link add link PARENT name NAME type vlan id ID [protocol
// 802.1Q|802.1ad] [reorder_hdr on|off]`, as iproute2's iplink_vlan.c
// reads them and Linux's 8021q (vlan_validate, vlan_newlink,
// vlan_check_real_dev) refuses them; shown as NAME@PARENT, and under -d
// with vlan_print_opt's line.

const vlanHelp = "Usage: ... vlan id VLANID\n" +
	"\t\t[ protocol VLANPROTO ]\n" +
	"\t\t[ reorder_hdr { on | off } ]\n" +
	"\t\t[ gvrp { on | off } ]\n" +
	"\t\t[ mvrp { on | off } ]\n" +
	"\t\t[ loose_binding { on | off } ]\n" +
	"\t\t[ bridge_binding { on | off } ]\n" +
	"\t\t[ ingress-qos-map QOS-MAP ]\n" +
	"\t\t[ egress-qos-map QOS-MAP ]\n" +
	"\n" +
	"VLANID := 0-4095\n" +
	"VLANPROTO: [ 802.1Q | 802.1ad ]\n" +
	"QOS-MAP := [ QOS-MAP ] QOS-MAPPING\n" +
	"QOS-MAPPING := FROM:TO"

// vlanArgs are a VLAN link's words.
type vlanArgs struct {
	id        int // -1: not given
	tpid      uint16
	noReorder bool
}

// vlanWords are vlan_parse_opt's keywords, in its order (each matched as
// an abbreviation).
var vlanWords = []string{"protocol", "id", "reorder_hdr", "gvrp", "mvrp", "loose_binding", "bridge_binding",
	"ingress-qos-map", "egress-qos-map"}

var vlanKeywords = sync.OnceValue(func() keywords {
	l := make([]kw, len(vlanWords))
	for i, w := range vlanWords {
		l[i] = kw{w, true, i + 1}
	}
	return newKeywords(l)
})

func parseVLANArgs(a *linkArgs) (*vlanArgs, *cmdErr) {
	v := &vlanArgs{id: -1, tpid: port.EtherTypeVLAN}
	ws := argv{args: a.typArgs}
	for ; ws.i < len(a.typArgs); ws.i++ {
		w := a.typArgs[ws.i]
		i := vlanKeywords().of(w)
		if i == 0 {
			if matches(w, "help") {
				return nil, parseErr("%s", vlanHelp)
			}
			return nil, parseErr("vlan: unknown command \"%s\"?\n%s", w, vlanHelp)
		}
		val, err := ws.next()
		if err != nil {
			return nil, err
		}
		if err := v.set(vlanWords[i-1], val); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// set reads keyword k's value.
func (v *vlanArgs) set(k string, val []byte) *cmdErr {
	switch k {
	case "protocol":
		p, ok := llProto(str(val))
		if !ok {
			return invarg("protocol is invalid", val)
		}
		v.tpid = p
	case "id":
		n, err := strconv.ParseUint(str(val), 0, 16)
		if err != nil {
			return invarg("id is invalid", val)
		}
		v.id = int(n)
	case "ingress-qos-map", "egress-qos-map":
		return unsupported([]byte(k))
	default:
		on := is(val, "on")
		if !on && !is(val, "off") {
			return parseErr("Error: argument of \"%s\" must be \"on\" or \"off\", not \"%s\"", k, val)
		}
		if k == "reorder_hdr" {
			v.noReorder = !on
		} else if on {
			return unsupported([]byte(k)) // GVRP, MVRP and the bindings: not the router's
		}
	}
	return nil
}

// llProto reads an ethertype as ll_proto_a2n does: a name of its table
// (the ones a VLAN is asked for, and a few others the kernel then
// refuses) or a number.
func llProto(s string) (uint16, bool) {
	for _, p := range []struct {
		name string
		id   uint16
	}{{"802.1Q", port.EtherTypeVLAN}, {"802.1ad", port.EtherTypeQinQ}, {"ip", 0x0800}, {"arp", 0x0806}, {"ipv6", port.EtherTypeIPv6}} {
		if strings.EqualFold(s, p.name) {
			return p.id, true
		}
	}
	n, err := strconv.ParseUint(s, 0, 16)
	return uint16(n), err == nil
}

// protoName is an ethertype as ll_proto_n2a names a VLAN's.
func protoName(tpid uint16) string {
	if tpid == port.EtherTypeQinQ {
		return "802.1ad"
	}
	return "802.1Q"
}

// addVLAN makes the VLAN link on parent (nil: none named), checked as
// vlan_validate and vlan_newlink check it, in their order.
func (s *Session) addVLAN(a *linkArgs, parent *dataplane.Link, v *vlanArgs, mtu int) (*dataplane.Link, *cmdErr) {
	var mac []byte
	if a.address != nil {
		var err *cmdErr
		if mac, err = parseLLAddr(a.address); err != nil {
			return nil, err
		}
		if len(mac) != 6 || mac[0]&1 != 0 || slices.Equal(mac, make([]byte, 6)) {
			return nil, extack("8021q: Invalid link address.")
		}
	}
	switch {
	case v.tpid != port.EtherTypeVLAN && v.tpid != port.EtherTypeQinQ:
		return nil, extack("8021q: Invalid VLAN protocol.")
	case v.id >= 4095:
		return nil, extack("8021q: Invalid VLAN id.")
	case v.id < 0:
		return nil, extack("8021q: VLAN id not specified.")
	case parent == nil:
		return nil, extack("8021q: link not specified.")
	}
	info := dataplane.VLANInfo{Parent: parent, TPID: v.tpid, VID: uint16(v.id), Flags: dataplane.VLANReorderHdr}
	if v.noReorder {
		info.Flags = 0
	}
	l, err := s.r.AddVLAN(string(a.name), info, mtu, dataplane.EtherOptions{MAC: mac, Index: a.index})
	switch {
	case err == nil:
		return l, nil
	case errors.Is(err, dataplane.ErrVLANParent), errors.Is(err, dataplane.ErrVLANExists):
		return nil, extack(err.Error() + ".") // iproute2 ends an extack message with a period
	}
	return nil, linkErr(err) // an MTU above the parent's: vlan_newlink's bare EINVAL
}

// vlanName is a link's name as print_name_and_link prints it (NAME@PARENT
// for a VLAN link) and whether its parent is down (M-DOWN).
func vlanName(w *printer, l *dataplane.Link) (string, bool) {
	v, ok := l.VLAN()
	if !ok || v.Parent == nil {
		return l.Name, false
	}
	if w.json() {
		w.str("link", "", v.Parent.Name)
		return l.Name, !v.Parent.Up()
	}
	return l.Name + "@" + v.Parent.Name, !v.Parent.Up()
}

// printVLANDetails prints what -d shows of a VLAN link, inside linkinfo:
// print_linktype's kind and vlan_print_opt's line.
func printVLANDetails(w *printer, l *dataplane.Link) {
	v, ok := l.VLAN()
	if !ok {
		return
	}
	w.str("info_kind", "    %s ", "vlan")
	w.openObject("info_data")
	w.str("protocol", "protocol %s ", protoName(v.TPID))
	w.uint("id", "id %d ", uint64(v.VID))
	flags := []string{}
	if v.Flags&dataplane.VLANReorderHdr != 0 {
		flags = append(flags, "REORDER_HDR")
	}
	w.strings("flags", "", flags)
	w.text("<" + strings.Join(flags, ",") + "> ")
	w.closeObject()
	w.text("\n")
}

// vlanSpec are the words after `link add NAME` that make VLAN link l
// again, before its type's: its parent.
func vlanSpec(l *dataplane.Link) []string {
	v, ok := l.VLAN()
	if !ok || v.Parent == nil {
		return nil
	}
	return []string{"link", v.Parent.Name}
}

// parentMAC reports whether l is a VLAN link with its parent's MAC (made
// so when none is given).
func parentMAC(l *dataplane.Link) bool {
	v, ok := l.VLAN()
	return ok && v.Parent != nil && bytes.Equal(v.Parent.Hardware().HardwareAddr(), l.Hardware().HardwareAddr())
}

// parentsFirst orders links as save writes them: by index, each VLAN
// link right after its parent (and the VLAN links made before it): the
// order a router made from the saved lines brings them up in, so that
// their routes list alike.
func parentsFirst(links []*dataplane.Link) []*dataplane.Link {
	kids := map[*dataplane.Link][]*dataplane.Link{}
	var roots []*dataplane.Link
	for _, l := range links {
		if v, ok := l.VLAN(); ok && v.Parent != nil {
			kids[v.Parent] = append(kids[v.Parent], l)
		} else {
			roots = append(roots, l)
		}
	}
	out := make([]*dataplane.Link, 0, len(links))
	var add func(l *dataplane.Link)
	add = func(l *dataplane.Link) {
		out = append(out, l)
		for _, k := range kids[l] {
			add(k)
		}
	}
	for _, l := range roots {
		add(l)
	}
	return out
}
