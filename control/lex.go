package control

// splitLine splits a command line into words the way iproute2's batch mode
// does (getcmdline and makeargs): a '#' starts a comment, words are
// separated by blanks, and a word that begins with a quote runs to the
// matching quote. The words are views into line; args is reused.
func splitLine(line []byte, args [][]byte) ([][]byte, error) {
	args = args[:0]
	i := 0
	for i < len(line) {
		c := line[i]
		switch {
		case c == '#':
			return args, nil
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(line) && line[j] != c {
				j++
			}
			if j == len(line) {
				return args, errUnterminated
			}
			args = append(args, line[i+1:j])
			i = j + 1
		default:
			j := i
			for j < len(line) {
				d := line[j]
				if d == ' ' || d == '\t' || d == '\r' || d == '\n' {
					break
				}
				j++
			}
			args = append(args, line[i:j])
			i = j
		}
	}
	return args, nil
}

// quoteArgs joins command-line arguments into one line that splitLine
// turns back into the same words.
func quoteArgs(args []string) []byte {
	var b []byte
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		plain := a != ""
		for j := 0; j < len(a); j++ {
			if c := a[j]; c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '#' || c == '\n' || c == '\r' {
				plain = false
			}
		}
		switch {
		case plain:
			b = append(b, a...)
		case !containsByte(a, '"'):
			b = append(append(append(b, '"'), a...), '"')
		default:
			b = append(append(append(b, '\''), a...), '\'')
		}
	}
	return b
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// matches reports whether word is an abbreviation of keyword, as
// iproute2's matches(): a non-empty prefix of it.
func matches(word []byte, keyword string) bool {
	return len(word) > 0 && len(word) <= len(keyword) && string(word) == keyword[:len(word)]
}

// is reports whether word is exactly keyword.
func is(word []byte, keyword string) bool { return string(word) == keyword }
