package control

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
