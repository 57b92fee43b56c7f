package control

// chunks are lines kept in chunks of chunkSize bytes or more: the routes
// a save holds back (to write after the nexthop objects, or after the
// rules), grown without being copied as one slice is as it grows (a
// saved table of 100,000 routes spent a third of its time copying so).
type chunks [][]byte

const chunkSize = 256 << 10

// add appends line (with its '\n') whole to the last chunk, or a new one.
func (c *chunks) add(line []byte) {
	n := len(*c)
	if n == 0 || cap((*c)[n-1])-len((*c)[n-1]) < len(line) {
		*c = append(*c, make([]byte, 0, max(chunkSize, len(line))))
		n++
	}
	(*c)[n-1] = append((*c)[n-1], line...)
}

// lines emits each line of c.
func (sv *saver) chunkLines(obj string, c chunks) {
	for _, b := range c {
		sv.lines(obj, b)
	}
}
