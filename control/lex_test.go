package control

import (
	"reflect"
	"testing"
	"urouter/control/wire"
)

func TestSplitLine(t *testing.T) {
	for line, want := range map[string][]string{
		"route add 2001:db8::/32 dev d0\n": {"route", "add", "2001:db8::/32", "dev", "d0"},
		"  route\tshow  # all of it\n":     {"route", "show"},
		"# only a comment":                 nil,
		`link add "my link" type dummy`:    {"link", "add", "my link", "type", "dummy"},
		`a 'b c'd e`:                       {"a", "b c", "d", "e"},
		"route add x#y":                    {"route", "add", "x"},
		"":                                 nil,
	} {
		got, err := splitLine([]byte(line), nil)
		if err != nil {
			t.Errorf("%q: %v", line, err)
		}
		var gs []string
		for _, g := range got {
			gs = append(gs, string(g))
		}
		if !reflect.DeepEqual(gs, want) {
			t.Errorf("%q: %q, want %q", line, gs, want)
		}
	}
	if _, err := splitLine([]byte(`a "b # c"`), nil); err != errUnterminated {
		t.Errorf("a comment inside quotes ends the line, as in iproute2: %v", err)
	}
	for _, args := range [][]string{{"route", "add", "a b", "x"}, {"it's", `say "hi"`}, {""}} {
		got, _ := splitLine(wire.QuoteArgs(args), nil)
		var gs []string
		for _, g := range got {
			gs = append(gs, string(g))
		}
		if len(args) == 1 && args[0] == "" {
			continue // an empty word cannot be quoted back: ip drops it too
		}
		if !reflect.DeepEqual(gs, args) {
			t.Errorf("wire.QuoteArgs(%q) splits back to %q", args, gs)
		}
	}
}

// TestWordEnd: where the record of a line puts what the router chose,
// after the command word, wherever that word is.
func TestWordEnd(t *testing.T) {
	for _, c := range []struct {
		line string
		k    int
		want string // the line up to the end of word k
	}{
		{"nexthop add via fe80::1 dev d0", 1, "nexthop add"},
		{"-6 nexthop add dev t0", 2, "-6 nexthop add"},
		{"  nh\t a dev t0", 1, "  nh\t a"},
		{`nexthop "add" dev t0`, 1, `nexthop "add"`},
		{`a 'b c'd e`, 2, `a 'b c'd`},
		{"link add", 2, ""},
		{`link "add`, 1, ""},
		{"link add # x y", 2, ""},
	} {
		line := []byte(c.line)
		args, _ := splitLine(line, nil) // an unterminated quote: the words before it
		i := wordEnd(line, args, c.k)
		got := ""
		if i >= 0 {
			got = c.line[:i]
		}
		if got != c.want {
			t.Errorf("wordEnd(%q, %d): %q, want %q", c.line, c.k, got, c.want)
		}
	}
}
