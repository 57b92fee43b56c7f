package control

import (
	"net/netip"
	"strconv"
	"sync"

	"urouter/fib6"
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
	pref           uint32
	prefSet, not   bool
	l3mdev         bool         // l3mdev rules only
	src, dst       netip.Prefix // a rule's prefix must lie inside
	tos            uint8
	tosSet         bool
	iif, oif       string
	iifSet, oifSet bool
	ipproto        uint8
	sport, dport   rules.PortRange
	table          uint32
	proto          uint8
	protoSet       bool // flush only, as in iproute2
	srcSet, dstSet bool
	flushing       bool
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
	case f.table != 0 && r.Table != f.table, f.l3mdev && !r.L3mdev:
		return false
	case f.flushing && f.protoSet && r.Protocol != f.proto:
		return false
	}
	return true
}

// The words of iprule_list_flush_or_save, in the order it checks them; a
// word it does not know is a destination prefix.
const (
	rfPref = iota + 1
	rfNot
	rfTos
	rfUnsupported
	rfL3mdev
	rfIif
	rfOif
	rfTable
	rfFrom
	rfProtocol
	rfIPProto
	rfSport
	rfDport
	rfTo
)

var ruleFilterWords = sync.OnceValue(func() keywords {
	return newKeywords([]kw{
		{"preference", true, rfPref}, {"order", true, rfPref}, {"priority", true, rfPref},
		{"not", false, rfNot}, {"tos", false, rfTos}, {"dsfield", false, rfTos}, {"fwmark", false, rfUnsupported},
		{"dev", false, rfIif}, {"iif", false, rfIif}, {"oif", false, rfOif},
		{"l3mdev", false, rfL3mdev}, {"uidrange", false, rfUnsupported}, {"tun_id", true, rfUnsupported},
		{"lookup", true, rfTable}, {"table", true, rfTable}, {"from", true, rfFrom}, {"src", true, rfFrom},
		{"protocol", true, rfProtocol}, {"ipproto", false, rfIPProto}, {"sport", false, rfSport},
		{"dport", false, rfDport}, {"dst", true, rfTo}, {"to", true, rfTo},
	})
})

// parseRuleFilter reads iprule_list_flush_or_save's words, in its order.
func (s *Session) parseRuleFilter(args [][]byte) (*ruleFilter, *cmdErr) {
	f := &ruleFilter{}
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		kw := ruleFilterWords().of(w)
		if kw == rfUnsupported {
			return nil, unsupported(w)
		}
		if kw == rfL3mdev {
			f.l3mdev = true
			continue
		}
		v, err := ws.valueIf(kw != 0 && kw != rfNot) // a bare prefix is `to PREFIX`
		if err != nil {
			return nil, err
		}
		var ok bool
		switch kw {
		case rfPref:
			f.pref, err = parseRulePref(v)
			f.prefSet = true
		case rfNot:
			f.not = true
		case rfTos:
			f.tos, err = parseRuleTos(v)
			f.tosSet = true
		case rfIif:
			f.iif, err = parseRuleIfname(w, v)
			f.iifSet = true
		case rfOif:
			f.oif, err = parseRuleIfname(w, v)
			f.oifSet = true
		case rfTable:
			if f.table, ok = parseRuleTable(v); !ok {
				err = invarg("table id value is invalid\n", v)
			}
		case rfFrom:
			f.src, err = s.rulePrefix(v)
			f.srcSet = true
		case rfProtocol:
			p, ok := parseProto(v)
			switch {
			case ok:
				f.proto, f.protoSet = uint8(p), true
			case !is(v, "all"):
				err = invarg("invalid \"protocol\"\n", v)
			}
		case rfIPProto:
			f.ipproto, err = parseRuleIPProto(v)
		case rfSport:
			f.sport, err = parseRulePorts(w, v)
		case rfDport:
			f.dport, err = parseRulePorts(w, v)
		default:
			f.dst, err = s.rulePrefix(v)
			f.dstSet = true
		}
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

// ruleShow lists, flushes (every selected rule but those of preference
// 0, which Linux's dump gives no preference to delete by) or saves.
func (s *Session) ruleShow(args [][]byte, act ruleAction) *cmdErr {
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
	if act == ruleSave {
		var b []byte
		for i := 0; i < set.Len(); i++ {
			b = append(appendRuleSpec(append(b[:0], "rule add "...), set.Rule(i)), '\n')
			s.out.Write(b)
		}
		return nil
	}
	w := s.newPrinter()
	w.begin()
	for i := 0; i < set.Len(); i++ {
		if r := set.Rule(i); f.selects(r) {
			w.openObject("")
			w.uint("priority", "%d:\t", uint64(r.Pref))
			printRule(&w, r, set.State(i), s.opt.Details)
			w.text("\n")
			w.closeObject()
		}
	}
	w.end()
	return nil
}

// printRule is print_rule's after the preference.
func printRule(w *printer, r *rules.Rule, st rules.State, details bool) {
	if r.Invert {
		w.null("not", "not ")
	}
	w.text("from ")
	if r.Src.Bits() > 0 {
		printRulePrefix(w, "src", "srclen", r.Src)
	} else {
		w.str("src", "%s", "all")
	}
	if r.Dst.Bits() > 0 {
		w.text(" to ")
		printRulePrefix(w, "dst", "dstlen", r.Dst)
	}
	if r.DSField != 0 {
		w.str("tos", " tos %s", dsfieldString(r.DSField))
	}
	if r.Iif != "" {
		w.str("iif", " iif %s", r.Iif)
		if st.IifDetached {
			w.null("iif_detached", " [detached]")
		}
	}
	if r.Oif != "" {
		w.str("oif", " oif %s", r.Oif)
		if st.OifDetached {
			w.null("oif_detached", " [detached]")
		}
	}
	if r.L3mdev {
		w.null("l3mdev", " lookup [l3mdev-table]")
	}
	if r.IPProto != 0 {
		w.str("ipproto", " ipproto %s", ipprotoString(r.IPProto))
	}
	printPorts(w, r.Sport, " sport %d", "sport", "sport_start", "sport_end")
	printPorts(w, r.Dport, " dport %d", "dport", "dport_start", "dport_end")
	if r.Table != 0 {
		w.str("table", " lookup %s", tableString(r.Table))
		if r.Suppress {
			w.int("suppress_prefixlen", " suppress_prefixlength %d", int64(r.SuppressPrefixLen))
		}
	}
	printRuleAction(w, r, st)
	if r.Protocol != 0 && r.Protocol != rules.ProtoKernel || details {
		w.str("protocol", " proto %s", protoString(fib6.Proto(r.Protocol)))
	}
}

// printRulePrefix prints a selector's prefix, its length apart in JSON
// and none for a host.
func printRulePrefix(w *printer, key, lenKey string, p netip.Prefix) {
	w.addr(key, "%s", p.Addr())
	if p.Bits() != 128 {
		w.uint(lenKey, "/%d", uint64(p.Bits()))
	}
}

// printPorts prints a port range: one port, or its start and end.
func printPorts(w *printer, p rules.PortRange, format, key, startKey, endKey string) {
	switch {
	case !p.Set():
	case p.Lo == p.Hi:
		w.uint(key, format, uint64(p.Lo))
	default:
		w.uint(startKey, format, uint64(p.Lo))
		w.uint(endKey, "-%d", uint64(p.Hi))
	}
}

func printRuleAction(w *printer, r *rules.Rule, st rules.State) {
	switch r.Action {
	case rules.Goto:
		w.uint("goto", " goto %d", uint64(r.Target))
		if st.Unresolved {
			w.null("unresolved", " [unresolved]")
		}
	case rules.Nop:
		w.null("nop", " nop")
	case rules.ToTable:
	default:
		w.str("action", " %s", ruleActionString(r.Action))
	}
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
	switch {
	case r.L3mdev:
		b = append(b, " l3mdev"...)
	case r.Action == rules.ToTable:
		b = strconv.AppendUint(append(b, " lookup "...), uint64(r.Table), 10)
	case r.Action == rules.Goto:
		b = strconv.AppendUint(append(b, " goto "...), uint64(r.Target), 10)
	case r.Action == rules.Nop:
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
