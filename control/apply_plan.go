package control

import (
	"fmt"
	"slices"
	"strings"
)

// apply's plan: the commands that take a router (on paper) from what its
// save says to a target save, each run on paper as it is chosen. Save's
// lines are keyed by what they set (a knob, a link, an address on a
// link, a route's destination, source, table and metric, ...): a key the
// target lacks is undone, one it has differently is changed in place
// where Linux can (replace: the route is never missing), else undone and
// made again. In the order that loads: links that must be made again go
// first (a link's kind or index cannot change), then what is new or
// changed in the target's order, then, last, what the target no longer
// says, in the reverse of save's order (a group before its members, a
// VLAN link before its parent). What one change does to others (a link
// gone takes its routes) is seen in the next round's save.

// cfgLine is one line of a save: its words, and what it sets.
type cfgLine struct {
	text string // without its '\n'
	kind string // sysctl, link, linkmtu, linkstate, mirror, master, address, addrdel, ra, raprefix, nexthop, route, rule, ruledel, neigh
	key  string // what it sets, within its kind
}

func (c cfgLine) id() string { return c.kind + " " + c.key }

// parseConfig keys a save's lines.
func parseConfig(lines []string) []cfgLine {
	out := make([]cfgLine, 0, len(lines))
	var w []string // one line's words, the slice used again
	for _, l := range lines {
		text := strings.TrimSuffix(l, "\n")
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		w = appendFields(w[:0], strings.TrimPrefix(text, "-6 "))
		kind, key := lineKey(w)
		out = append(out, cfgLine{text: text, kind: kind, key: key})
	}
	return out
}

// appendFields appends the words of s (split at spaces, as save writes
// them) to w.
func appendFields(w []string, s string) []string {
	for s != "" {
		word, rest, _ := strings.Cut(s, " ")
		if word != "" {
			w = append(w, word)
		}
		s = rest
	}
	return w
}

// lineKey is what a save line (its words w) sets.
func lineKey(w []string) (kind, key string) {
	at := func(i int) string {
		if i < len(w) {
			return w[i]
		}
		return ""
	}
	switch w[0] + " " + at(1) {
	case "sysctl -q":
		name, _, _ := strings.Cut(at(3), "=")
		return "sysctl", name
	case "link add":
		return "link", at(2)
	case "link set":
		kinds := map[string]string{"mtu": "linkmtu", "up": "linkstate", "down": "linkstate", "mirror": "mirror", "master": "master"}
		return kinds[at(3)], at(2)
	case "address add":
		return "address", at(2) + " " + at(4)
	case "address del":
		return "addrdel", at(2) + " " + at(4)
	case "ra set":
		return "ra", at(3)
	case "ra prefix":
		return "raprefix", at(3) + " " + at(5)
	case "nexthop add":
		return "nexthop", at(3)
	case "route add", "route append":
		return "route", routeKey(w[2:])
	case "rule add":
		return "rule", strings.Join(w[2:], " ")
	case "rule del":
		return "ruledel", strings.Join(w[2:], " ")
	case "neigh add":
		return "neigh", at(2) + " " + wordAfter(w, "dev")
	}
	return "other", strings.Join(w, " ")
}

// wordAfter is the word after the first key in w, "" if none.
func wordAfter(w []string, key string) string {
	if i := slices.Index(w, key); i >= 0 && i+1 < len(w) {
		return w[i+1]
	}
	return ""
}

// routeKey is a route's destination, source, table and metric, from the
// words of its spec as save writes them: [TYPE] DST [from SRC] ... table
// T proto P metric M (an encapsulation's own table comes before).
func routeKey(w []string) string {
	if len(w) == 0 {
		return ""
	}
	dst := w[0]
	if !strings.ContainsAny(dst, ":") && dst != "default" && len(w) > 1 {
		dst = w[1]
	}
	from := ""
	if len(w) > 3 && w[2] == "from" {
		from = w[3]
	} else if len(w) > 2 && w[1] == "from" {
		from = w[2]
	}
	for i := 0; i+5 < len(w); i++ {
		if w[i] == "table" && w[i+2] == "proto" && w[i+4] == "metric" {
			return dst + " from " + from + " table " + w[i+1] + " metric " + w[i+5]
		}
	}
	return dst + " from " + from
}

// planner plans on a paper session s: cmds so far, towards target.
type planner struct {
	s      *Session
	target []cfgLine
	free   freeAttrs
	cmds   []string
	// saved is the paper router's save while no command ran since (a
	// save of a full table is most of a plan's time)
	saved  []string
	parsed []cfgLine // saved, keyed
	// the target by key, as compared (norm) and as written
	want, raw map[string][]cfgLine
}

// save is the paper router's save.
func (p *planner) save() []string {
	if p.saved == nil {
		p.saved, p.parsed = p.s.saveLines(true), nil
	}
	return p.saved
}

// current is the paper router's save, keyed.
func (p *planner) current() []cfgLine {
	if p.saved == nil || p.parsed == nil {
		p.parsed = parseConfig(p.save())
	}
	return p.parsed
}

// rounds bounds the plan's rounds: each sees what the last one's changes
// did to other lines; two are the most a save has needed.
const rounds = 4

func (p *planner) plan() error {
	if err := p.remake(); err != nil {
		return err
	}
	tgt := p.norm(p.target)
	p.want, p.raw = group(tgt), group(p.target)
	for range rounds {
		cur := p.norm(p.current())
		if sameConfig(cur, tgt) {
			return nil
		}
		if err := p.addAndChange(cur); err != nil {
			return err
		}
		if err := p.remove(); err != nil {
			return err
		}
	}
	cur := p.norm(p.current())
	if !sameConfig(cur, tgt) {
		return fmt.Errorf("the changes do not converge: the router would say\n%s\ninstead of\n%s",
			strings.Join(texts(cur), "\n"), strings.Join(texts(tgt), "\n"))
	}
	return nil
}

// run runs cmd on paper and keeps it.
func (p *planner) run(cmd string) error {
	p.saved = nil // even one that failed: it may have done part
	if err := p.s.runLine(cmd); err != nil {
		return fmt.Errorf("%q: %v", cmd, err)
	}
	p.cmds = append(p.cmds, cmd)
	return nil
}

// remake deletes the links the target makes otherwise than they are
// (another kind, index, parent or MAC: not another MTU, which is set),
// and those at an index the target gives another link.
func (p *planner) remake() error {
	want := map[string]string{}
	indexOf := map[string]string{} // index -> the link the target makes there
	for _, t := range p.target {
		if t.kind == "link" {
			want[t.key] = p.free.norm(t.key, t.text, true)
			if i := wordAfter(strings.Fields(t.text), "index"); i != "" && !p.free.index[t.key] {
				indexOf[i] = t.key
			}
		}
	}
	for _, c := range p.current() {
		if c.kind != "link" || p.s.r.Links.ByName(c.key) == nil {
			continue // gone with its parent
		}
		t, ok := want[c.key]
		taker, taken := indexOf[wordAfter(strings.Fields(c.text), "index")]
		if ok && p.free.norm(c.key, c.text, true) != t || taken && taker != c.key {
			if err := p.run("link del " + c.key); err != nil {
				return err
			}
		}
	}
	return nil
}

// addAndChange runs what the target says that cur (as compared) does
// not, in the target's order.
func (p *planner) addAndChange(cur []cfgLine) error {
	have, want, raw := group(cur), p.want, p.raw
	done := map[string]bool{}
	for _, t := range p.target {
		id := t.id()
		if done[id] {
			continue
		}
		done[id] = true
		if slices.Equal(texts(have[id]), texts(want[id])) {
			continue
		}
		err := p.runAll(p.change(have[id], raw[id]))
		if t.kind == "ruledel" {
			continue // a default rule gone already (a VRF made again has none)
		}
		if err != nil {
			// what Linux does not change in place (a resilient group's
			// buckets, say) is made again
			if len(have[id]) == 0 {
				return err
			}
			var again []string
			for _, h := range have[id] {
				again = append(again, p.undo(h)...)
			}
			if err := p.runAll(append(again, texts(raw[id])...)); err != nil {
				return err
			}
		}
	}
	return nil
}

// runAll runs cmds until one fails.
func (p *planner) runAll(cmds []string) error {
	for _, cmd := range cmds {
		if err := p.run(cmd); err != nil {
			return err
		}
	}
	return nil
}

// remove undoes what the router says that the target does not, last
// line first. A line another's undoing took with it is passed.
func (p *planner) remove() error {
	cur := p.current()
	for _, c := range slices.Backward(cur) {
		if _, ok := p.raw[c.id()]; ok {
			continue
		}
		for _, cmd := range p.undo(c) {
			if err := p.run(cmd); err != nil {
				if !slices.Contains(p.save(), c.text+"\n") {
					break // gone with another
				}
				return err
			}
		}
	}
	return nil
}

// norm is lines as they are compared: a link's index and MAC the config
// left to the router are not, nor a route's expiry's seconds left.
func (p *planner) norm(lines []cfgLine) []cfgLine {
	out := make([]cfgLine, len(lines))
	for i, l := range lines {
		switch l.kind {
		case "link":
			l.text = p.free.norm(l.key, l.text, false)
		case "route":
			if strings.Contains(l.text, " expires ") {
				l.text = dropWords(l.text, "expires", 1)
			}
		}
		out[i] = l
	}
	return out
}

// group is lines by what they set, in their order.
func group(lines []cfgLine) map[string][]cfgLine {
	m := map[string][]cfgLine{}
	for _, l := range lines {
		m[l.id()] = append(m[l.id()], l)
	}
	return m
}

func texts(lines []cfgLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}

// sameConfig reports whether two saves say the same, in any order.
func sameConfig(a, b []cfgLine) bool {
	x, y := texts(a), texts(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// dropWords drops each key of text's words and the n words after it.
func dropWords(text, key string, n int) string {
	w := strings.Fields(text)
	for i := slices.Index(w, key); i >= 0; i = slices.Index(w, key) {
		w = slices.Delete(w, i, min(i+1+n, len(w)))
	}
	return strings.Join(w, " ")
}
