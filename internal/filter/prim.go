package filter

import (
	"fmt"
	"net/netip"
)

// An id under its qualifiers is resolved here, with libpcap's checks and
// words, and handed to its test in gen.go.

// prim resolves an id under its qualifiers (libpcap's gen_ncode,
// gen_scode, gen_mcode6) and writes its test.
func (g *gen) prim(n primNode, t, f label) error {
	q, tok := n.q, n.tok
	if q.none && tok.kind == tHID6 {
		q = qual{} // not libpcap's: a bare address is a host
	}
	switch tok.kind {
	case tHID:
		return fmt.Errorf("'%s' is an IPv4 address, which never matches here: the router carries IPv6 only", tok.text)
	case tEID:
		return fmt.Errorf("'%s' is an Ethernet address: 'ether' is not available on a link of raw IPv6 packets", tok.text)
	}
	if q.none {
		if tok.kind == tHID6 {
			return fmt.Errorf("invalid qualifier against IPv6 address")
		}
		return fmt.Errorf("syntax error in filter expression: '%s' has no qualifier to take", tok.text)
	}
	if q.addr == "gateway" {
		return fmt.Errorf("'gateway' not supported in this configuration")
	}
	switch tok.kind {
	case tHID6:
		return g.address(n, q, t, f)
	case tNum:
		return g.number(q, tok, t, f)
	}
	return g.name(q, tok, t, f)
}

func (g *gen) address(n primNode, q qual, t, f label) error {
	addr, text := n.tok.addr, n.tok.text
	bits := uint32(128)
	if n.plen != nil {
		bits = n.plen.num
		text += "/" + n.plen.text
		if bits > 128 {
			return fmt.Errorf("mask length must be <= 128")
		}
	}
	pfx := netip.PrefixFrom(addr, int(bits))
	if pfx.Masked().Addr() != addr {
		return fmt.Errorf("non-network bits set in \"%s\"", text)
	}
	switch q.addr {
	case "", "host":
		if bits != 128 {
			return fmt.Errorf("Mask syntax for networks only")
		}
	case "net":
	default:
		return fmt.Errorf("invalid qualifier against IPv6 address")
	}
	if q.proto != "" && q.proto != "ip6" {
		kind := "host"
		if q.addr == "net" {
			kind = "net"
		}
		return fmt.Errorf("'%s' modifier applied to ip6 %s", q.proto, kind)
	}
	var m [16]byte
	for i := range bits {
		m[i/8] |= 0x80 >> (i % 8)
	}
	g.hosts(q.dir, addr.As16(), m, t, f)
	return nil
}

func (g *gen) number(q qual, tok token, t, f label) error {
	v := tok.num
	switch q.addr {
	case "", "host", "net":
		return fmt.Errorf("'%s' is an IPv4 address, which never matches here: the router carries IPv6 only", tok.text)
	case "port", "portrange":
		proto, err := portProto(q, overBoth, tok.text)
		if err != nil {
			return err
		}
		if v > 65535 {
			return fmt.Errorf("illegal port number %d > 65535", v)
		}
		g.ports(proto, q.dir, v, v, t, f)
		return nil
	}
	return g.protoNum(q, v, t, f)
}

func (g *gen) protoNum(q qual, v uint32, t, f label) error {
	if q.proto != "" && q.proto != "ip6" {
		return fmt.Errorf("'%s %s' is bogus", q.proto, q.addr)
	}
	if q.dir != "" {
		return fmt.Errorf("'%s' modifier applied to '%s'", q.dir, q.addr)
	}
	if q.addr == "protochain" {
		g.protochain(v, t, f)
	} else {
		g.proto(v, t, f)
	}
	return nil
}

// portProto is the transport a port primitive tests, 0 for any of tcp,
// udp and sctp.
func portProto(q qual, over int, name string) (uint32, error) {
	switch q.proto {
	case "":
		switch over {
		case overTCP:
			return protoTCP, nil
		case overUDP:
			return protoUDP, nil
		}
		return 0, nil
	case "tcp", "sctp":
		if over == overUDP {
			return 0, fmt.Errorf("port '%s' is udp", name)
		}
	case "udp":
		if over == overTCP {
			return 0, fmt.Errorf("port '%s' is tcp", name)
		}
	default:
		return 0, fmt.Errorf("illegal qualifier of '%s'", q.addr)
	}
	return transports[q.proto], nil
}

func (g *gen) name(q qual, tok token, t, f label) error {
	s := tok.text
	switch q.addr {
	case "", "host":
		return fmt.Errorf("unknown host '%s'", s)
	case "net":
		return fmt.Errorf("unknown network '%s'", s)
	case "port":
		svc, ok := services[s]
		if !ok {
			return fmt.Errorf("unknown port '%s'", s)
		}
		proto, err := portProto(q, svc.over, s)
		if err != nil {
			return err
		}
		g.ports(proto, q.dir, uint32(svc.port), uint32(svc.port), t, f)
		return nil
	case "portrange":
		lo, hi, err := portRange(s)
		if err != nil {
			return err
		}
		proto, err := portProto(q, overBoth, s)
		if err != nil {
			return err
		}
		g.ports(proto, q.dir, min(lo, hi), max(lo, hi), t, f)
		return nil
	}
	v, ok := protocols[s]
	if !ok {
		return fmt.Errorf("unknown ip proto '%s'", s)
	}
	return g.protoNum(q, v, t, f)
}

// portRange reads "LO-HI", each a number or a service name.
func portRange(s string) (uint32, uint32, error) {
	for i := 1; i < len(s)-1; i++ {
		if s[i] != '-' {
			continue
		}
		lo, err1 := onePort(s[:i])
		hi, err2 := onePort(s[i+1:])
		if err1 == nil && err2 == nil {
			return lo, hi, nil
		}
	}
	return 0, 0, fmt.Errorf("unknown port in range '%s'", s)
}

func onePort(s string) (uint32, error) {
	if svc, ok := services[s]; ok {
		return uint32(svc.port), nil
	}
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("unknown port '%s'", s)
	}
	v, err := parseNum(s)
	if err == nil && v > 65535 {
		err = fmt.Errorf("illegal port number %d > 65535", v)
	}
	return v, err
}
