package control

import (
	"bufio"
	"bytes"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"
)

// jsonw writes JSON the way iproute2's json_writer does, so that `-j` and
// `-j -p` output is byte for byte what `ip` prints.
type jsonw struct {
	w      *bufio.Writer
	pretty bool
	depth  int
	sep    byte
}

func (j *jsonw) eor() {
	if j.sep != 0 {
		j.w.WriteByte(j.sep)
	}
	j.sep = ','
}

func (j *jsonw) eol() {
	if !j.pretty {
		return
	}
	j.w.WriteByte('\n')
	for i := 0; i < j.depth; i++ {
		j.w.WriteString("    ")
	}
}

func (j *jsonw) begin(c byte) {
	j.eor()
	j.w.WriteByte(c)
	j.depth++
	j.sep = 0
}

func (j *jsonw) startObject() { j.begin('{') }

func (j *jsonw) endObject() {
	j.depth--
	if j.sep != 0 {
		j.eol()
	}
	j.w.WriteByte('}')
	j.sep = ','
}

func (j *jsonw) startArray() {
	j.begin('[')
	if j.pretty {
		j.w.WriteByte(' ')
	}
}

func (j *jsonw) endArray() {
	j.depth--
	if j.pretty && j.sep != 0 {
		j.w.WriteByte(' ')
	}
	j.w.WriteByte(']')
	j.sep = ','
}

func (j *jsonw) name(k string) {
	j.eor()
	j.eol()
	j.sep = 0
	j.quote(k)
	j.w.WriteByte(':')
	if j.pretty {
		j.w.WriteByte(' ')
	}
}

func (j *jsonw) str(k, v string) {
	j.name(k)
	j.eor()
	j.quote(v)
}

func (j *jsonw) uint(k string, v uint64) {
	j.name(k)
	j.eor()
	var b [20]byte
	j.w.Write(strconv.AppendUint(b[:0], v, 10))
}

func (j *jsonw) int(k string, v int64) {
	j.name(k)
	j.eor()
	var b [20]byte
	j.w.Write(strconv.AppendInt(b[:0], v, 10))
}

// strings writes a JSON array value of strings (e.g. flags).
func (j *jsonw) strings(k string, vs []string) {
	j.name(k)
	j.startArray()
	for _, v := range vs {
		j.eor()
		j.quote(v)
	}
	j.endArray()
}

func (j *jsonw) quote(s string) {
	w := j.w
	w.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			w.WriteString(`\"`)
		case c == '\\':
			w.WriteString(`\\`)
		case c == '\n':
			w.WriteString(`\n`)
		case c == '\t':
			w.WriteString(`\t`)
		case c < 0x20:
			w.WriteString(`\u00`)
			w.WriteByte("0123456789abcdef"[c>>4])
			w.WriteByte("0123456789abcdef"[c&15])
		case c < utf8.RuneSelf:
			w.WriteByte(c)
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			w.WriteString(s[i : i+n])
			i += n
			continue
		}
		i++
	}
	w.WriteByte('"')
}

// raw writes a value as given (a number, null) after a name.
func (j *jsonw) raw(v string) {
	j.eor()
	j.w.WriteString(v)
}

// null writes a flag as print_null does: the name and null.
func (j *jsonw) null(k string) {
	j.name(k)
	j.raw("null")
}

// printer prints an object in text or in JSON from the same calls, as
// iproute2 prints both from one print_*(PRINT_ANY, key, fmt, value): in
// text the value goes through format, whose one verb (%s, %d) stands for
// it (a format without a verb prints alone, an empty one prints nothing:
// a JSON-only piece); in JSON the key and value are written. Objects and
// arrays are JSON's alone; text says what it needs through text().
type printer struct {
	w   *bufio.Writer
	j   *jsonw // nil: text
	buf [64]byte
	// one joins a record's lines under -oneline (nil: none), w writing
	// to it; endRecord ends a record
	one *joiner
}

func (s *Session) newPrinter() printer {
	p := printer{w: s.out}
	if s.opt.JSON {
		p.j = &jsonw{w: s.out, pretty: s.opt.Pretty}
	}
	return p
}

// recordPrinter is newPrinter for a show whose records -oneline prints
// a line each (links, addresses: ipaddress.c's _SL_), which calls
// endRecord after each. JSON has no lines, -brief's records are lines.
func (s *Session) recordPrinter() printer {
	p := s.newPrinter()
	if s.opt.Oneline && !s.opt.JSON && !s.opt.Brief {
		p.one = &joiner{out: s.out}
		p.w = bufio.NewWriterSize(p.one, 512)
	}
	return p
}

// endRecord ends a record: under -oneline, its last newline is one.
func (p *printer) endRecord() {
	if p.one == nil {
		return
	}
	_ = p.w.Flush() // the joiner takes everything
	p.one.end()
}

// joiner writes a record on one line as ip -oneline does: each newline
// but the record's last becomes "\" (ip's _SL_), so the line goes on.
type joiner struct {
	out  *bufio.Writer
	held bool // a newline, a "\" if more of the record comes
}

func (j *joiner) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		if j.held {
			j.out.WriteByte('\\')
			j.held = false
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			j.out.Write(b)
			break
		}
		j.out.Write(b[:i])
		j.held, b = true, b[i+1:]
	}
	return n, nil
}

// end writes the record's last newline.
func (j *joiner) end() {
	if j.held {
		j.out.WriteByte('\n')
		j.held = false
	}
}

func (p *printer) json() bool { return p.j != nil }

// begin and end wrap a show's objects: JSON's outer array.
func (p *printer) begin() {
	if p.j != nil {
		p.j.startArray()
	}
}

func (p *printer) end() {
	if p.j != nil {
		p.j.endArray()
		p.w.WriteByte('\n')
	}
}

// text prints s in text only (PRINT_FP).
func (p *printer) text(s string) {
	if p.j == nil {
		p.w.WriteString(s)
	}
}

// textf prints v through format in text.
func (p *printer) textf(format string, v string) {
	i := strings.IndexByte(format, '%')
	if i < 0 {
		p.w.WriteString(format)
		return
	}
	p.w.WriteString(format[:i])
	p.w.WriteString(v)
	p.w.WriteString(format[i+2:])
}

// column prints a value as ip's "%-Ns " does in text (-brief's
// columns): padded to width, then a space; in JSON, as str.
func (p *printer) column(key, v string, width int) {
	if p.j != nil {
		p.j.str(key, v)
		return
	}
	p.w.WriteString(v)
	for n := len(v); n < width; n++ {
		p.w.WriteByte(' ')
	}
	p.w.WriteByte(' ')
}

// flag prints a flag that is set: its word in text, key true in JSON
// (print_bool).
func (p *printer) flag(key, format string) {
	if p.j != nil {
		p.j.name(key)
		p.j.raw("true")
		return
	}
	p.w.WriteString(format)
}

// bytes prints a string value given as bytes (scratch; not kept).
func (p *printer) bytes(key, format string, v []byte) { p.str(key, format, str(v)) }

func (p *printer) str(key, format, v string) {
	if p.j != nil {
		p.j.str(key, v)
		return
	}
	p.textf(format, v)
}

func (p *printer) uint(key, format string, v uint64) {
	if p.j != nil {
		p.j.uint(key, v)
		return
	}
	p.textf(format, str(strconv.AppendUint(p.buf[:0], v, 10)))
}

func (p *printer) int(key, format string, v int64) {
	if p.j != nil {
		p.j.int(key, v)
		return
	}
	p.textf(format, str(strconv.AppendInt(p.buf[:0], v, 10)))
}

// number prints a number already written out (a fraction), unquoted.
func (p *printer) number(key, format, v string) {
	if p.j != nil {
		p.j.name(key)
		p.j.raw(v)
		return
	}
	p.textf(format, v)
}

func (p *printer) addr(key, format string, a netip.Addr) {
	p.bytes(key, format, a.AppendTo(p.buf[:0]))
}

// null prints a flag as print_null does: format in text, key: null in
// JSON.
func (p *printer) null(key, format string) {
	if p.j != nil {
		p.j.null(key)
		return
	}
	p.w.WriteString(format)
}

// strings prints a list (flags): each through format in text, an array
// of strings (empty for none) in JSON.
func (p *printer) strings(key, format string, vs []string) {
	if p.j != nil {
		p.j.strings(key, vs)
		return
	}
	for _, v := range vs {
		p.textf(format, v)
	}
}

// openObject starts a JSON object, named key inside an object, or an
// element of an array for "".
func (p *printer) openObject(key string) {
	if p.j != nil {
		if key != "" {
			p.j.name(key)
		}
		p.j.startObject()
	}
}

func (p *printer) closeObject() {
	if p.j != nil {
		p.j.endObject()
	}
}

// openArray starts a JSON array named key.
func (p *printer) openArray(key string) {
	if p.j != nil {
		p.j.name(key)
		p.j.startArray()
	}
}

func (p *printer) closeArray() {
	if p.j != nil {
		p.j.endArray()
	}
}

// metrics prints a route's MTU, if it has one: in JSON its "metrics".
func (p *printer) metrics(mtu uint32) {
	if mtu == 0 {
		return
	}
	p.openArray("metrics")
	p.openObject("")
	p.uint("mtu", " mtu %d", uint64(mtu))
	p.closeObject()
	p.closeArray()
}
