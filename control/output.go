package control

import (
	"bufio"
	"strconv"
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

// jsonArray starts the array a -j show prints, or returns nil without -j.
func (s *session) jsonArray() *jsonw {
	if !s.opt.json {
		return nil
	}
	j := &jsonw{w: s.out, pretty: s.opt.pretty}
	j.startArray()
	return j
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

// metrics writes a route's "metrics" (its MTU, if it has one).
func (j *jsonw) metrics(mtu uint32) {
	if mtu == 0 {
		return
	}
	j.name("metrics")
	j.startArray()
	j.startObject()
	j.uint("mtu", uint64(mtu))
	j.endObject()
	j.endArray()
}

// arrayStr writes a JSON array value of strings (e.g. flags).
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
