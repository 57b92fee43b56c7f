package control

import (
	"net/netip"
	"strings"
	"sync"

	"urouter/fib6"
	"urouter/rules"
)

// Parsing rule commands: iprule_modify's words in its order of checks,
// and the values each takes.

// ruleParser is the rule object's own state between commands.
type ruleParser struct {
	sel rules.Selector // the command being parsed, its storage reused
}

// parseRule reads the words of iprule_modify, in its order of checks. An
// add without a table or action looks up main; a delete selects by what
// it names only.
func (s *Session) parseRule(args [][]byte, del bool) (*rules.Selector, *cmdErr) {
	sel := &s.rule.sel
	*sel = rules.Selector{}
	r := &sel.Rule
	tableOK, sportSet, dportSet := false, false, false
	if !del {
		r.Action = rules.ToTable
	}
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		kw := ruleWords().of(w)
		switch kw {
		case rkFwmark, rkRealms, rkTunID, rkIfgroup, rkUidrange, rkNat:
			return nil, unsupported(w)
		case rkL3mdev:
			r.L3mdev, tableOK = true, true
			continue
		}
		v, err := ws.valueIf(kw != 0 && kw != rkNot) // an action, or not, has no value
		if err != nil {
			return nil, err
		}
		switch kw {
		case rkNot:
			r.Invert = true
		case rkFrom:
			r.Src, err = s.rulePrefix(v)
		case rkTo:
			r.Dst, err = s.rulePrefix(v)
		case rkPref:
			r.Pref, err = parseRulePref(v)
			sel.PrefSet = true
		case rkTos:
			r.DSField, err = parseRuleTos(v)
		case rkProtocol:
			r.Protocol, err = parseRuleProto(v)
		case rkTable:
			r.Table, err = parseRuleTableID(v)
			tableOK = true
		case rkSuppress:
			r.SuppressPrefixLen, err = parseSuppress(v)
			r.Suppress = true
		case rkIif:
			r.Iif, err = parseRuleIfname(w, v)
		case rkOif:
			r.Oif, err = parseRuleIfname(w, v)
		case rkIPProto:
			r.IPProto, err = parseRuleIPProto(v)
		case rkSport:
			r.Sport, err = parseRulePorts(w, v)
			sportSet = true
		case rkDport:
			r.Dport, err = parseRulePorts(w, v)
			dportSet = true
		default:
			var action []byte
			if action, err = ws.valueAfter(w, "type"); err != nil {
				return nil, err
			}
			err = parseRuleAction(r, action, &ws)
			tableOK = true
		}
		if err != nil {
			return nil, err
		}
	}
	if r.L3mdev && r.Table != 0 {
		return nil, &cmdErr{msg: "table can not be specified for l3mdev rules", code: 234} // iprule_modify's -EINVAL
	}
	if !tableOK && !del {
		r.Table = fib6.TableMain
	}
	if err := checkRulePorts(r, sportSet, dportSet); err != nil {
		return nil, err
	}
	return sel, nil
}

// checkRulePorts checks the port ranges given as the kernel does, once
// the words are read.
func checkRulePorts(r *rules.Rule, sportSet, dportSet bool) *cmdErr {
	if sportSet {
		if e := rules.CheckPorts(r.Sport, true); e != nil {
			return rejected(e)
		}
	}
	if dportSet {
		if e := rules.CheckPorts(r.Dport, false); e != nil {
			return rejected(e)
		}
	}
	return nil
}

func parseRuleProto(v []byte) (uint8, *cmdErr) {
	p, ok := parseProto(v)
	if !ok {
		return 0, invarg("\"protocol\" value is invalid\n", v)
	}
	return uint8(p), nil
}

func parseRuleTableID(v []byte) (uint32, *cmdErr) {
	t, ok := parseRuleTable(v)
	if !ok {
		return 0, invarg("invalid table ID\n", v)
	}
	return t, nil
}

func parseSuppress(v []byte) (int32, *cmdErr) {
	n, ok := parseUint32(v)
	if !ok || n > 1<<31-1 {
		return 0, invarg("suppress_prefixlength value is invalid\n", v)
	}
	return int32(n), nil
}

// The words of iprule_modify, in the order it checks them (the first
// that fits wins: "p" is preference, "t" tun_id).
const (
	rkNot = iota + 1
	rkFrom
	rkTo
	rkPref
	rkTos
	rkFwmark
	rkRealms
	rkProtocol
	rkTunID
	rkTable
	rkSuppress
	rkIfgroup
	rkIif
	rkOif
	rkL3mdev
	rkUidrange
	rkNat
	rkIPProto
	rkSport
	rkDport
)

var ruleWords = sync.OnceValue(func() keywords {
	return newKeywords([]kw{
		{"not", false, rkNot}, {"from", false, rkFrom}, {"to", false, rkTo},
		{"preference", true, rkPref}, {"order", true, rkPref}, {"priority", true, rkPref},
		{"tos", false, rkTos}, {"dsfield", true, rkTos}, {"fwmark", false, rkFwmark}, {"realms", true, rkRealms},
		{"protocol", true, rkProtocol}, {"tun_id", true, rkTunID}, {"table", true, rkTable}, {"lookup", false, rkTable},
		{"suppress_prefixlength", true, rkSuppress}, {"sup_pl", false, rkSuppress},
		{"suppress_ifgroup", true, rkIfgroup}, {"sup_group", false, rkIfgroup},
		{"dev", false, rkIif}, {"iif", false, rkIif}, {"oif", false, rkOif}, {"l3mdev", false, rkL3mdev},
		{"uidrange", false, rkUidrange}, {"nat", false, rkNat}, {"map-to", true, rkNat},
		{"ipproto", false, rkIPProto}, {"sport", false, rkSport}, {"dport", false, rkDport},
	})
})

// parseRuleAction reads the words of iprule_modify's last branch: goto,
// nop, or a route type.
func parseRuleAction(r *rules.Rule, w []byte, ws *argv) *cmdErr {
	switch {
	case matches(w, "help"):
		return ruleUsage()
	case matches(w, "goto"):
		v, err := ws.next()
		if err != nil {
			return err
		}
		n, ok := parseUint32(v)
		if !ok {
			return invarg("invalid target\n", v)
		}
		r.Action, r.Target = rules.Goto, n
		return nil
	case matches(w, "nop"):
		r.Action = rules.Nop
		return nil
	}
	t, known := parseType(w)
	switch {
	case !known:
		return invarg("Failed to parse rule type", w)
	case t == fib6.Unicast:
		r.Action = rules.ToTable
	case t == fib6.Blackhole:
		r.Action = rules.Blackhole
	case t == fib6.Unreachable:
		r.Action = rules.Unreachable
	case t == fib6.Prohibit:
		r.Action = rules.Prohibit
	default:
		return parseErr("Error: rule type \"%s\" is not supported by this router.", w)
	}
	return nil
}

// The values rule add, del, show and flush read alike.

// rulePrefix reads a prefix as get_prefix does; "all" is no prefix.
func (s *Session) rulePrefix(v []byte) (p netip.Prefix, err *cmdErr) {
	p, err = parsePrefix(v)
	if err != nil && !s.opt.Inet6 {
		err = exit1("Error: any valid prefix is expected rather than \"" + string(v) + "\".")
	}
	if err == nil && p.Bits() == 0 {
		p = netip.Prefix{}
	}
	return p, err
}

func parseRuleTable(v []byte) (uint32, bool) {
	switch string(v) {
	case "main", "local", "default":
		return parseTable(v, false)
	}
	n, ok := parseUint32(v)
	return n, ok
}

func parseRulePref(v []byte) (uint32, *cmdErr) {
	n, ok := parseUint32(v)
	if !ok {
		return 0, invarg("preference value is invalid\n", v)
	}
	return n, nil
}

func parseRuleTos(v []byte) (uint8, *cmdErr) {
	d, ok := parseDSField(v)
	if !ok {
		return 0, invarg("TOS value is invalid\n", v)
	}
	return d, nil
}

// parseRuleIfname is the link name after w (iif, dev or oif).
func parseRuleIfname(w, v []byte) (string, *cmdErr) {
	switch {
	case validIfname(v):
		return string(v), nil
	case is(w, "oif"):
		return "", invarg("\"oif\" not a valid ifname", v)
	}
	return "", invarg("\"iif\"/\"dev\" not a valid ifname", v)
}

func parseRuleIPProto(v []byte) (uint8, *cmdErr) {
	p, ok := parseIPProto(v)
	if !ok {
		return 0, invarg("Invalid \"ipproto\" value\n", v)
	}
	return p, nil
}

// parseRulePorts is the port range after w (sport or dport).
func parseRulePorts(w, v []byte) (rules.PortRange, *cmdErr) {
	pr, ok := parsePortRange(v)
	switch {
	case ok:
		return pr, nil
	case is(w, "sport"):
		return pr, invarg("invalid port range\n", v)
	}
	return pr, invarg("invalid dport range\n", v)
}

// validIfname is check_ifname: what the kernel takes as a link name.
func validIfname(v []byte) bool {
	return len(v) > 0 && len(v) < 16 && !strings.ContainsAny(string(v), "/ \t\n\v\f\r")
}

// parsePortRange reads N or N-M as sscanf("%hu-%hu") does.
func parsePortRange(v []byte) (rules.PortRange, bool) {
	lo, rest, ok := scanUint16(v)
	if !ok {
		return rules.PortRange{}, false
	}
	if len(rest) == 0 || rest[0] != '-' {
		return rules.PortRange{Lo: lo, Hi: lo}, true
	}
	hi, _, ok := scanUint16(rest[1:])
	if !ok {
		return rules.PortRange{Lo: lo, Hi: lo}, true
	}
	return rules.PortRange{Lo: lo, Hi: hi}, true
}

// scanUint16 is %hu: an optional minus and leading digits, kept modulo
// 2^16 as glibc does.
func scanUint16(v []byte) (uint16, []byte, bool) {
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		v = v[1:]
	}
	i := 0
	var n uint64
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		n = n*10 + uint64(v[i]-'0')
		if n > 1<<40 {
			n = 1 << 40
		}
		i++
	}
	if neg {
		n = -n
	}
	return uint16(n), v[i:], i > 0
}
