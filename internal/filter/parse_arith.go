package filter

import "fmt"

// Arithmetic, as libpcap's grammar has it: | below &, below << and >>,
// below + and -, below * and /, below unary minus, each left to right;
// '%' and '^' take everything to their right (they have no precedence,
// and bison shifts).

// relation: arth relop arth.
func (p *parser) relation() (node, error) {
	l, err := p.arith(1)
	if err != nil {
		return nil, err
	}
	op := p.peek()
	switch {
	case op.op(">"), op.op(">="), op.op("="), op.op("=="), op.op("<"), op.op("<="), op.op("!="):
	default:
		return nil, p.syntax(op)
	}
	p.next()
	r, err := p.arith(1)
	if err != nil {
		return nil, err
	}
	return relNode{op.text, l, r}, nil
}

// precedence of libpcap's arithmetic operators; '%' and '^' have none.
var precedence = map[string]int{"|": 1, "&": 2, "<<": 3, ">>": 3, "+": 4, "-": 4, "*": 5, "/": 5, "%": -1, "^": -1}

const precUnary = 6

func (p *parser) arith(minPrec int) (arth, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	return p.climb(l, minPrec)
}

func (p *parser) climb(l arth, minPrec int) (arth, error) {
	for {
		t := p.peek()
		prec, ok := precedence[t.text]
		if t.kind != tOp || !ok || (prec > 0 && prec < minPrec) {
			return l, nil
		}
		p.next()
		next := prec + 1
		if prec < 0 {
			next = 1 // bison shifts: everything to the right
		}
		r, err := p.arith(next)
		if err != nil {
			return nil, err
		}
		l = binA{t.text, l, r}
	}
}

func (p *parser) unary() (arth, error) {
	t := p.peek()
	if err := refused(t); err != nil {
		return nil, err
	}
	switch {
	case t.op("-"):
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if x, err = p.climb(x, precUnary); err != nil {
			return nil, err
		}
		return negA{x}, nil
	case t.kind == tNum:
		p.next()
		return numA{t.num}, nil
	case t.kw("len"):
		p.next()
		return lenA{}, nil
	case t.op("("):
		p.next()
		x, err := p.arith(1)
		if err != nil {
			return nil, err
		}
		return x, p.expect(")")
	case t.kind == tKW && pnames[t.text] && p.peekAt(1).op("["):
		p.next()
		p.next()
		idx, err := p.arith(1)
		if err != nil {
			return nil, err
		}
		size := uint32(1)
		if p.peek().op(":") {
			p.next()
			s := p.next()
			if s.kind != tNum {
				return nil, p.syntax(s)
			}
			if size = s.num; size != 1 && size != 2 && size != 4 {
				return nil, fmt.Errorf("data size must be 1, 2, or 4")
			}
		}
		return loadA{proto: t.text, idx: idx, size: size, tok: t}, p.expect("]")
	}
	return nil, p.syntax(t)
}
