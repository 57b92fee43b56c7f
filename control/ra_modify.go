package control

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"urouter/dataplane"
	"urouter/ndisc"
)

// Router Advertisements, urouter's own object (iproute2 has none; the
// words are radvd's and FRR's):
//
//	ra set dev DEV [ on | off ] [ max-interval S ] [ min-interval S ]
//	       [ lifetime S ] [ preference { low | medium | high } ] [ mtu N ]
//	       [ hoplimit N ] [ managed { on | off } ] [ other { on | off } ]
//	       [ rdnss ADDR[,ADDR...] | rdnss none ] [ rdnss-lifetime S ]
//	ra prefix { add | del } PREFIX dev DEV [ valid S ] [ preferred S ]
//	       [ no-onlink ] [ no-autonomous ]
//	ra show [ dev DEV ]

func (s *Session) raCmd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.raShow(nil)
	}
	w, rest := args[0], args[1:]
	switch {
	case is(w, "set"):
		return s.raSet(rest)
	case is(w, "prefix"):
		return s.raPrefix(rest)
	case matches(w, "show") || matches(w, "list"):
		return s.raShow(rest)
	case matches(w, "help"):
		return raUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"urouter ra help\".", w)
}

func raUsage() *cmdErr {
	return parseErr("Usage: urouter ra set dev DEV [ on | off ] [ max-interval S ] [ min-interval S ] [ lifetime S ]\n" +
		"              [ preference { low | medium | high } ] [ mtu N ] [ hoplimit N ]\n" +
		"              [ managed { on | off } ] [ other { on | off } ]\n" +
		"              [ rdnss ADDR[,ADDR...] | rdnss none ] [ rdnss-lifetime S ]\n" +
		"       urouter ra prefix { add | del } PREFIX dev DEV [ valid S ] [ preferred S ] [ no-onlink ] [ no-autonomous ]\n" +
		"       urouter ra show [ dev DEV ]")
}

// raLink finds the `dev DEV` of args, an Ethernet link.
func (s *Session) raLink(dev []byte) (*dataplane.Link, ndisc.RAConfig, *cmdErr) {
	if dev == nil {
		return nil, ndisc.RAConfig{}, &cmdErr{msg: "Not enough information: \"dev\" argument is required.", code: 255}
	}
	l, err := s.link(dev)
	if err != nil {
		return nil, ndisc.RAConfig{}, err
	}
	c, ok := l.RA()
	if !ok {
		return nil, c, extack(fmt.Sprintf("%s has no neighbour discovery (not an Ethernet link)", l.Name))
	}
	return l, c, nil
}

// parseSeconds reads a time in seconds, or "infinity".
func parseSeconds(key string, v []byte) (time.Duration, *cmdErr) {
	if is(v, "infinity") {
		return time.Duration(1<<32-1) * time.Second, nil
	}
	n, err := strconv.ParseUint(str(v), 10, 32)
	if err != nil {
		return 0, badValue(key, v)
	}
	return time.Duration(n) * time.Second, nil
}

func onOff(key string, v []byte) (bool, *cmdErr) {
	switch {
	case is(v, "on"):
		return true, nil
	case is(v, "off"):
		return false, nil
	}
	return false, invarg(fmt.Sprintf("\"%s\" is on or off\n", key), v)
}

// raEdit is one change `ra set` makes to a link's RA configuration,
// checked against the configuration it changes.
type raEdit func(c *ndisc.RAConfig) *cmdErr

func (s *Session) raSet(args [][]byte) *cmdErr {
	var dev []byte
	var edits []raEdit
	lifeSet, maxSet := false, false
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		if is(w, "on") || is(w, "off") {
			on := is(w, "on")
			edits = append(edits, func(c *ndisc.RAConfig) *cmdErr { c.Enabled = on; return nil })
			continue
		}
		v, err := ws.next()
		if err != nil {
			return err
		}
		if is(w, "dev") {
			dev = v
			continue
		}
		e, err := raEditOf(w, v)
		if err != nil {
			return err
		}
		maxSet = maxSet || is(w, "max-interval")
		lifeSet = lifeSet || is(w, "lifetime")
		edits = append(edits, e)
	}
	l, c, err := s.raLink(dev)
	if err != nil {
		return err
	}
	for _, e := range edits {
		if err := e(&c); err != nil {
			return err
		}
	}
	if maxSet && !lifeSet {
		c.Lifetime = min(3*c.MaxInterval, 9000*time.Second)
	}
	if c.MinInterval > c.MaxInterval*3/4 || c.MinInterval < 3*time.Second {
		return extack("min-interval must be 3 s to 3/4 of max-interval")
	}
	l.SetRA(c)
	return nil
}

// raEditOf is the edit of `KEY VALUE`.
func raEditOf(w, v []byte) (raEdit, *cmdErr) {
	key := string(w)
	switch key {
	case "max-interval", "min-interval", "lifetime", "rdnss-lifetime":
		return raInterval(key, v)
	case "preference":
		prefs := map[string]int8{"low": -1, "medium": 0, "high": 1}
		p, ok := prefs[str(v)]
		if !ok {
			return nil, invarg("\"preference\" is low, medium or high\n", v)
		}
		return func(c *ndisc.RAConfig) *cmdErr { c.Preference = p; return nil }, nil
	case "mtu", "hoplimit":
		n, perr := strconv.ParseUint(str(v), 10, 32)
		if perr != nil || key == "hoplimit" && n > 255 || key == "mtu" && n != 0 && n < dataplane.MinMTU {
			return nil, badValue(key, v)
		}
		return func(c *ndisc.RAConfig) *cmdErr {
			if key == "mtu" {
				c.MTU = uint32(n)
			} else {
				c.HopLimit = uint8(n)
			}
			return nil
		}, nil
	case "managed", "other":
		on, err := onOff(key, v)
		if err != nil {
			return nil, err
		}
		return func(c *ndisc.RAConfig) *cmdErr {
			if key == "managed" {
				c.Managed = on
			} else {
				c.Other = on
			}
			return nil
		}, nil
	case "rdnss":
		var as []netip.Addr
		if !is(v, "none") {
			for _, f := range strings.Split(str(v), ",") {
				a, err := parseAddr([]byte(f))
				if err != nil {
					return nil, err
				}
				as = append(as, a)
			}
		}
		return func(c *ndisc.RAConfig) *cmdErr { c.RDNSS = as; return nil }, nil
	}
	return nil, ownGarbage("ra", w)
}

// raInterval is the edit of one of the intervals, in seconds.
func raInterval(key string, v []byte) (raEdit, *cmdErr) {
	d, err := parseSeconds(key, v)
	if err != nil {
		return nil, err
	}
	return func(c *ndisc.RAConfig) *cmdErr {
		switch key {
		case "max-interval":
			if d < 4*time.Second || d > 1800*time.Second {
				return badValue(key, v)
			}
			c.MaxInterval, c.MinInterval = d, max(d/3, 3*time.Second)
		case "min-interval":
			c.MinInterval = d
		case "lifetime":
			if d > 9000*time.Second {
				return badValue(key, v)
			}
			c.Lifetime = d
		default:
			c.RDNSSLifetime = d
		}
		return nil
	}, nil
}

func (s *Session) raPrefix(args [][]byte) *cmdErr {
	if len(args) == 0 || !is(args[0], "add") && !is(args[0], "del") {
		return parseErr("Usage: urouter ra prefix { add | del } PREFIX dev DEV [ valid S ] [ preferred S ] [ no-onlink ] [ no-autonomous ]")
	}
	del := is(args[0], "del")
	args = args[1:]
	var dev []byte
	var p ndisc.RAPrefix
	set := false
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch {
		case is(w, "no-onlink"):
			p.OnLink = false
		case is(w, "no-autonomous"):
			p.Autonomous = false
		case is(w, "dev"), is(w, "valid"), is(w, "preferred"):
			v, err := ws.next()
			if err != nil {
				return err
			}
			switch {
			case is(w, "dev"):
				dev = v
			case !set:
				return incomplete()
			case is(w, "valid"):
				if p.Valid, err = parseSeconds("valid", v); err != nil {
					return err
				}
			default:
				if p.Preferred, err = parseSeconds("preferred", v); err != nil {
					return err
				}
			}
		default:
			if set {
				return duparg("prefix", w)
			}
			pfx, err := parsePrefix(w)
			if err != nil {
				return err
			}
			if pfx.Masked() != pfx {
				return extack("the prefix has host bits set")
			}
			p, set = ndisc.DefaultPrefix(pfx), true
		}
	}
	if !set {
		return incomplete()
	}
	if p.Preferred > p.Valid {
		return extack("preferred lifetime is longer than the valid lifetime")
	}
	l, c, err := s.raLink(dev)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(c.Prefixes, func(x ndisc.RAPrefix) bool { return x.Prefix == p.Prefix })
	switch {
	case del && i < 0:
		return answers(syscall.ENOENT)
	case del:
		c.Prefixes = slices.Delete(slices.Clone(c.Prefixes), i, i+1)
	case i >= 0:
		c.Prefixes = slices.Clone(c.Prefixes)
		c.Prefixes[i] = p
	default:
		c.Prefixes = append(slices.Clone(c.Prefixes), p)
	}
	l.SetRA(c)
	return nil
}
