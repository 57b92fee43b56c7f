package filter

import (
	"fmt"
	"strconv"
	"strings"
)

// The tokens of pcap-filter(7)'s language.
type tokKind uint8

const (
	tEnd tokKind = iota
	tWord
	tNum
	tLParen
	tRParen
	tLBrack
	tRBrack
	tColon
	tOp // a relation or an arithmetic operator
	tAnd
	tOr
	tNot
)

type token struct {
	kind tokKind
	s    string
	n    uint32
}

func isWordByte(c byte, inBrackets bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	case c == '_', c == '-', c == '.', c == '\\':
		return true
	case c == ':', c == '/':
		return !inBrackets // an address or a prefix; in brackets ':' gives the size
	}
	return false
}

// lex splits expr into tokens. Addresses, prefixes, port ranges and
// libpcap's dashed names (icmp6-echo, tcp-syn) are words.
func lex(expr string) ([]token, error) {
	var toks []token
	depth := 0
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '(':
			toks, i = append(toks, token{kind: tLParen}), i+1
		case c == ')':
			toks, i = append(toks, token{kind: tRParen}), i+1
		case c == '[':
			depth++
			toks, i = append(toks, token{kind: tLBrack}), i+1
		case c == ']':
			depth--
			toks, i = append(toks, token{kind: tRBrack}), i+1
		case c == ':' && depth > 0:
			toks, i = append(toks, token{kind: tColon}), i+1
		case strings.HasPrefix(expr[i:], "&&"):
			toks, i = append(toks, token{kind: tAnd}), i+2
		case strings.HasPrefix(expr[i:], "||"):
			toks, i = append(toks, token{kind: tOr}), i+2
		case isWordByte(c, depth > 0) && c != '-' && c != '.' && c != '/':
			j := i
			for j < len(expr) && isWordByte(expr[j], depth > 0) {
				j++
			}
			toks = append(toks, word(expr[i:j]))
			i = j
		default:
			op := ""
			for _, o := range []string{"<<", ">>", "<=", ">=", "==", "!=", "=", "<", ">", "+", "-", "*", "/", "%", "&", "|", "^", "!"} {
				if strings.HasPrefix(expr[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("syntax error in filter expression: unexpected %q", c)
			}
			if op == "!" {
				toks = append(toks, token{kind: tNot})
			} else {
				toks = append(toks, token{kind: tOp, s: op})
			}
			i += len(op)
		}
	}
	return append(toks, token{kind: tEnd}), nil
}

// word is a word's token: a number (decimal, 0x hex, 0 octal) or a word,
// with and/or/not as their operators.
func word(s string) token {
	switch s {
	case "and":
		return token{kind: tAnd, s: s}
	case "or":
		return token{kind: tOr, s: s}
	case "not":
		return token{kind: tNot, s: s}
	}
	if n, err := strconv.ParseUint(s, 0, 32); err == nil {
		return token{kind: tNum, s: s, n: uint32(n)}
	}
	return token{kind: tWord, s: s}
}
