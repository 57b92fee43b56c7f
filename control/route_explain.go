package control

import (
	"fmt"
	"net/netip"
	"strconv"

	"urouter/decide"
	"urouter/fib6"
	"urouter/rules"
)

// `route get -d` explains the decision before it prints it: one line per
// step, each rule tried and why it matched or not, each table looked up
// and what it gave, and the multipath member the flow's hash chose.

func (s *Session) explain(q *getReq) decide.Result {
	ex := s.r.Decider.Explain(&q.key)
	s.writeExplanation(&q.key, &ex, "")
	return ex.Result
}

// writeExplanation writes the steps of decision ex of key, a line each
// after indent (a packet's trace indents them).
func (s *Session) writeExplanation(k *decide.Key, ex *decide.Explanation, indent string) {
	var b []byte
	for _, st := range ex.Steps {
		s.out.WriteString(indent)
		b = s.appendStep(b[:0], k, &st)
		if g := ex.Result.Group; st.Kind == decide.Selected && g != nil {
			b = fmt.Appendf(b, " of %d:", g.Len())
			b = s.appendPath(b, ex.Result.Path, true)
		}
		s.out.Write(append(b, '\n'))
	}
}

func (s *Session) appendStep(b []byte, k *decide.Key, st *decide.Step) []byte {
	table := " table " + tableString(st.Table)
	if v := s.r.Links.VRFByTable(st.Table); v != nil {
		table += " (vrf " + v.Name + ")"
	}
	switch st.Kind {
	case decide.RuleMatched, decide.RuleSkipped:
		b = strconv.AppendUint(append(b, "rule "...), uint64(st.Rule.Pref), 10)
		// the rule as `rule show` prints it, through its printer: the
		// line so far goes out first, the rest of it after
		s.out.Write(append(b, ": "...))
		w := printer{w: s.out}
		printRule(&w, st.Rule, rules.State{}, false)
		b = b[:0]
		if st.Kind == decide.RuleMatched {
			return append(b, ": matches"...)
		}
		return append(append(b, ": no match: "...), s.missText(k, st.Rule, st.Miss)...)
	case decide.Jump:
		if st.Target < 0 {
			return fmt.Appendf(b, "  goto %d: no rule has that preference: on to the next rule", st.Rule.Target)
		}
		return fmt.Appendf(b, "  goto %d", st.Rule.Target)
	case decide.NoTable:
		return append(append(b, " "...), table+": no such table: on to the next rule"...)
	case decide.NoMatch:
		return append(append(b, " "...), table+": no route: on to the next rule"...)
	case decide.SourceMiss:
		return fmt.Appendf(b, " %s: %s has routes for other sources only: passed over", table, dstString(st.Prefix))
	case decide.Thrown:
		return fmt.Appendf(b, " %s: throw %s: on to the next rule", table, dstString(st.Prefix))
	case decide.Suppressed:
		return fmt.Appendf(b, " %s: %s suppressed (prefix length %d <= suppress_prefixlength %d): on to the next rule",
			table, s.routeText(st), st.Prefix.Bits(), st.Rule.SuppressPrefixLen)
	case decide.Found:
		return fmt.Appendf(b, " %s: %s: decides", table, s.routeText(st))
	case decide.RuleDecided:
		return fmt.Appendf(b, "  the rule decides: %s", ruleActionString(st.Rule.Action))
	case decide.Selected:
		return fmt.Appendf(b, "  multipath: flow hash 0x%08x selects path %d", st.Hash, st.Member+1)
	case decide.NoRule:
		return append(b, "no rule decides"...)
	}
	return b
}

// routeText is a route as `route show` words it, on one line.
func (s *Session) routeText(st *decide.Step) string {
	b := s.appendRouteSpec(nil, st.Table, fib6.Route{Dst: st.Prefix, Attrs: *st.Route})
	return string(b)
}

func (s *Session) linkText(i int32) string {
	if i == 0 {
		return "lo"
	}
	if l := s.r.Links.ByIndex(i); l != nil {
		return l.Name
	}
	return "link " + strconv.Itoa(int(i))
}

// missText says why a packet fails a rule's selector.
func (s *Session) missText(k *decide.Key, r *rules.Rule, m rules.Miss) string {
	src := netip.AddrFrom16(k.Src)
	switch m {
	case rules.MissIif:
		if s.r.Links.ByName(r.Iif) == nil {
			return "iif " + r.Iif + " does not exist"
		}
		return "it comes in by " + s.linkText(k.Iif) + ", not " + r.Iif
	case rules.MissOif:
		if k.Oif == 0 {
			return "it asks for no oif"
		}
		return "it asks for oif " + s.linkText(k.Oif) + ", not " + r.Oif
	case rules.MissDst:
		return "destination " + netip.AddrFrom16(k.Dst).String() + " is outside " + r.Dst.String()
	case rules.MissSrc:
		return "source " + src.String() + " is outside " + r.Src.String()
	case rules.MissNoSrc:
		return "the lookup has no source"
	case rules.MissDSField:
		return "tos " + dsfieldString(k.DSField&^3) + " is not " + dsfieldString(r.DSField)
	case rules.MissProto:
		return "ipproto " + ipprotoString(k.Proto) + " is not " + ipprotoString(r.IPProto)
	case rules.MissSport:
		return "sport " + strconv.Itoa(int(k.Sport)) + " is outside" + string(appendPorts(nil, " ", r.Sport))
	case rules.MissDport:
		return "dport " + strconv.Itoa(int(k.Dport)) + " is outside" + string(appendPorts(nil, " ", r.Dport))
	case rules.MissNot:
		return "every selector matches, and the rule says not"
	case rules.MissL3mdev:
		return "it is in no VRF"
	}
	return ""
}
