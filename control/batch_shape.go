package control

import (
	"bytes"
	"slices"
)

// lineShape is the last route line the read-ahead parsed in full, kept so
// that the next line, when it differs from it only in its destination (a
// table's batch: `route add PREFIX via A dev D table T` a line), is parsed
// by comparing bytes and reading one prefix. Such a line's words are the
// same words at the same places, so they parse to the same request with
// another destination: the destination is the one word the parse reads
// for its value alone, and a word with a ':' is never a keyword.
type lineShape struct {
	ok     bool
	line   []byte     // the line, a copy
	words  [][2]int32 // each word's start and end in line
	dstArg int        // the destination's word; the object's is two before
	devArg int        // the word req.dev is, or -1
	req    routeReq
	cw     cmdWords // its words classified, but for w and rest (views)
}

// remember keeps l, a line parse parsed in full, as the shape of the next
// if it is a route change with one path whose destination is the first
// word after its command.
func (sh *lineShape) remember(l *aheadLine) {
	sh.ok = false
	if !l.route || l.perr != nil || len(l.req.legs) > 0 || len(l.cw.rest) < 2 ||
		bytes.ContainsAny(l.line, "\"'#") {
		return
	}
	dstArg := len(l.args) - len(l.cw.rest) + 1
	dst := l.args[dstArg]
	if !dstWord(dst) {
		return
	}
	at := func(w []byte) int { return cap(l.line) - cap(w) }
	sh.line = append(sh.line[:0], l.line...)
	sh.words, sh.dstArg, sh.devArg = sh.words[:0], dstArg, -1
	for i, w := range l.args {
		sh.words = append(sh.words, [2]int32{int32(at(w)), int32(at(w) + len(w))})
		if l.req.dev != nil && at(w) == at(l.req.dev) {
			sh.devArg = i
		}
	}
	if l.req.dev != nil && sh.devArg < 0 {
		return
	}
	sh.req = l.req
	sh.req.dev = nil // a view into the line
	sh.cw = l.cw
	sh.cw.w, sh.cw.rest = nil, nil
	sh.ok = true
}

// parse parses line into c as the remembered shape with another
// destination; false if line is not of that shape.
func (sh *lineShape) parse(c *aheadChunk, line []byte) bool {
	if !sh.ok {
		return false
	}
	from, to := int(sh.words[sh.dstArg][0]), int(sh.words[sh.dstArg][1])
	if len(line) <= from || !bytes.Equal(line[:from], sh.line[:from]) {
		return false
	}
	end := from
	for end < len(line) && dstChars[line[end]] {
		end++
	}
	if end == len(line) || class[line[end]] != blank || !bytes.Equal(line[end:], sh.line[to:]) {
		return false
	}
	dst := line[from:end]
	if bytes.IndexByte(dst, ':') < 0 { // its characters are dstChars
		return false
	}
	p, ok := parsePrefixFast(dst)
	if !ok {
		return false // the full parse words its error
	}
	shift := int32(end - to)
	at := len(c.args)
	for i, w := range sh.words {
		switch {
		case i == sh.dstArg:
			c.args = append(c.args, dst)
		case i > sh.dstArg:
			c.args = append(c.args, line[w[0]+shift:w[1]+shift])
		default:
			c.args = append(c.args, line[w[0]:w[1]])
		}
	}
	c.lines = slices.Grow(c.lines, 1)[:len(c.lines)+1]
	l := &c.lines[len(c.lines)-1]
	// every field of the line set (a reused chunk holds an old one)
	l.line, l.args, l.splitErr, l.route, l.perr, l.tooLong = line, c.args[at:len(c.args):len(c.args)], nil, true, nil, false
	l.cw = sh.cw
	l.cw.w, l.cw.rest = l.args[sh.dstArg-2], l.args[sh.dstArg-1:]
	l.req = sh.req
	l.req.dst = p
	if sh.devArg >= 0 {
		l.req.dev = l.args[sh.devArg]
	}
	return true
}

// dstWord: w is a destination's word of the shape, an address's
// characters with a ':' among them (so no keyword, no route type).
func dstWord(w []byte) bool {
	for _, b := range w {
		if !dstChars[b] {
			return false
		}
	}
	return bytes.IndexByte(w, ':') >= 0
}

var dstChars = func() (c [256]bool) {
	for _, b := range []byte("0123456789abcdefABCDEF:./") {
		c[b] = true
	}
	return c
}()
