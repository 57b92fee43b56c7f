package control

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"urouter/ndisc"
)

// apply's commands for one key (apply_plan.go): what changes it from
// what the router says (have) to what the target says (want), and what
// undoes a line.

// change is the commands that take a key's lines from have to want.
func (p *planner) change(have, want []cfgLine) []string {
	if want[0].kind == "mirror" {
		return append(p.mirrorFrom(want[0]), want[0].text)
	}
	if len(have) == 0 {
		out := make([]string, len(want))
		for i, w := range want {
			out[i] = w.text
			if w.kind == "link" {
				out[i] = p.free.norm(w.key, w.text, false) // what the router chooses, it chooses here too
			}
		}
		return out
	}
	h, w := have[0], want[0]
	switch w.kind {
	case "link": // the same but for its MTU (remake made the others again)
		return []string{"link set " + w.key + " mtu " + wordAfter(strings.Fields(w.text), "mtu")}
	case "address":
		if wordAfter(strings.Fields(w.text), "metric") == "" {
			// a metric taken away: Linux's replace keeps it (metric 0
			// says no change), so the address goes and comes again
			return append(p.undo(h), w.text)
		}
		return []string{strings.Replace(w.text, "address add ", "address replace ", 1)}
	case "ra":
		return []string{raFull(w.text)}
	case "raprefix":
		return append(p.undo(h), w.text)
	case "nexthop":
		if strings.Contains(h.text, " group ") == strings.Contains(w.text, " group ") {
			return []string{strings.Replace(w.text, "nexthop add ", "nexthop replace ", 1)}
		}
		return []string{"nexthop del id " + w.key, w.text}
	case "route":
		if len(have) == 1 && len(want) == 1 {
			return []string{strings.Replace(w.text, "route add ", "route replace ", 1)} // never missing
		}
		var out []string
		for _, x := range have {
			out = append(out, p.undo(x)...)
		}
		return append(out, texts(want)...)
	case "neigh":
		return []string{strings.Replace(w.text, "neigh add ", "neigh replace ", 1)}
	}
	return texts(want) // a knob, a state, a master: said again
}

// mirrorFrom is the commands that free a mirror's kernel name another
// link's mirror has, before line w gives it its link.
func (p *planner) mirrorFrom(w cfgLine) []string {
	kname := wordAfter(strings.Fields(w.text), "mirror")
	for _, l := range p.s.r.Links.All() {
		if m := l.Mirror(); m != nil && m.Name == kname && l.Name != w.key {
			return []string{"link set " + l.Name + " mirror none"}
		}
	}
	return nil
}

// undo is the commands that take back line c.
func (p *planner) undo(c cfgLine) []string {
	w := strings.Fields(strings.TrimPrefix(c.text, "-6 "))
	switch c.kind {
	case "sysctl":
		d, err := p.s.r.SysctlDefault(c.key)
		if err != nil {
			return nil // a link's, gone with it
		}
		return []string{"sysctl -q -w " + c.key + "=" + d}
	case "link":
		return []string{"link del " + c.key}
	case "linkmtu":
		return []string{"link set " + c.key + " mtu 65536"}
	case "linkstate":
		return []string{"link set " + c.key + map[bool]string{true: " down", false: " up"}[w[3] == "up"]}
	case "mirror":
		return []string{"link set " + c.key + " mirror none"}
	case "master":
		return []string{"link set " + c.key + " nomaster"}
	case "address":
		return []string{"address del " + w[2] + " dev " + w[4]}
	case "addrdel":
		return []string{"address add " + w[2] + " dev " + w[4]}
	case "ra":
		return []string{raFull("ra set dev " + c.key)}
	case "raprefix":
		return []string{"ra prefix del " + w[3] + " dev " + w[5]}
	case "nexthop":
		return []string{"nexthop del id " + c.key}
	case "route":
		return []string{"route del " + dropWords(strings.Join(w[2:], " "), "expires", 1)}
	case "rule":
		return []string{"rule del " + c.key}
	case "ruledel":
		return []string{"rule add " + c.key}
	case "neigh":
		return []string{"neigh del " + w[2] + " dev " + wordAfter(w, "dev")}
	}
	return nil
}

// raFull is an `ra set` line with every setting it leaves at its default
// said: a link's advertisements set to it whole.
func raFull(line string) string {
	w := strings.Fields(line)
	d := ndisc.DefaultRA()
	secs := func(t time.Duration) string { return strconv.FormatInt(int64(t/time.Second), 10) }
	defaults := []struct{ key, words string }{
		{"max-interval", "max-interval " + secs(d.MaxInterval) + " lifetime " + secs(d.Lifetime)},
		{"min-interval", "min-interval " + secs(d.MinInterval)},
		{"preference", "preference medium"},
		{"mtu", "mtu " + strconv.FormatUint(uint64(d.MTU), 10)},
		{"hoplimit", "hoplimit " + strconv.Itoa(int(d.HopLimit))},
		{"managed", "managed off"},
		{"other", "other off"},
		{"rdnss", "rdnss none"},
		{"rdnss-lifetime", "rdnss-lifetime " + secs(d.RDNSSLifetime)},
	}
	for _, x := range defaults {
		if !slices.Contains(w, x.key) {
			w = append(w, x.words)
		}
	}
	if !slices.Contains(w, "on") {
		w = append(w, "off")
	}
	return strings.Join(w, " ")
}

// freeAttrs are the links whose index (index) or MAC (mac) a config left
// to the router: the router keeps those it chose.
type freeAttrs struct{ index, mac map[string]bool }

// freeLinks reads which links config content makes without an index or
// a MAC.
func freeLinks(content []byte) freeAttrs {
	f := freeAttrs{index: map[string]bool{}, mac: map[string]bool{}}
	for line := range strings.Lines(string(content)) {
		args, err := splitLine([]byte(line), nil)
		if err != nil || len(args) < 3 || !matches(args[0], "link") || !matches(args[1], "add") {
			continue
		}
		a, perr := parseLinkArgs(args[2:])
		if perr != nil || a.name == nil {
			continue
		}
		f.index[string(a.name)] = a.index == 0
		f.mac[string(a.name)] = a.address == nil
	}
	return f
}

// norm is link name's save line as compared: without the index and MAC
// the config left to the router, and with mtu too.
func (f freeAttrs) norm(name, text string, noMTU bool) string {
	if f.index[name] {
		text = dropWords(text, "index", 1)
	}
	if f.mac[name] {
		text = dropWords(text, "address", 1)
	}
	if noMTU {
		text = dropWords(text, "mtu", 1)
	}
	return text
}
