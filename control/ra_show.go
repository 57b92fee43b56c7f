package control

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"urouter/dataplane"
)

// Showing Router Advertisements: ra show, each Ethernet link's
// configuration.

// shownLinks parses ra show's `[dev] NAME`: the links to show, the one
// named or all.
func (s *Session) shownLinks(args [][]byte) ([]*dataplane.Link, *cmdErr) {
	var only *dataplane.Link
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w, err := ws.valueAfter(args[ws.i], "dev")
		if err != nil {
			return nil, err
		}
		if only = s.r.Links.ByName(str(w)); only == nil {
			return nil, &cmdErr{msg: fmt.Sprintf("Device \"%s\" does not exist.", w), code: 1}
		}
	}
	if only != nil {
		return []*dataplane.Link{only}, nil
	}
	return s.r.Links.All(), nil
}

func (s *Session) raShow(args [][]byte) *cmdErr {
	links, err := s.shownLinks(args)
	if err != nil {
		return err
	}
	secs := func(d time.Duration) string {
		if d >= time.Duration(1<<32-1)*time.Second {
			return "infinity"
		}
		return strconv.FormatInt(int64(d/time.Second), 10)
	}
	onoff := map[bool]string{true: "on", false: "off"}
	for _, l := range links {
		c, ok := l.RA()
		if !ok {
			continue
		}
		pref := map[int8]string{-1: "low", 0: "medium", 1: "high"}[c.Preference]
		fmt.Fprintf(s.out, "ra set dev %s %s max-interval %s min-interval %s lifetime %s preference %s hoplimit %d mtu %d managed %s other %s",
			l.Name, onoff[c.Enabled], secs(c.MaxInterval), secs(c.MinInterval), secs(c.Lifetime), pref, c.HopLimit, c.MTU,
			onoff[c.Managed], onoff[c.Other])
		if len(c.RDNSS) > 0 {
			var as []string
			for _, a := range c.RDNSS {
				as = append(as, a.String())
			}
			fmt.Fprintf(s.out, " rdnss %s rdnss-lifetime %s", strings.Join(as, ","), secs(c.RDNSSLifetime))
		}
		s.out.WriteByte('\n')
		for _, p := range c.Prefixes {
			fmt.Fprintf(s.out, "ra prefix add %s dev %s valid %s preferred %s", p.Prefix, l.Name, secs(p.Valid), secs(p.Preferred))
			if !p.OnLink {
				s.out.WriteString(" no-onlink")
			}
			if !p.Autonomous {
				s.out.WriteString(" no-autonomous")
			}
			s.out.WriteByte('\n')
		}
	}
	return nil
}
