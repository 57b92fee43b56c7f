package control

import (
	"bytes"
	"urouter/control/wire"
)

// splitLine splits a command line into words the way iproute2's batch mode
// does (getcmdline and makeargs): a '#' ends the line, words are separated
// by blanks, and a word that begins with a quote runs to the matching
// quote. The words are views into line; args is reused.
func splitLine(line []byte, args [][]byte) ([][]byte, error) {
	args = args[:0]
	line = cut(line, '#') // iproute2 cuts at the first '#', even inside quotes
	i, n := 0, len(line)
	for i < n {
		c := line[i]
		switch class[c] {
		case blank:
			i++
		case quote:
			j := i + 1
			for j < n && line[j] != c {
				j++
			}
			if j == n {
				return args, errUnterminated
			}
			args = append(args, line[i+1:j])
			i = j + 1
		default:
			j := i + 1
			for j < n && class[line[j]] != blank {
				j++
			}
			args = append(args, line[i:j])
			i = j
		}
	}
	return args, nil
}

// wordEnd is the offset in line just past word k of args, what splitLine
// made of line (its words point into it), closing quote included; -1 if
// it has fewer words. line may be trimmed of what precedes the words.
func wordEnd(line []byte, args [][]byte, k int) int {
	if k >= len(args) {
		return -1
	}
	end := cap(line) - cap(args[k]) + len(args[k])
	if end < len(line) && class[line[end]] == quote {
		end++ // a quoted word's closing quote
	}
	return end
}

// cut is b up to the first c, all of b if it has none.
func cut(b []byte, c byte) []byte {
	if i := bytes.IndexByte(b, c); i >= 0 {
		return b[:i]
	}
	return b
}

const (
	word = iota
	blank
	quote
)

var class = func() (c [256]uint8) {
	for _, b := range " \t\r\n" {
		c[b] = blank
	}
	c['"'], c['\''] = quote, quote
	return c
}()

// matches reports whether word is an abbreviation of keyword (see
// wire.Matches).
func matches(word []byte, keyword string) bool { return wire.Matches(word, keyword) }

// is reports whether word is exactly keyword.
func is(word []byte, keyword string) bool { return string(word) == keyword }

// argv walks a command's words as iproute2's NEXT_ARG does: next steps
// from a keyword to its value, or fails as the command is incomplete.
type argv struct {
	args [][]byte
	i    int
}

func (a *argv) next() ([]byte, *cmdErr) {
	a.i++
	if a.i >= len(a.args) {
		return nil, incomplete()
	}
	return a.args[a.i], nil
}

// pairs walks args as KEYWORD VALUE pairs, iproute2's NEXT_ARG after each
// keyword; a keyword without its value leaves the command incomplete.
func pairs(args [][]byte, f func(key, value []byte) *cmdErr) *cmdErr {
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		k := args[ws.i]
		v, err := ws.next()
		if err != nil {
			return err
		}
		if err := f(k, v); err != nil {
			return err
		}
	}
	return nil
}

// valueIf is the keyword's value (the next word) when it takes one, else
// the keyword itself.
func (a *argv) valueIf(takes bool) ([]byte, *cmdErr) {
	if !takes {
		return a.args[a.i], nil
	}
	return a.next()
}

// valueAfter is the word after w when w is keyword (as `to ADDR`), else w.
func (a *argv) valueAfter(w []byte, keyword string) ([]byte, *cmdErr) {
	if !is(w, keyword) {
		return w, nil
	}
	return a.next()
}

// nextUint32 is next read as a number; a bad one is named as what.
func (a *argv) nextUint32(what string) (uint32, *cmdErr) {
	v, err := a.next()
	if err != nil {
		return 0, err
	}
	n, ok := parseUint32(v)
	if !ok {
		return 0, badValue(what, v)
	}
	return n, nil
}

// nextVia is the address of `via [inet6] ADDRESS`, as written.
func (a *argv) nextVia() ([]byte, *cmdErr) {
	v, err := a.next()
	if err == nil && is(v, "inet6") {
		v, err = a.next()
	}
	return v, err
}

// iproute2 checks keywords in a fixed order, some exactly (strcmp) and some
// as abbreviations (matches): the first that fits wins. keywords turns
// such an ordered list into one map from every word that can select a
// keyword (each keyword, and each abbreviation where allowed) to the
// keyword the ordered checks would pick, so a command is parsed with one
// map lookup per word instead of a chain of comparisons.

type kw struct {
	word   string
	abbrev bool // matches() rather than strcmp()
	id     int
}

type keywords map[string]int

func newKeywords(list []kw) keywords {
	m := keywords{}
	for i := len(list) - 1; i >= 0; i-- { // earlier entries overwrite later ones
		d := list[i]
		if d.abbrev {
			for n := 1; n <= len(d.word); n++ {
				m[d.word[:n]] = d.id
			}
		} else {
			m[d.word] = d.id
		}
	}
	return m
}

// of returns the keyword word selects, or 0 for none.
func (k keywords) of(word []byte) int { return k[str(word)] }

// memo remembers the last word looked up in a keywords map: a batch
// repeats the same few words on every line, and comparing bytes is
// cheaper than hashing them.
type memo struct {
	word []byte
	id   int
}

func (m *memo) of(k keywords, word []byte) int {
	if string(word) == string(m.word) && m.word != nil {
		return m.id
	}
	id := k.of(word)
	m.word = append(m.word[:0], word...)
	m.id = id
	return id
}
