package control

import (
	"net/netip"
	"strconv"

	"urouter/rules"
)

// Listing, flushing and saving rules: iprule.c's selector (filter_nlmsg)
// and its printer (print_rule).

type ruleAction uint8

const (
	ruleList ruleAction = iota
	ruleFlush
	ruleSave
)

// ruleFilter is a list or flush SELECTOR; zero fields select all.
type ruleFilter struct {
	pref             uint32
	prefSet, not     bool
	src, dst         netip.Prefix // a rule's prefix must lie inside
	tos              uint8
	tosSet           bool
	iif, oif         string
	iifSet, oifSet   bool
	ipproto          uint8
	sport, dport     rules.PortRange
	table            uint32
	proto            uint8
	protoSet         bool // flush only, as in iproute2
	srcSet, dstSet   bool
	flushing, saving bool
}

func inside(f netip.Prefix, r netip.Prefix) bool {
	if f.Bits() <= 0 {
		return true
	}
	return r.Bits() >= f.Bits() && netip.PrefixFrom(r.Addr(), f.Bits()).Masked() == f.Masked()
}

func (f *ruleFilter) selects(r *rules.Rule) bool {
	switch {
	case f.prefSet && r.Pref != f.pref, f.not && !r.Invert:
		return false
	case f.srcSet && !inside(f.src, r.Src), f.dstSet && !inside(f.dst, r.Dst):
		return false
	case f.tosSet && r.DSField != f.tos:
		return false
	case f.iifSet && r.Iif != f.iif, f.oifSet && r.Oif != f.oif:
		return false
	case f.ipproto != 0 && r.IPProto != f.ipproto:
		return false
	case f.sport.Lo != 0 && r.Sport != f.sport, f.dport.Lo != 0 && r.Dport != f.dport:
		return false
	case f.table != 0 && r.Table != f.table:
		return false
	case f.flushing && f.protoSet && r.Protocol != f.proto:
		return false
	}
	return true
}

// parseRuleFilter reads iprule_list_flush_or_save's words, in its order.
func (s *session) parseRuleFilter(args [][]byte) (*ruleFilter, *cmdErr) {
	f := &ruleFilter{}
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		if matches(w, "preference") || matches(w, "order") || matches(w, "priority") {
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			n, ok := parseUint32(v)
			if !ok {
				return nil, invarg("preference value is invalid\n", v)
			}
			f.pref, f.prefSet = n, true
			continue
		}
		if is(w, "not") {
			f.not = true
			continue
		}
		if is(w, "l3mdev") || is(w, "fwmark") || is(w, "uidrange") || matches(w, "tun_id") {
			return nil, unsupported(w)
		}
		var v []byte
		var err *cmdErr
		known := true
		switch {
		case is(w, "tos"), is(w, "dsfield"), is(w, "dev"), is(w, "iif"), is(w, "oif"),
			matches(w, "lookup"), matches(w, "table"), matches(w, "from"), matches(w, "src"),
			matches(w, "protocol"), is(w, "ipproto"), is(w, "sport"), is(w, "dport"),
			matches(w, "dst"), matches(w, "to"):
			v, err = ws.next()
		default:
			v, known = w, false // a bare prefix is `to PREFIX`
		}
		if err != nil {
			return nil, err
		}
		if err := s.ruleFilterWord(f, w, v, known); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (s *session) ruleFilterWord(f *ruleFilter, w, v []byte, known bool) *cmdErr {
	var ok bool
	switch {
	case !known:
	case is(w, "tos"), is(w, "dsfield"):
		if f.tos, ok = parseDSField(v); !ok {
			return invarg("TOS value is invalid\n", v)
		}
		f.tosSet = true
		return nil
	case is(w, "dev"), is(w, "iif"), is(w, "oif"):
		if !validIfname(v) {
			if is(w, "oif") {
				return invarg("\"oif\" not a valid ifname", v)
			}
			return invarg("\"iif\"/\"dev\" not a valid ifname", v)
		}
		if is(w, "oif") {
			f.oif, f.oifSet = string(v), true
		} else {
			f.iif, f.iifSet = string(v), true
		}
		return nil
	case matches(w, "lookup"), matches(w, "table"):
		if f.table, ok = parseRuleTable(v); !ok {
			return invarg("table id value is invalid\n", v)
		}
		return nil
	case matches(w, "from"), matches(w, "src"):
		p, err := s.rulePrefix(v)
		if err != nil {
			return err
		}
		f.src, f.srcSet = p, true
		return nil
	case matches(w, "protocol"):
		p, ok := parseProto(v)
		switch {
		case ok:
			f.proto, f.protoSet = uint8(p), true
		case !is(v, "all"):
			return invarg("invalid \"protocol\"\n", v)
		}
		return nil
	case is(w, "ipproto"):
		if f.ipproto, ok = parseIPProto(v); !ok {
			return invarg("Invalid \"ipproto\" value\n", v)
		}
		return nil
	case is(w, "sport"), is(w, "dport"):
		pr, ok := parsePortRange(v)
		switch {
		case !ok && is(w, "sport"):
			return invarg("invalid port range\n", v)
		case !ok:
			return invarg("invalid dport range\n", v)
		case is(w, "sport"):
			f.sport = pr
		default:
			f.dport = pr
		}
		return nil
	}
	p, err := s.rulePrefix(v)
	if err != nil {
		return err
	}
	f.dst, f.dstSet = p, true
	return nil
}

// ruleShow lists, flushes (every selected rule but those of preference
// 0, which Linux's dump gives no preference to delete by) or saves.
func (s *session) ruleShow(args [][]byte, act ruleAction) *cmdErr {
	f, err := s.parseRuleFilter(args)
	if err != nil {
		return err
	}
	if act == ruleFlush {
		f.flushing = true
		s.ruleTxn().DeleteWhere(func(r *rules.Rule) bool { return r.Pref != 0 && f.selects(r) })
		s.commitRules()
		return nil
	}
	s.commitRules()
	set := s.r.Rules.Load()
	j := s.jsonArray()
	var b []byte
	for i := 0; i < set.Len(); i++ {
		r := set.Rule(i)
		switch {
		case act == ruleSave:
			b = append(appendRuleSpec(append(b[:0], "rule add "...), r), '\n')
			s.out.Write(b)
		case !f.selects(r):
		case j != nil:
			s.ruleJSON(j, r, set.State(i))
		default:
			b = strconv.AppendUint(b[:0], uint64(r.Pref), 10)
			b = append(s.appendRule(append(b, ":\t"...), r, set.State(i), s.opt.details), '\n')
			s.out.Write(b)
		}
	}
	if j != nil {
		j.endArray()
		s.out.WriteByte('\n')
	}
	return nil
}

// appendRule is print_rule's text after the preference.
func (s *session) appendRule(b []byte, r *rules.Rule, st rules.State, details bool) []byte {
	if r.Invert {
		b = append(b, "not "...)
	}
	b = append(b, "from "...)
	b = appendRulePrefix(b, r.Src)
	if r.Dst.Bits() > 0 {
		b = appendRulePrefix(append(b, " to "...), r.Dst)
	}
	if r.DSField != 0 {
		b = append(append(b, " tos "...), dsfieldString(r.DSField)...)
	}
	if r.Iif != "" {
		b = append(append(b, " iif "...), r.Iif...)
		if st.IifDetached {
			b = append(b, " [detached]"...)
		}
	}
	if r.Oif != "" {
		b = append(append(b, " oif "...), r.Oif...)
		if st.OifDetached {
			b = append(b, " [detached]"...)
		}
	}
	if r.IPProto != 0 {
		b = append(append(b, " ipproto "...), ipprotoString(r.IPProto)...)
	}
	b = appendPorts(b, " sport ", r.Sport)
	b = appendPorts(b, " dport ", r.Dport)
	if r.Table != 0 {
		b = append(append(b, " lookup "...), tableString(r.Table)...)
		if r.Suppress {
			b = strconv.AppendInt(append(b, " suppress_prefixlength "...), int64(r.SuppressPrefixLen), 10)
		}
	}
	switch r.Action {
	case rules.Goto:
		b = strconv.AppendUint(append(b, " goto "...), uint64(r.Target), 10)
		if st.Unresolved {
			b = append(b, " [unresolved]"...)
		}
	case rules.Nop:
		b = append(b, " nop"...)
	case rules.ToTable:
	default:
		b = append(append(b, ' '), ruleActionString(r.Action)...)
	}
	if r.Protocol != 0 && r.Protocol != rules.ProtoKernel || details {
		b = append(append(b, " proto "...), protoString(fib6Proto(r.Protocol))...)
	}
	return b
}

func appendRulePrefix(b []byte, p netip.Prefix) []byte {
	switch {
	case p.Bits() <= 0:
		return append(b, "all"...)
	case p.Bits() == 128:
		return p.Addr().AppendTo(b)
	}
	return p.AppendTo(b)
}

func appendPorts(b []byte, key string, p rules.PortRange) []byte {
	if !p.Set() {
		return b
	}
	b = strconv.AppendUint(append(b, key...), uint64(p.Lo), 10)
	if p.Hi != p.Lo {
		b = strconv.AppendUint(append(b, '-'), uint64(p.Hi), 10)
	}
	return b
}

func ruleActionString(a rules.Action) string {
	switch a {
	case rules.Blackhole:
		return "blackhole"
	case rules.Unreachable:
		return "unreachable"
	case rules.Prohibit:
		return "prohibit"
	}
	return strconv.Itoa(int(a))
}

func (s *session) ruleJSON(j *jsonw, r *rules.Rule, st rules.State) {
	j.startObject()
	j.uint("priority", uint64(r.Pref))
	if r.Invert {
		j.null("not")
	}
	if r.Src.Bits() > 0 {
		j.str("src", r.Src.Addr().String())
		if r.Src.Bits() != 128 {
			j.uint("srclen", uint64(r.Src.Bits()))
		}
	} else {
		j.str("src", "all")
	}
	if r.Dst.Bits() > 0 {
		j.str("dst", r.Dst.Addr().String())
		if r.Dst.Bits() != 128 {
			j.uint("dstlen", uint64(r.Dst.Bits()))
		}
	}
	if r.DSField != 0 {
		j.str("tos", dsfieldString(r.DSField))
	}
	if r.Iif != "" {
		j.str("iif", r.Iif)
		if st.IifDetached {
			j.null("iif_detached")
		}
	}
	if r.Oif != "" {
		j.str("oif", r.Oif)
		if st.OifDetached {
			j.null("oif_detached")
		}
	}
	if r.IPProto != 0 {
		j.str("ipproto", ipprotoString(r.IPProto))
	}
	portsJSON(j, "sport", r.Sport)
	portsJSON(j, "dport", r.Dport)
	if r.Table != 0 {
		j.str("table", tableString(r.Table))
		if r.Suppress {
			j.int("suppress_prefixlen", int64(r.SuppressPrefixLen))
		}
	}
	switch r.Action {
	case rules.Goto:
		j.uint("goto", uint64(r.Target))
		if st.Unresolved {
			j.null("unresolved")
		}
	case rules.Nop:
		j.null("nop")
	case rules.ToTable:
	default:
		j.str("action", ruleActionString(r.Action))
	}
	if r.Protocol != 0 && r.Protocol != rules.ProtoKernel || s.opt.details {
		j.str("protocol", protoString(fib6Proto(r.Protocol)))
	}
	j.endObject()
}

func portsJSON(j *jsonw, key string, p rules.PortRange) {
	switch {
	case !p.Set():
	case p.Lo == p.Hi:
		j.uint(key, uint64(p.Lo))
	default:
		j.uint(key+"_start", uint64(p.Lo))
		j.uint(key+"_end", uint64(p.Hi))
	}
}

// appendRuleSpec writes r in the words of `rule add`, for `rule save`.
func appendRuleSpec(b []byte, r *rules.Rule) []byte {
	b = strconv.AppendUint(append(b, "pref "...), uint64(r.Pref), 10)
	if r.Invert {
		b = append(b, " not"...)
	}
	if r.Src.Bits() > 0 {
		b = r.Src.AppendTo(append(b, " from "...))
	}
	if r.Dst.Bits() > 0 {
		b = r.Dst.AppendTo(append(b, " to "...))
	}
	if r.DSField != 0 {
		b = append(b, " tos 0x"...)
		b = strconv.AppendUint(b, uint64(r.DSField), 16)
	}
	if r.Iif != "" {
		b = append(append(b, " iif "...), r.Iif...)
	}
	if r.Oif != "" {
		b = append(append(b, " oif "...), r.Oif...)
	}
	if r.IPProto != 0 {
		b = strconv.AppendUint(append(b, " ipproto "...), uint64(r.IPProto), 10)
	}
	b = appendPorts(b, " sport ", r.Sport)
	b = appendPorts(b, " dport ", r.Dport)
	switch r.Action {
	case rules.ToTable:
		b = strconv.AppendUint(append(b, " lookup "...), uint64(r.Table), 10)
	case rules.Goto:
		b = strconv.AppendUint(append(b, " goto "...), uint64(r.Target), 10)
	case rules.Nop:
		b = append(b, " nop"...)
	default:
		b = append(append(b, ' '), ruleActionString(r.Action)...)
	}
	if r.Suppress {
		b = strconv.AppendInt(append(b, " suppress_prefixlength "...), int64(r.SuppressPrefixLen), 10)
	}
	if r.Protocol != 0 {
		b = strconv.AppendUint(append(b, " protocol "...), uint64(r.Protocol), 10)
	}
	return b
}
