package control

import (
	"reflect"
	"testing"
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
		got, _ := splitLine(quoteArgs(args), nil)
		var gs []string
		for _, g := range got {
			gs = append(gs, string(g))
		}
		if len(args) == 1 && args[0] == "" {
			continue // an empty word cannot be quoted back: ip drops it too
		}
		if !reflect.DeepEqual(gs, args) {
			t.Errorf("quoteArgs(%q) splits back to %q", args, gs)
		}
	}
}
