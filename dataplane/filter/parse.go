package filter

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The parser: pcap-filter(7)'s grammar for the primitives that mean
// something on raw IPv6, with its abbreviations (a bare id takes the
// qualifiers of the primitive before it: `host a or b`, `tcp port 22 or
// 80`).

type quals struct {
	proto string // ip6 tcp udp sctp icmp6, or ""
	dir   direction
	dirOK bool
	typ   string // host net port portrange proto, or ""
}

type parser struct {
	toks []token
	i    int
	last *quals // the qualifiers a bare id takes
}

var errSyntax = fmt.Errorf("syntax error in filter expression")

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) take() token {
	t := p.toks[p.i]
	if t.kind != tEnd {
		p.i++
	}
	return t
}

func (p *parser) or() (*node, error) {
	a, err := p.and()
	for err == nil && p.peek().kind == tOr {
		p.take()
		var b *node
		if b, err = p.and(); err == nil {
			a = &node{op: '|', a: a, b: b}
		}
	}
	return a, err
}

func (p *parser) and() (*node, error) {
	a, err := p.unary()
	for err == nil && p.peek().kind == tAnd {
		p.take()
		var b *node
		if b, err = p.unary(); err == nil {
			a = &node{op: '&', a: a, b: b}
		}
	}
	return a, err
}

func (p *parser) unary() (*node, error) {
	if p.peek().kind == tNot {
		p.take()
		a, err := p.unary()
		return &node{op: '!', a: a}, err
	}
	return p.primary()
}

func (p *parser) primary() (*node, error) {
	start := p.i
	if n, ok, err := p.relation(); ok || err != nil {
		return n, err
	}
	p.i = start
	if p.peek().kind == tLParen {
		p.take()
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.take().kind != tRParen {
			return nil, errSyntax
		}
		return n, nil
	}
	return p.primitive()
}

// relation parses `ARITH RELOP ARITH`; ok is false if what is here is not
// one (it is then parsed again as something else).
func (p *parser) relation() (*node, bool, error) {
	l, err := p.arith(0)
	if err != nil && err != errSyntax {
		return nil, true, err // an accessor's own error
	}
	if err != nil || p.peek().kind != tOp || swapped[p.peek().s] == "" && p.peek().s != "=" {
		return nil, false, nil
	}
	rel := p.take().s
	r, err := p.arith(0)
	if err != nil {
		return nil, true, err
	}
	if l, err = fold(l); err == nil {
		r, err = fold(r)
	}
	if err != nil {
		return nil, true, err
	}
	return &node{test: relation(l, rel, r)}, true, nil
}

var levels = [][]string{{"|", "^"}, {"&"}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"}}

func (p *parser) arith(level int) (*arith, error) {
	if level == len(levels) {
		return p.operand()
	}
	a, err := p.arith(level + 1)
	for err == nil && p.peek().kind == tOp && contains(levels[level], p.peek().s) {
		op := p.take().s
		var b *arith
		if b, err = p.arith(level + 1); err == nil {
			a = &arith{op: op, a: a, b: b}
		}
	}
	return a, err
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// accessors are the headers `proto[off:size]` reads: where each starts
// and the next header it needs.
var accessors = map[string]struct{ base, proto uint32 }{
	"ip6": {0, 0}, "icmp6": {40, 58}, "tcp": {40, 6}, "udp": {40, 17}, "sctp": {40, 132},
}

func (p *parser) operand() (*arith, error) {
	t := p.take()
	switch {
	case t.kind == tOp && t.s == "-":
		a, err := p.operand()
		return &arith{op: "neg", a: a}, err
	case t.kind == tNum:
		return &arith{op: "n", n: t.n}, nil
	case t.kind == tLParen:
		a, err := p.arith(0)
		if err == nil && p.take().kind != tRParen {
			err = errSyntax
		}
		return a, err
	case t.kind == tWord && t.s == "len":
		return &arith{op: "len"}, nil
	case t.kind == tWord && p.peek().kind == tLBrack:
		acc, ok := accessors[t.s]
		if !ok {
			return nil, unavailable(t.s)
		}
		p.take()
		off, err := p.arith(0)
		if err != nil {
			return nil, err
		}
		size := 1
		if p.peek().kind == tColon {
			p.take()
			s := p.take()
			if s.kind != tNum || s.n != 1 && s.n != 2 && s.n != 4 {
				return nil, fmt.Errorf("data size must be 1, 2, or 4")
			}
			size = int(s.n)
		}
		if p.take().kind != tRBrack {
			return nil, errSyntax
		}
		return &arith{op: "load", a: off, size: size, base: acc.base, proto: acc.proto}, nil
	case t.kind == tWord:
		if v, ok := constants[t.s]; ok {
			return &arith{op: "n", n: v}, nil
		}
	}
	return nil, errSyntax
}

// constants are libpcap's names for offsets and values.
var constants = map[string]uint32{
	"icmp6type": 0, "icmp6code": 1, "tcpflags": 13,
	"tcp-fin": 0x01, "tcp-syn": 0x02, "tcp-rst": 0x04, "tcp-push": 0x08, "tcp-ack": 0x10, "tcp-urg": 0x20,
	"tcp-ece": 0x40, "tcp-cwr": 0x80,
	"icmp6-destinationunreach": 1, "icmp6-packettoobig": 2, "icmp6-timeexceeded": 3, "icmp6-parameterproblem": 4,
	"icmp6-echo": 128, "icmp6-echoreply": 129, "icmp6-multicastlistenerquery": 130,
	"icmp6-multicastlistenerreportv1": 131, "icmp6-multicastlistenerdone": 132,
	"icmp6-routersolicit": 133, "icmp6-routeradvert": 134, "icmp6-neighborsolicit": 135,
	"icmp6-neighboradvert": 136, "icmp6-redirect": 137, "icmp6-multicastlistenerreportv2": 143,
}

var protoNumbers = map[string]uint32{"ip6": 0, "tcp": 6, "udp": 17, "sctp": 132, "icmp6": 58}

// unavailable is the error of a primitive of another family or layer.
func unavailable(w string) error {
	switch w {
	case "ip", "arp", "rarp", "icmp", "igmp", "igrp", "pim", "vrrp", "carp", "atalk", "aarp", "decnet", "iso",
		"stp", "ipx", "netbeui", "lat", "sca", "moprc", "mopdl", "clnp", "esis", "isis", "l1", "l2", "iih", "lsp",
		"snp", "csnp", "psnp":
		return fmt.Errorf("'%s' never matches here: the router carries IPv6 only", w)
	case "ether", "fddi", "tr", "wlan", "link", "vlan", "mpls", "pppoed", "pppoes", "geneve", "llc", "inbound",
		"outbound", "ifname", "on", "rnr", "rulenum", "reason", "rset", "ruleset", "srnr", "subrulenum", "action",
		"broadcast", "multicast", "gateway", "protochain", "vxlan":
		return fmt.Errorf("'%s' is not available on a link of raw IPv6 packets", w)
	}
	return errSyntax
}

func (p *parser) primitive() (*node, error) {
	var q quals
	any := false
	for {
		t := p.peek()
		if t.kind != tWord {
			break
		}
		switch w := t.s; {
		case q.proto == "" && q.typ == "" && !q.dirOK && protoNumbers[w] != 0 || w == "ip6" && q.proto == "":
			q.proto = w
		case (w == "src" || w == "dst") && !q.dirOK && q.typ == "":
			q.dir, q.dirOK = dirSrc, true
			if w == "dst" {
				q.dir = dirDst
			}
			p.take()
			any = true
			if k := p.peek().kind; (k == tOr || k == tAnd) && p.toks[p.i+1].kind == tWord &&
				(p.toks[p.i+1].s == "src" || p.toks[p.i+1].s == "dst") && p.toks[p.i+1].s != w {
				q.dir = dirSrcOrDst
				if k == tAnd {
					q.dir = dirSrcAndDst
				}
				p.i += 2
			}
			continue
		case w == "host" || w == "net" || w == "port" || w == "portrange" || w == "proto":
			if q.typ != "" {
				return nil, errSyntax
			}
			q.typ = w
			p.take()
			return p.id(q, p.take())
		case w == "less" || w == "greater":
			if any || q.proto != "" {
				return nil, errSyntax
			}
			p.take()
			n := p.take()
			if n.kind != tNum {
				return nil, errSyntax
			}
			return &node{test: lengthTest(w == "greater", n.n)}, nil
		default:
			if any || q.proto != "" {
				goto done
			}
			if e := unavailable(w); e != errSyntax {
				return nil, e
			}
			goto done
		}
		p.take()
		any = true
	}
done:
	switch {
	case q.dirOK:
		q.typ = "host"
		return p.id(q, p.take())
	case q.proto != "":
		if q.proto == "ip6" {
			return &node{test: func(g *gen, t, f label) { isIPv6(g, f); g.always(t) }}, nil
		}
		return &node{test: ip6Proto(protoNumbers[q.proto])}, nil
	}
	t := p.take()
	if t.kind != tWord && t.kind != tNum {
		return nil, errSyntax
	}
	if p.last != nil {
		return p.id(*p.last, t)
	}
	return p.id(quals{typ: "host"}, t)
}

// id makes the test of a primitive's id under its qualifiers.
func (p *parser) id(q quals, t token) (*node, error) {
	if t.kind != tWord && t.kind != tNum {
		return nil, errSyntax
	}
	if q.typ == "" {
		q.typ = "host"
	}
	p.last = &q
	switch q.typ {
	case "host", "net":
		if q.proto != "" && q.proto != "ip6" {
			return nil, fmt.Errorf("'%s' modifier applied to %s", q.proto, q.typ)
		}
		pfx, err := prefixOf(t.s, q.typ == "net")
		if err != nil {
			return nil, err
		}
		return &node{test: hostTest(q.dir, pfx.Addr().As16(), pfx.Bits())}, nil
	case "port", "portrange":
		protos := []uint32{132, 6, 17}
		switch q.proto {
		case "tcp", "udp", "sctp":
			protos = []uint32{protoNumbers[q.proto]}
		case "icmp6":
			return nil, fmt.Errorf("'icmp6' modifier applied to %s", q.typ)
		}
		lo, hi, err := portsOf(t.s, q.typ == "portrange")
		if err != nil {
			return nil, err
		}
		return &node{test: portTest(protos, q.dir, lo, hi)}, nil
	case "proto":
		if q.proto != "" && q.proto != "ip6" || q.dirOK {
			return nil, fmt.Errorf("'%s' modifier applied to proto", q.proto)
		}
		n, ok := map[string]uint32{"\\tcp": 6, "\\udp": 17, "\\icmp6": 58, "\\sctp": 132}[t.s]
		if !ok {
			v, err := strconv.ParseUint(t.s, 0, 8)
			if err != nil {
				return nil, fmt.Errorf("unknown ip proto '%s'", t.s)
			}
			n = uint32(v)
		}
		return &node{test: ip6Proto(n)}, nil
	}
	return nil, errSyntax
}

func prefixOf(s string, isNet bool) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		if !isNet {
			return netip.Prefix{}, fmt.Errorf("mask syntax for networks only")
		}
		pfx, err := netip.ParsePrefix(s)
		if err != nil || !pfx.Addr().Is6() {
			return netip.Prefix{}, fmt.Errorf("invalid IPv6 prefix '%s'", s)
		}
		if pfx.Masked() != pfx {
			return netip.Prefix{}, fmt.Errorf("non-network bits set in \"%s\"", s)
		}
		return pfx, nil
	}
	a, err := netip.ParseAddr(s)
	switch {
	case err == nil && a.Is4():
		return netip.Prefix{}, fmt.Errorf("'%s' is IPv4: the router carries IPv6 only", s)
	case err != nil || a.Zone() != "":
		return netip.Prefix{}, fmt.Errorf("unknown host '%s'", s)
	}
	return netip.PrefixFrom(a, 128), nil
}

// services are the port names a filter takes (libpcap asks
// /etc/services; these are the routing protocols' and the common ones).
var services = map[string]uint32{
	"bgp": 179, "domain": 53, "http": 80, "https": 443, "ssh": 22, "telnet": 23, "ntp": 123, "snmp": 161,
	"syslog": 514, "dhcpv6-client": 546, "dhcpv6-server": 547, "ripng": 521, "bfd-control": 3784,
	"bfd-echo": 3785, "ldp": 646, "netconf": 830,
}

func portsOf(s string, isRange bool) (uint32, uint32, error) {
	one := func(w string) (uint32, error) {
		if n, ok := services[w]; ok {
			return n, nil
		}
		n, err := strconv.ParseUint(w, 0, 32)
		if err != nil {
			return 0, fmt.Errorf("unknown port '%s'", w)
		}
		if n > 65535 {
			return 0, fmt.Errorf("illegal port number %d > 65535", n)
		}
		return uint32(n), nil
	}
	if !isRange {
		n, err := one(s)
		return n, n, err
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("illegal port range '%s'", s)
	}
	lo, err := one(a)
	if err != nil {
		return 0, 0, err
	}
	hi, err := one(b)
	if err != nil {
		return 0, 0, err
	}
	return min(lo, hi), max(lo, hi), nil
}
