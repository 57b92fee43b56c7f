package control

import (
	"bytes"
	"net/netip"
	"slices"
)

// lineShape is the last route line the read-ahead parsed in full, kept so
// that the next line, when it differs from it only in its destination (a
// table's batch: `route add PREFIX via A dev D table T` a line), is parsed
// by comparing bytes and reading one prefix. Such a line's words are the
// same words at the same places, so they parse to the same request with
// another destination: the destination is the one word the parse reads
// for its value alone, and a word with a ':' is never a keyword.
//
// A shape that is a plain `route add` (one path, no expiry) goes further:
// its lines after the first in a chunk carry only their destination and
// name that first, their template (tmpl), and the session adds a run of
// them at once (runShaped).
type lineShape struct {
	ok     bool
	add    bool       // a route add that runShaped takes
	tmpl   int        // the template's index + 1 in the chunk being filled, 0 for none
	line   []byte     // the line, a copy
	words  [][2]int32 // each word's start and end in line
	dstArg int        // the destination's word; the object's is two before
	devArg int        // the word req.dev is, or -1
	req    routeReq
	cw     cmdWords // its words classified, but for w and rest (views)
}

// remember keeps l, a line parse parsed in full (the chunk's last), as
// the shape of the next if it is a route change with one path whose
// destination is the first word after its command; add if the command is
// add.
func (sh *lineShape) remember(c *aheadChunk, l *aheadLine, add bool) {
	sh.ok, sh.tmpl = false, 0
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
	if sh.add = add && l.req.expires < 0; sh.add {
		sh.tmpl = len(c.lines)
	}
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
	if sh.tmpl != 0 {
		if l := &c.lines[len(c.lines)-1]; l.tmpl == sh.tmpl {
			l.to++ // the run goes on
		} else {
			c.lines = slices.Grow(c.lines, 1)[:len(c.lines)+1]
			l = &c.lines[len(c.lines)-1]
			l.line, l.args, l.splitErr, l.tooLong, l.tmpl, l.from, l.to = nil, nil, nil, false, sh.tmpl, len(c.dsts), len(c.dsts)+1
		}
		c.dsts = append(c.dsts, p)
		c.texts = append(c.texts, line)
		return true
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
	l.line, l.args, l.splitErr, l.route, l.perr, l.tooLong, l.tmpl = line, c.args[at:len(c.args):len(c.args)], nil, true, nil, false, 0
	l.cw = sh.cw
	l.cw.w, l.cw.rest = l.args[sh.dstArg-2], l.args[sh.dstArg-1:]
	l.req = sh.req
	l.req.dst = p
	if sh.devArg >= 0 {
		l.req.dev = l.args[sh.devArg]
	}
	if sh.add {
		sh.tmpl = len(c.lines) // the chunk's first of the shape
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

// runShaped runs l, a run of lines shaped after a template (a route
// add): their routes are the template's with their own destinations,
// checked and made once (routeTarget, routeMake) and added together
// (AddEach), as many at a time as the pacer lets go between its looks at
// the clock. A line that cannot go so, or that fails, runs as the session
// runs any line, so that it fails as it would have. It reports, as
// outcome does, whether the batch stops and with what code.
func (s *Session) runShaped(c *aheadChunk, l *aheadLine, status *int) (int, bool) {
	tm := &c.lines[l.tmpl-1]
	for i := l.from; i < l.to; {
		end := l.to
		if s.pace != nil {
			end = min(end, i+paceEvery-s.line%paceEvery)
		}
		n := s.addShaped(tm, c.dsts[i:end], c.texts[i:end])
		if n > 0 {
			s.line += n
			s.step()
			i += n
		}
		if i == end {
			continue
		}
		s.line++
		e := s.exec(c.texts[i])
		s.step()
		if code, stop := s.outcome(e, status); stop {
			return code, true
		}
		i++
	}
	return 0, false
}

// addShaped adds the routes that tm, a template parsed ahead, makes with
// each of dsts for its destination, as their lines (texts) would one
// after another, until one cannot be added so; it returns how many it
// added. With a state file each line is recorded, as execWords records
// it.
func (s *Session) addShaped(tm *aheadLine, dsts []netip.Prefix, texts [][]byte) int {
	if s.adopt != nil {
		return 0 // each line's route is given to its feed
	}
	if s.rec != nil {
		s.rec.Enter()
		s.did.reset()
	}
	req := tm.req
	req.dst = dsts[0]
	tid, t, l, err := s.routeTarget(&req)
	if err != nil {
		return 0
	}
	rt := &s.shaped
	x, err := s.routeMake(&req, l, tid, t, rt)
	if err != nil {
		return 0
	}
	// a route to the gateway changes what the next line's check finds
	if gw := rt.Nexthop.Gateway; gw.IsValid() {
		for j, d := range dsts {
			if d.Contains(gw) {
				dsts = dsts[:j+1]
				break
			}
		}
	}
	n, _ := x.AddEach(*rt, dsts) // the line that failed fails again, on its own
	for j, d := range dsts[:n] {
		s.routes.changed(d)
		if s.rec != nil {
			s.record(texts[j], tm.args) // its words are the template's but one
		}
	}
	return n
}
