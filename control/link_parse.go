package control

import (
	"fmt"
	"net"
	"strconv"
	"sync"

	"urouter/dataplane"
	"urouter/dataplane/port"
)

// Parsing link commands: the words of ip link add and set, and of each
// kind of link.

// linkArgs is what iplink_parse reads.
type linkArgs struct {
	name      []byte // the new link's name, or the new name of one set
	dev       []byte // the link set; `name X` alone names it too
	devIsName bool
	typ       []byte
	typArgs   [][]byte
	up, set   bool
	mtu       int
	address   []byte // the link-layer address, `address LLADDR`
	mirror    []byte // `mirror KNAME` or `mirror none`
	link      []byte // `link PARENT`: a VLAN link's parent
	index     int32  // `index IDX`; 0 for none
	// master is `master NAME` or `vrf NAME` (masterVRF), nomaster
	// `nomaster`: the last of them said
	master    []byte
	masterVRF bool
	nomaster  bool
}

const (
	lkUp = iota + 1
	lkDown
	lkName
	lkMtu
	lkMirror
	lkAddress
	lkType
	lkIndex
	lkLink
	lkMaster
	lkVRF
	lkNomaster
	lkLacks // an attribute the router's links lack
)

// linkWords() are iplink_parse's keywords, in its order, with the
// router's own mirror.
var linkWords = sync.OnceValue(func() keywords {
	l := []kw{{"up", false, lkUp}, {"down", false, lkDown}, {"name", false, lkName}, {"mirror", false, lkMirror}}
	for _, k := range []struct {
		w      string
		abbrev bool
		id     int
	}{
		{"index", false, lkIndex}, {"link", true, lkLink}, {"address", true, lkAddress},
		{"broadcast", true, lkLacks}, {"brd", false, lkLacks}, {"txqueuelen", true, lkLacks},
		{"qlen", false, lkLacks}, {"txqlen", true, lkLacks}, {"mtu", false, lkMtu},
		{"xdpgeneric", false, lkLacks}, {"xdpdrv", false, lkLacks}, {"xdpoffload", false, lkLacks},
		{"xdp", false, lkLacks}, {"netns", false, lkLacks}, {"multicast", false, lkLacks},
		{"allmulticast", false, lkLacks}, {"promisc", false, lkLacks}, {"trailers", false, lkLacks},
		{"arp", false, lkLacks}, {"carrier", false, lkLacks}, {"vf", false, lkLacks},
		{"master", true, lkMaster}, {"vrf", false, lkVRF}, {"nomaster", true, lkNomaster},
		{"dynamic", true, lkLacks}, {"type", true, lkType}, {"alias", true, lkLacks},
		{"group", false, lkLacks}, {"mode", false, lkLacks}, {"state", false, lkLacks},
		{"numtxqueues", true, lkLacks}, {"numrxqueues", true, lkLacks}, {"addrgenmode", true, lkLacks},
		{"link-netns", true, lkLacks}, {"link-netnsid", true, lkLacks}, {"protodown", false, lkLacks},
		{"protodown_reason", false, lkLacks}, {"gso_max_size", false, lkLacks},
		{"gso_max_segs", false, lkLacks}, {"gro_max_size", false, lkLacks}, {"parentdev", false, lkLacks},
	} {
		l = append(l, kw{k.w, k.abbrev, k.id})
	}
	return newKeywords(l)
})

func parseLinkArgs(args [][]byte) (*linkArgs, *cmdErr) {
	a := &linkArgs{mtu: -1}
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		k := linkWords().of(w)
		switch k {
		case lkUp, lkDown:
			a.up, a.set = k == lkUp, true
			continue
		case lkNomaster:
			a.master, a.nomaster = nil, true
			continue
		case lkLacks:
			return nil, unsupported(w)
		case 0:
			if err := a.parseDev(&ws, w); err != nil {
				return nil, err
			}
			continue
		}
		v, err := ws.next()
		if err != nil {
			return nil, err
		}
		switch k {
		case lkName:
			if a.name != nil {
				return nil, duparg("name", v)
			}
			a.name = v
			if a.dev == nil {
				a.dev, a.devIsName = v, true
			}
		case lkMtu:
			if a.mtu >= 0 {
				return nil, duparg("mtu", v)
			}
			if a.mtu, err = parseMTU(v); err != nil {
				return nil, err
			}
		case lkMirror:
			if a.mirror != nil {
				return nil, duparg("mirror", v)
			}
			a.mirror = v
		case lkAddress:
			a.address = v
		case lkLink:
			a.link = v
		case lkMaster, lkVRF:
			a.master, a.masterVRF, a.nomaster = v, k == lkVRF, false
		case lkIndex:
			n, err := strconv.ParseInt(str(v), 0, 32)
			if err != nil || n <= 0 {
				return nil, invarg("Invalid \"index\" value", v)
			}
			if n > dataplane.MaxIndex {
				return nil, extack(fmt.Sprintf("index %d is past the last this router gives, %d", n, dataplane.MaxIndex))
			}
			a.index = int32(n)
		case lkType:
			a.typ = v
			a.typArgs = args[ws.i+1:]
			a.names()
			return a, nil
		}
	}
	a.names()
	return a, nil
}

// parseDev reads the word that is no keyword: `[dev] NAME`, once.
func (a *linkArgs) parseDev(ws *argv, w []byte) *cmdErr {
	w, err := ws.valueAfter(w, "dev")
	if err != nil {
		return err
	}
	if matches(w, "help") {
		return parseErr("Usage: ip link { add | set | delete | show } ...")
	}
	if a.dev != nil && !a.devIsName {
		return parseErr("Error: either \"dev\" is duplicate, or \"%s\" is a garbage.", w)
	}
	a.dev, a.devIsName = w, false
	return nil
}

// names completes name and dev from each other, as iplink_parse does
// after its loop: `link add dev X` names the new link X, `link set name
// X` sets the link X.
func (a *linkArgs) names() {
	if a.name == nil {
		a.name = a.dev
	} else if a.dev == nil {
		a.dev = a.name
	}
}

// parseTUNArgs reads `type tun [mtu N] [queues N] [netns NS] [gso on|off]`.
func parseTUNArgs(a *linkArgs) (*port.TUNOptions, *cmdErr) {
	o := &port.TUNOptions{Queues: 1}
	err := pairs(a.typArgs, func(w, v []byte) *cmdErr {
		var err *cmdErr
		switch {
		case is(w, "mtu"):
			a.mtu, err = parseMTU(v)
		case is(w, "queues"):
			o.Queues, err = parseQueues(v)
		case is(w, "netns"):
			o.Netns = string(v)
		case is(w, "gso"):
			switch str(v) {
			case "on":
			case "off":
				o.NoGSO = true
			default:
				return invarg("\"gso\" is on or off\n", v)
			}
		default:
			return garbageArgs(w)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// parseQueues reads the value of `queues`.
func parseQueues(v []byte) (int, *cmdErr) {
	n, err := strconv.Atoi(str(v))
	if err != nil || n < 1 || n > 64 {
		return 0, invarg("\"queues\" must be 1 to 64\n", v)
	}
	return n, nil
}

// parseMTU reads the value of `mtu`.
func parseMTU(v []byte) (int, *cmdErr) {
	n, err := strconv.Atoi(str(v))
	if err != nil || n < 0 {
		return 0, invarg("Invalid \"mtu\" value\n", v)
	}
	return n, nil
}

// Ethernet links: `link add NAME type tap [address LLADDR] [mtu N]
// [queues N] [netns NS]` (a TAP of the router's) and `link add NAME type
// host dev IFACE [address LLADDR]` (AF_PACKET on an existing interface).
type etherArgs struct {
	host   bool
	dev    string
	tap    port.TAPOptions
	mtuSet bool
}

func parseEtherArgs(a *linkArgs) (*etherArgs, *cmdErr) {
	e := &etherArgs{host: str(a.typ) == "host", tap: port.TAPOptions{Queues: 1}}
	err := pairs(a.typArgs, func(w, v []byte) *cmdErr {
		var err *cmdErr
		switch {
		case is(w, "address"):
			a.address = v
		case is(w, "dev") && e.host:
			e.dev = string(v)
		case is(w, "mtu"):
			a.mtu, err = parseMTU(v)
		case is(w, "queues") && !e.host:
			e.tap.Queues, err = parseQueues(v)
		case is(w, "netns") && !e.host:
			e.tap.Netns = string(v)
		default:
			return garbageArgs(w)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if e.host && e.dev == "" {
		return nil, &cmdErr{msg: "Not enough information: \"dev\" of the host interface is required.", code: 255}
	}
	if a.address != nil {
		mac, err := net.ParseMAC(str(a.address))
		if err != nil || len(mac) != 6 {
			return nil, &cmdErr{msg: "\"" + str(a.address) + "\" is invalid lladdr.", code: 1}
		}
		if mac[0]&1 != 0 {
			return nil, extack("a multicast address is no link's own")
		}
		e.tap.MAC = mac
	}
	e.mtuSet = a.mtu >= 0
	return e, nil
}
