package filter

import "fmt"

// The parser is libpcap's grammar (grammar.y) by recursive descent. Its
// quirks are kept because expressions written for tcpdump rely on them:
// and and or have one precedence, left to right; an id after and/or
// without qualifiers takes the previous primitive's ("host a or b");
// '%' and '^' have no precedence in libpcap's grammar, so bison shifts
// and they take everything to their right ("a * b % c + d" is
// "a * (b % (c + d))"). Where libpcap's LALR(1) parser decides by the
// next token, this one tries the readings in turn.
//
// The parser only builds the tree; names, addresses and qualifiers are
// checked when code is generated (gen.go), in the order libpcap reports
// them.

// qual is a primitive's qualifiers; "" is the default.
type qual struct {
	proto string // ip6 tcp udp sctp icmp6 ah esp
	dir   string // src dst or and
	addr  string // host net port portrange proto protochain gateway
	none  bool   // libpcap's qerr: no qualifiers to carry
}

var noQual = qual{none: true}

// Boolean nodes.
type (
	andNode  struct{ l, r node }
	orNode   struct{ l, r node }
	notNode  struct{ x node }
	primNode struct { // an id with its qualifiers
		q      qual
		tok    token
		plen   *token // "/N" after an address
		mask   *token // "mask M" after an IPv4 address
		barely bool   // a bare IPv6 address where libpcap has no qualifiers
	}
	protoNode struct{ name string } // a protocol alone: "tcp"
	relNode   struct {
		op   string
		l, r arth
	}
	lessNode  struct{ n uint32 }
	greatNode struct{ n uint32 }
	mcastNode struct {
		q   qual
		tok token
	}
)

type node any

// Arithmetic nodes.
type (
	numA  struct{ v uint32 }
	lenA  struct{}
	loadA struct {
		proto string
		idx   arth
		size  uint32
		tok   token
	}
	binA struct {
		op   string
		l, r arth
	}
	negA struct{ x arth }
)

type arth any

// parseError is a syntax error at a token; the parser backtracks over
// these. Any other error ends the parse.
type parseError struct {
	pos int
	msg string
}

func (e *parseError) Error() string { return e.msg }

type parser struct {
	toks []token
	i    int
}

func parse(toks []token) (node, error) {
	p := &parser{toks: toks}
	n, _, err := p.expr(noQual)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kw("mask") {
		return nil, refused(t)
	} else if t.kind != tEOF {
		return nil, p.syntax(t)
	}
	return n, nil
}

func (p *parser) peek() token        { return p.toks[p.i] }
func (p *parser) peekAt(n int) token { return p.toks[min(p.i+n, len(p.toks)-1)] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) syntax(t token) error {
	return &parseError{pos: t.pos, msg: fmt.Sprintf("syntax error in filter expression at %v", t)}
}

func (p *parser) expect(op string) error {
	if t := p.peek(); !t.op(op) {
		return p.syntax(t)
	}
	p.next()
	return nil
}

// furthest picks, of two failed readings, the error of the one that read
// further; an error that is not a syntax error wins.
func furthest(a, b error) error {
	pa, oka := a.(*parseError)
	pb, okb := b.(*parseError)
	switch {
	case !oka:
		return a
	case !okb:
		return b
	case pb.pos > pa.pos:
		return b
	}
	return a
}

func isSyntax(err error) bool { _, ok := err.(*parseError); return ok }

// expr: term { (and|or) (term|id) }, left to right.
func (p *parser) expr(ctx qual) (node, qual, error) {
	n, q, err := p.term(ctx)
	if err != nil {
		return nil, q, err
	}
	for {
		t := p.peek()
		if !t.kw("and") && !t.kw("or") && !t.op("&&") && !t.op("||") {
			return n, q, nil
		}
		p.next()
		r, rq, err := p.termOrID(q)
		if err != nil {
			return nil, q, err
		}
		if t.kw("and") || t.op("&&") {
			n = andNode{n, r}
		} else {
			n = orNode{n, r}
		}
		q = rq
	}
}

// termOrID reads what follows and/or: an id carrying q if it reads as
// one up to the next and/or, else a term.
func (p *parser) termOrID(q qual) (node, qual, error) {
	save := p.i
	n, err := p.id(q)
	if err == nil {
		if t := p.peek(); t.kind == tEOF || t.op(")") || t.kw("and") || t.kw("or") || t.op("&&") || t.op("||") {
			return n, q, nil
		}
		err = p.syntax(p.peek())
	}
	if !isSyntax(err) {
		return nil, q, err
	}
	idEnd := p.i
	p.i = save
	n, tq, terr := p.term(q)
	if terr == nil {
		return n, tq, nil
	}
	if !isSyntax(terr) {
		return nil, q, terr
	}
	if err := furthest(err, terr); err != terr {
		p.i = idEnd
		return nil, q, err
	}
	return nil, q, terr
}

// id: an address, number or name; not id; ( id {and|or id} ).
func (p *parser) id(q qual) (node, error) {
	t := p.peek()
	switch {
	case t.kw("not") || t.op("!"):
		p.next()
		x, err := p.id(q)
		if err != nil {
			return nil, err
		}
		return notNode{x}, nil
	case t.op("("):
		p.next()
		n, err := p.id(q)
		if err != nil {
			return nil, err
		}
		for {
			c := p.peek()
			if !c.kw("and") && !c.kw("or") && !c.op("&&") && !c.op("||") {
				break
			}
			p.next()
			r, err := p.id(q)
			if err != nil {
				return nil, err
			}
			if c.kw("and") || c.op("&&") {
				n = andNode{n, r}
			} else {
				n = orNode{n, r}
			}
		}
		return n, p.expect(")")
	case t.kind == tNum || t.kind == tID || t.kind == tEID:
		p.next()
		return primNode{q: q, tok: t}, nil
	case t.kind == tHID || t.kind == tHID6:
		p.next()
		n := primNode{q: q, tok: t}
		if c := p.peek(); c.op("/") {
			p.next()
			l := p.next()
			if l.kind != tNum {
				return nil, p.syntax(l)
			}
			n.plen = &l
		} else if c.kw("mask") && t.kind == tHID {
			p.next()
			m := p.next()
			if m.kind != tHID {
				return nil, p.syntax(m)
			}
			n.mask = &m
		}
		return n, nil
	}
	return nil, p.syntax(t)
}

var pnames = map[string]bool{"ip6": true, "icmp6": true, "tcp": true, "udp": true, "sctp": true, "ah": true, "esp": true}

// term: not term; ( expr ); head id; a protocol; arth relop arth; less,
// greater, multicast.
func (p *parser) term(ctx qual) (node, qual, error) {
	t := p.peek()
	if err := refused(t); err != nil {
		return nil, ctx, err
	}
	switch {
	case t.kw("not") || t.op("!"):
		p.next()
		n, q, err := p.term(ctx)
		if err != nil {
			return nil, q, err
		}
		return notNode{n}, q, nil
	case t.op("("):
		save := p.i
		n, rerr := p.relation()
		if rerr == nil {
			return n, noQual, nil
		}
		if !isSyntax(rerr) {
			return nil, ctx, rerr
		}
		relEnd := p.i
		p.i = save
		p.next()
		n, _, err := p.expr(ctx)
		if err == nil {
			err = p.expect(")")
		}
		if err == nil {
			return n, ctx, nil
		}
		if e := furthest(err, rerr); e == rerr {
			p.i = relEnd
			return nil, ctx, rerr
		}
		return nil, ctx, err
	case t.kind == tNum || t.op("-") || t.kw("len"):
		n, err := p.relation()
		return n, noQual, err
	case t.kw("less") || t.kw("greater"):
		p.next()
		c := p.next()
		if c.kind != tNum {
			return nil, ctx, p.syntax(c)
		}
		if t.kw("less") {
			return lessNode{c.num}, noQual, nil
		}
		return greatNode{c.num}, noQual, nil
	case t.kw("multicast") || t.kw("broadcast"):
		p.next()
		return mcastNode{tok: t}, noQual, nil
	case t.kind == tHID6:
		// Not libpcap's: a bare IPv6 address with no qualifiers to carry
		// is a host.
		n, err := p.id(qual{})
		if pn, ok := n.(primNode); ok {
			pn.barely = true
			n = pn
		}
		return n, qual{}, err
	case t.kind == tKW && pnames[t.text]:
		if p.peekAt(1).op("[") {
			n, err := p.relation()
			return n, noQual, err
		}
		if c := p.peekAt(1); c.kw("multicast") || c.kw("broadcast") {
			p.next()
			p.next()
			return mcastNode{q: qual{proto: t.text}, tok: c}, noQual, nil
		}
		if !isHeadWord(p.peekAt(1)) {
			p.next()
			return protoNode{t.text}, noQual, nil
		}
	}
	if !isHeadWord(t) && !(t.kind == tKW && pnames[t.text]) {
		return nil, ctx, p.syntax(t)
	}
	q, err := p.head()
	if err != nil {
		return nil, ctx, err
	}
	n, err := p.id(q)
	return n, q, err
}

func isHeadWord(t token) bool {
	switch {
	case t.kw("src"), t.kw("dst"), t.kw("host"), t.kw("net"), t.kw("port"),
		t.kw("portrange"), t.kw("proto"), t.kw("protochain"), t.kw("gateway"):
		return true
	}
	return false
}

// head: [protocol] (dir [host|net|port|portrange] | host|net|port|portrange
// | proto | protochain | gateway).
func (p *parser) head() (qual, error) {
	var q qual
	if t := p.peek(); t.kind == tKW && pnames[t.text] {
		q.proto = p.next().text
	}
	t := p.peek()
	if t.kw("src") || t.kw("dst") {
		p.next()
		q.dir = t.text
		c, d := p.peek(), p.peekAt(1)
		other := map[string]string{"src": "dst", "dst": "src"}[t.text]
		if (c.kw("or") || c.kw("and") || c.op("||") || c.op("&&")) && d.kw(other) {
			p.next()
			p.next()
			q.dir = "or"
			if c.kw("and") || c.op("&&") {
				q.dir = "and"
			}
		}
		if a := p.peek(); a.kw("host") || a.kw("net") || a.kw("port") || a.kw("portrange") {
			q.addr = p.next().text
		}
		return q, nil
	}
	if isHeadWord(t) {
		q.addr = p.next().text
		return q, nil
	}
	return q, p.syntax(t)
}

// refused: the words of other links and of IPv4, an error wherever they
// stand.
func refused(t token) error {
	if t.kind != tKW {
		return nil
	}
	switch t.text {
	case "ip", "arp", "rarp", "icmp", "igmp", "igrp", "pim", "vrrp", "carp":
		return fmt.Errorf("'%s' (IPv4) never matches here: the router carries IPv6 only", t.text)
	case "mask":
		return fmt.Errorf("'mask' is IPv4's: give an IPv6 prefix as ADDRESS/LENGTH")
	}
	if _, ok := keywords[t.text]; ok && !pnames[t.text] && !isHeadWord(t) {
		switch t.text {
		case "and", "or", "not", "len", "less", "greater", "multicast", "broadcast":
			return nil
		}
		return fmt.Errorf("'%s' is not available on a link of raw IPv6 packets", t.text)
	}
	return nil
}
