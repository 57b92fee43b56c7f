package control

import (
	"net"

	"urouter/dataplane"
	"urouter/dataplane/port"
)

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

func (s *session) addEther(a *linkArgs, e *etherArgs, mtu int) (*dataplane.Link, error) {
	eo := dataplane.EtherOptions{MAC: e.tap.MAC}
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
