package control

import (
	"errors"
	"fmt"
	"syscall"

	"urouter/dataplane"
	"urouter/fib6"
)

// VRF links: `link add NAME type vrf table N` as iproute2's iplink_vrf.c
// reads it and Linux's vrf_newlink refuses it; `link set LINK master
// VRF | vrf VRF | nomaster`; -d's `vrf table N` and a member's
// `vrf_slave table N`; `vrf show` as ipvrf.c prints it.

const vrfHelp = "Usage: ... vrf table TABLEID"

// parseVRFArgs reads vrf_parse_opt's words: `table TABLEID` (a number or
// a table's name), 0 if none is given.
func parseVRFArgs(a *linkArgs) (table uint32, set bool, err *cmdErr) {
	ws := argv{args: a.typArgs}
	for ; ws.i < len(a.typArgs); ws.i++ {
		w := a.typArgs[ws.i]
		switch {
		case matches(w, "table"):
			v, err := ws.next()
			if err != nil {
				return 0, false, err
			}
			t, ok := parseTable(v, false)
			if !ok && !is(v, "0") {
				return 0, false, invarg("invalid table ID\n", v)
			}
			table, set = t, true
		case matches(w, "help"):
			return 0, false, parseErr("%s", vrfHelp)
		default:
			return 0, false, parseErr("vrf: unknown option \"%s\"?\n%s", w, vrfHelp)
		}
	}
	return table, set, nil
}

// addVRF makes VRF link a.name of table (hasTable: one was given),
// refused as vrf_newlink refuses it.
func (s *Session) addVRF(a *linkArgs, table uint32, hasTable bool, mtu int) (*dataplane.Link, *cmdErr) {
	if !hasTable {
		return nil, extack("VRF table id is missing.")
	}
	var mac []byte
	if a.address != nil {
		var err *cmdErr
		if mac, err = parseLLAddr(a.address); err != nil {
			return nil, err
		}
		if len(mac) != 6 || mac[0]&1 != 0 {
			return nil, answers(syscall.EINVAL)
		}
	}
	l, err := s.r.AddVRF(string(a.name), a.index, table, mtu, mac)
	if err != nil {
		return nil, vrfErr(err)
	}
	return l, nil
}

func vrfErr(err error) *cmdErr {
	switch {
	case errors.Is(err, dataplane.ErrLinkExists), errors.Is(err, dataplane.ErrIndexTaken):
		return linkErr(err)
	}
	return rejected(err)
}

// setMaster enslaves l as `master NAME`, `vrf NAME` or `nomaster` asked
// (master nil: none was).
func (s *Session) setMaster(l *dataplane.Link, a *linkArgs) *cmdErr {
	if a.master == nil && !a.nomaster {
		return nil
	}
	var m *dataplane.Link
	if !a.nomaster {
		if m = s.r.Links.ByName(str(a.master)); m == nil {
			return invarg("Device does not exist\n", a.master) // deleted since it was checked
		}
	}
	if err := s.r.SetMaster(l, m); err != nil {
		return rejected(err)
	}
	return nil
}

// checkMaster checks `master NAME` and `vrf NAME` as iplink_parse does:
// the link must exist (and, for vrf, be a VRF).
func (s *Session) checkMaster(a *linkArgs) *cmdErr {
	switch {
	case a.master == nil:
	case a.masterVRF:
		if _, err := s.vrfNamed(a.master, "Not a valid VRF name\n"); err != nil {
			return err
		}
	case s.r.Links.ByName(str(a.master)) == nil:
		return invarg("Device does not exist\n", a.master)
	}
	return nil
}

// vrfNamed is the VRF link named v, or iproute2's refusal with msg
// ("Not a valid VRF name", "Invalid VRF").
func (s *Session) vrfNamed(v []byte, msg string) (*dataplane.Link, *cmdErr) {
	l := s.r.Links.ByName(str(v))
	if l == nil || !l.IsVRF() {
		return nil, invarg(msg, v)
	}
	return l, nil
}

// vrfTable is the table `vrf NAME` names in route commands, or
// iproute2's Invalid VRF.
func (s *Session) vrfTable(v []byte) (uint32, *cmdErr) {
	t, ok := s.tableOfVRF(v)
	if !ok {
		return 0, invarg("Invalid VRF\n", v)
	}
	return t, nil
}

// tableOfVRF is ipvrf_get_table: the table of the VRF named v, or main
// for "default" when no link has that name.
func (s *Session) tableOfVRF(v []byte) (uint32, bool) {
	l := s.r.Links.ByName(str(v))
	switch {
	case l == nil:
		return fib6.TableMain, is(v, "default")
	case !l.IsVRF():
		return 0, false
	}
	_, t := l.L3()
	return t, true
}

// printMaster prints `master NAME` of print_linkinfo, after the qdisc.
func printMaster(w *printer, s *Session, l *dataplane.Link) {
	if m := s.r.Links.ByIndex(l.Master()); m != nil {
		w.str("master", " master %s", m.Name)
	}
}

// printLinkInfo prints -d's linkinfo as print_linktype does: the kind
// and its options (a VLAN link's, a VRF's `vrf table N`), then the
// slave kind and its (a member's `vrf_slave table N`), in one object.
func printLinkInfo(w *printer, l *dataplane.Link) {
	_, vlan := l.VLAN()
	_, t := l.L3()
	if !vlan && t == 0 {
		return
	}
	w.openObject("linkinfo")
	if vlan {
		printVLANDetails(w, l)
	}
	for _, slave := range []bool{false, true} {
		if slave && l.Master() == 0 || !slave && !l.IsVRF() {
			continue
		}
		key, data, kind := "info_kind", "info_data", "    %s "
		if slave {
			key, data, kind = "info_slave_kind", "info_slave_data", "    %s_slave "
		}
		w.str(key, kind, "vrf")
		w.openObject(data)
		w.uint("table", "table %d ", uint64(t))
		w.closeObject()
		w.text("\n")
	}
	w.closeObject()
}

// vrfCmd is `ip vrf` (do_ipvrf): show, the router's VRFs and their
// tables; identify, pids and exec, which run processes in a VRF, are not
// the router's.
func (s *Session) vrfCmd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.vrfShow(nil)
	}
	w := args[0]
	switch {
	case matches(w, "identify"), matches(w, "pids"), matches(w, "exec"):
		return unsupported(w)
	case matches(w, "show"), matches(w, "lst"), matches(w, "list"):
		return s.vrfShow(args[1:])
	case matches(w, "help"):
		return vrfUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip vrf help\".", w)
}

func vrfUsage() *cmdErr {
	return parseErr("Usage:\tip vrf show [NAME] ...\n\tip vrf exec [NAME] cmd ...\n\tip vrf identify [PID]\n\tip vrf pids [NAME]")
}

// vrfShow is ipvrf_show: a name's table alone (text, even with -j), or
// every VRF under a header.
func (s *Session) vrfShow(args [][]byte) *cmdErr {
	switch len(args) {
	case 0:
	case 1:
		t, ok := s.tableOfVRF(args[0])
		if !ok {
			return &cmdErr{msg: "Invalid VRF", code: 1}
		}
		fmt.Fprintf(s.out, "%s %d\n", args[0], t)
		return nil
	default:
		return vrfUsage()
	}
	w := s.newPrinter()
	w.begin()
	w.text(fmt.Sprintf("%-16s  %5s\n-----------------------\n", "Name", "Table"))
	n := 0
	for _, l := range s.r.Links.All() {
		if !l.IsVRF() {
			continue
		}
		n++
		_, t := l.L3()
		w.openObject("")
		if w.json() {
			w.str("name", "", l.Name)
			w.uint("table", "", uint64(t))
		} else {
			fmt.Fprintf(s.out, "%-16s %5d\n", l.Name, t)
		}
		w.closeObject()
	}
	if n == 0 {
		w.text("No VRF has been configured\n")
	}
	w.end()
	return nil
}

// masters writes each member's `link set LINK master VRF`, once every VRF
// is made and before the addresses, which enslaving would take.
func (sv *saver) masters(links []*dataplane.Link) {
	for _, l := range links {
		if m := sv.s.r.Links.ByIndex(l.Master()); m != nil {
			sv.line("link", "link", "set", l.Name, "master", m.Name)
		}
	}
}
