package control

import (
	"net"
	"strconv"
	"urouter/dataplane/port"
)

// Parsing link commands: the words of ip link add and set, and of each
// kind of link.

// linkArgs is what iplink_parse reads.
type linkArgs struct {
	name    []byte
	typ     []byte
	typArgs [][]byte
	up, set bool
	mtu     int
	address []byte // the link-layer address, `address LLADDR`
	mirror  []byte // `mirror KNAME` or `mirror none`
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
		case is(w, "mirror"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			if a.mirror != nil {
				return nil, duparg("mirror", v)
			}
			a.mirror = v
		case matches(w, "address"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			a.address = v
		case matches(w, "type"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			a.typ = v
			a.typArgs = args[ws.i+1:]
			return a, nil
		default:
			w, err := ws.valueAfter(w, "dev")
			if err != nil {
				return nil, err
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
