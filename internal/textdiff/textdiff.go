// Package textdiff tells two texts apart line by line, for tests that
// compare what two routers print.
package textdiff

import "strings"

// Lines is the lines of a missing from b ("- ") and of b not in a
// ("+ "), the first 20 of them.
func Lines(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var d []string
	for l := range ma {
		if !mb[l] {
			d = append(d, "- "+l)
		}
	}
	for l := range mb {
		if !ma[l] {
			d = append(d, "+ "+l)
		}
	}
	if len(d) > 20 {
		d = append(d[:20], "...")
	}
	return strings.Join(d, "\n")
}
