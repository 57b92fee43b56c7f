package control

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"urouter/dataplane"
	"urouter/dataplane/port"
)

// The link object: ip link { add NAME type { dummy | tun ... } | set NAME
// up|down|mtu N | del NAME | show [NAME] }. What a link is and shows comes
// from its port.Hardware; nothing here depends on its kind.

func linkUsage() *cmdErr {
	return parseErr("Usage: ip link add NAME [ index IDX ] type dummy\n" +
		"       ip link add NAME type tun [ mtu MTU ] [ queues N ] [ netns NS ] [ gso { on | off } ]\n" +
		"       ip link add NAME type tap [ address LLADDR ] [ mtu MTU ] [ queues N ] [ netns NS ]\n" +
		"       ip link add NAME type host dev IFACE [ address LLADDR ]\n" +
		"       ip link add link DEVICE name NAME type vlan id VLANID [ protocol { 802.1Q | 802.1ad } ]\n" +
		"       ip link set { DEVICE | dev DEVICE } [ up | down ] [ mtu MTU ]\n" +
		"       ip link delete { DEVICE | dev DEVICE }\n" +
		"       ip link show [ DEVICE ]")
}

func (s *Session) linkCmd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.linkShow(nil)
	}
	w, rest := args[0], args[1:]
	switch { // do_iplink's order
	case matches(w, "add"):
		return s.linkAdd(rest)
	case matches(w, "set") || matches(w, "change"):
		return s.linkSet(rest)
	case matches(w, "replace"):
		return unsupported(w)
	case matches(w, "delete"):
		return s.linkDel(rest)
	case matches(w, "show") || matches(w, "lst") || matches(w, "list"):
		return s.linkShow(rest)
	case matches(w, "xstats") || matches(w, "afstats") || matches(w, "property"):
		return unsupported(w)
	case matches(w, "help"):
		return linkUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip link help\".", w)
}

func (s *Session) linkAdd(args [][]byte) *cmdErr {
	a, err := parseLinkArgs(args)
	if err != nil {
		return err
	}
	if err := s.checkMaster(a); err != nil {
		return err
	}
	var parent *dataplane.Link // `link PARENT`, found before the type's words are read, as iplink_parse does
	if a.link != nil {
		if parent = s.r.Links.ByName(str(a.link)); parent == nil {
			return nodev(a.link)
		}
	}
	k, err := parseLinkKind(a)
	if err != nil {
		return err
	}
	var l *dataplane.Link
	var lerr error
	switch {
	case k.tun != nil:
		k.tun.MTU = k.mtu
		l, lerr = s.r.AddTUNAt(string(a.name), a.index, *k.tun)
	case k.eth != nil:
		l, lerr = s.addEther(a, k.eth, k.mtu)
	case k.vlan != nil:
		var err *cmdErr
		if l, err = s.addVLAN(a, parent, k.vlan, k.mtu); err != nil {
			return err
		}
	case k.vrf:
		var err *cmdErr
		if l, err = s.addVRF(a, k.vrfTable, k.vrfTableSet, k.mtu); err != nil {
			return err
		}
	default:
		l, lerr = s.r.AddDummyAt(string(a.name), a.index, k.mtu, k.dummyMAC)
	}
	if lerr != nil {
		return linkErr(lerr)
	}
	// The journal says what the router chose, its index and a random MAC
	// (not a host link's, which is its interface's): a replay must make
	// the same, as save says them. A VLAN link's is its parent's.
	if a.index == 0 {
		s.did.linkIndex = l.Index
	}
	if mac := l.Hardware().HardwareAddr(); a.address == nil && mac != nil && (k.eth == nil || !k.eth.host) && k.vlan == nil {
		s.did.linkMAC = mac
	}
	if a.set && a.up {
		if err := s.r.SetUp(l, true); err != nil {
			return linkErr(err)
		}
	}
	if err := s.setMaster(l, a); err != nil {
		// as rtnl_newlink_create: a master refused unregisters the link
		_ = s.r.DeleteLink(l) // just made, it goes as it came
		return err
	}
	return nil
}

// linkKind is what `link add` makes, from its type's words: a TUN's
// options, an Ethernet link's, or a dummy's MAC; and its MTU.
type linkKind struct {
	tun      *port.TUNOptions
	eth      *etherArgs
	vlan     *vlanArgs
	dummyMAC []byte
	mtu      int
	// vrf: a VRF of vrfTable (vrfTableSet: one was given)
	vrf         bool
	vrfTable    uint32
	vrfTableSet bool
}

// parseLinkKind checks link add's name, type and MTU, in ip's order.
func parseLinkKind(a *linkArgs) (k linkKind, err *cmdErr) {
	if a.typ == nil {
		return k, &cmdErr{msg: "Not enough information: \"type\" argument is required", code: 1}
	}
	if a.name == nil {
		return k, &cmdErr{msg: "Not enough information: \"dev\" argument is required.", code: 255}
	}
	if len(a.name) == 0 || len(a.name) > 15 || strings.ContainsAny(str(a.name), "/ \t:") {
		return k, invarg("\"name\" not a valid ifname\n", a.name)
	}
	switch str(a.typ) {
	case "dummy":
		if len(a.typArgs) > 0 {
			return k, garbageArgs(a.typArgs[0])
		}
		if a.address != nil {
			if k.dummyMAC, err = parseLLAddr(a.address); err != nil {
				return k, err
			}
			if len(k.dummyMAC) != 6 {
				return k, &cmdErr{msg: fmt.Sprintf("Invalid address length %d - must be 6 bytes", len(k.dummyMAC)), code: 1}
			}
		}
	case "tun":
		k.tun, err = parseTUNArgs(a)
	case "tap", "host":
		k.eth, err = parseEtherArgs(a)
	case "vlan":
		k.vlan, err = parseVLANArgs(a)
	case "vrf":
		k.vrf = true
		k.vrfTable, k.vrfTableSet, err = parseVRFArgs(a)
	default:
		return k, extack("Unknown device type.")
	}
	if err != nil {
		return k, err
	}
	if a.address != nil && k.tun != nil {
		return k, extack("a TUN link has no link-layer address")
	}
	k.mtu = 1500
	if k.vlan != nil {
		k.mtu = 0 // the parent's
	}
	if k.vrf {
		k.mtu = 0 // 65575, vrf_setup's
	}
	if a.mtu >= 0 {
		if a.mtu < dataplane.MinMTU {
			return k, extack(dataplane.ErrMTU.Error())
		}
		k.mtu = a.mtu
	}
	return k, nil
}

func linkErr(err error) *cmdErr {
	if errors.Is(err, dataplane.ErrLinkExists) || errors.Is(err, dataplane.ErrIndexTaken) {
		return answers(syscall.EEXIST)
	}
	if errno, ok := err.(syscall.Errno); ok {
		return answers(errno) // the router's own refusal as a bare errno (vlan_dev_open's ENETDOWN)
	}
	return extack(err.Error()) // a device's error, its context said
}

// namedLink parses the arguments of link set and del, and finds the link
// they name.
func (s *Session) namedLink(args [][]byte) (*linkArgs, *dataplane.Link, *cmdErr) {
	a, err := parseLinkArgs(args)
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkMaster(a); err != nil {
		return nil, nil, err
	}
	if a.dev == nil {
		return nil, nil, parseErr("Not enough information: \"dev\" argument is required.")
	}
	l, err := s.link(a.dev)
	if err != nil {
		return nil, nil, err
	}
	return a, l, nil
}

func (s *Session) linkSet(args [][]byte) *cmdErr {
	a, l, err := s.namedLink(args)
	if err != nil {
		return err
	}
	if a.index != 0 {
		return parseErr("index can be used only when creating devices or when moving device to another netns.")
	}
	kind := dataplane.MirrorTUN
	switch {
	case a.typ == nil:
		if m := l.Mirror(); m != nil && m.Name == string(a.mirror) {
			kind = m.Kind // unsaid, as ip link set leaves what it is not told
		}
	case a.mirror == nil || is(a.mirror, "none") || len(a.typArgs) > 0:
		return extack("Operation not supported.")
	case is(a.typ, dataplane.MirrorTUN), is(a.typ, dataplane.MirrorTAP):
		kind = string(a.typ)
	default:
		return invarg("mirror type is \"tun\" or \"tap\"", a.typ)
	}
	if a.address != nil {
		hw, err := parseLLAddr(a.address)
		if err != nil {
			return err
		}
		if len(hw) != 6 { // iplink_parse's check against the link's own length
			return &cmdErr{msg: fmt.Sprintf("Invalid address length %d - must be 6 bytes", len(hw)), code: 1}
		}
		return unsupported([]byte("address")) // a link keeps the address it was made with
	}
	if string(a.name) != string(a.dev) {
		return unsupported([]byte("name")) // links are not renamed
	}
	if a.link != nil {
		return unsupported([]byte("link")) // a VLAN link keeps its parent
	}
	if a.mirror != nil && !validIfname(a.mirror) {
		return invarg("\"mirror\" not a valid ifname", a.mirror)
	}
	if a.mtu >= 0 {
		if err := s.r.SetMTU(l, a.mtu); err != nil {
			return linkErr(err)
		}
	}
	if a.set {
		if err := s.r.SetUp(l, a.up); err != nil {
			return linkErr(err)
		}
	}
	if err := s.setMaster(l, a); err != nil {
		return err
	}
	switch {
	case a.mirror == nil:
	case is(a.mirror, "none"):
		if err := s.r.ClearMirror(l); err != nil {
			return extack(err.Error())
		}
	default:
		if err := s.r.SetMirror(l, string(a.mirror), kind); err != nil {
			return extack(fmt.Sprintf("mirror %s: %v", a.mirror, err))
		}
	}
	return nil
}

func (s *Session) linkDel(args [][]byte) *cmdErr {
	_, l, err := s.namedLink(args)
	if err != nil {
		return err
	}
	if derr := s.r.DeleteLink(l); derr != nil {
		return rejected(derr)
	}
	return nil
}

func (s *Session) addEther(a *linkArgs, e *etherArgs, mtu int) (*dataplane.Link, error) {
	eo := dataplane.EtherOptions{MAC: e.tap.MAC, Index: a.index}
	if !e.host {
		e.tap.MTU = mtu
		return s.r.AddTAP(string(a.name), e.tap, eo)
	}
	l, err := s.r.AddHost(string(a.name), e.dev, eo)
	if err == nil && e.mtuSet {
		err = s.r.SetMTU(l, mtu)
	}
	return l, err
}
