package rules

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"
)

// list is a set in a short form: "pref:table" or "pref:goto>target",
// with "!" for an unresolved goto and "?" for a detached link.
func list(s *Set) string {
	var b []string
	for i := 0; i < s.Len(); i++ {
		r, st := s.Rule(i), s.State(i)
		x := fmt.Sprintf("%d:%d", r.Pref, r.Table)
		if r.Action == Goto {
			x = fmt.Sprintf("%d:goto>%d", r.Pref, r.Target)
		}
		if st.Unresolved {
			x += "!"
		}
		if st.IifDetached || st.OifDetached {
			x += "?"
		}
		b = append(b, x)
	}
	return strings.Join(b, " ")
}

func lookup(t uint32) Rule { return Rule{Action: ToTable, Table: t} }

func add(t *testing.T, g *Registry, r Rule, prefSet bool) error {
	t.Helper()
	x := g.Begin()
	defer x.Commit()
	_, err := x.Add(r, prefSet)
	return err
}

// mustAdd and mustDel are add and del that fail t on an error.
func mustAdd(t *testing.T, g *Registry, r Rule, prefSet bool) {
	t.Helper()
	if err := add(t, g, r, prefSet); err != nil {
		t.Fatal(err)
	}
}

func mustDel(t *testing.T, g *Registry, sel Selector) {
	t.Helper()
	if err := del(g, sel); err != nil {
		t.Fatal(err)
	}
}

func del(g *Registry, sel Selector) error {
	x := g.Begin()
	defer x.Commit()
	_, err := x.Delete(&sel)
	return err
}

// TestDefaultPref follows Linux's fib_default_rule_pref: one below the
// second rule's preference, or 0 (checked on Linux 6.18).
func TestDefaultPref(t *testing.T) {
	g := NewRegistry(resolveTest, 1)
	if got := list(g.Load()); got != "0:255 32766:254" {
		t.Fatalf("defaults: %s", got)
	}
	for _, tb := range []uint32{10, 11, 12} {
		mustAdd(t, g, lookup(tb), false)
	}
	if got := list(g.Load()); got != "0:255 32763:12 32764:11 32765:10 32766:254" {
		t.Errorf("three adds: %s", got)
	}

	g = NewRegistry(resolveTest, 1)
	mustAdd(t, g, Rule{Pref: 100, Action: ToTable, Table: 100}, true)
	mustAdd(t, g, lookup(10), false)
	if got := list(g.Load()); got != "0:255 99:10 100:100 32766:254" {
		t.Errorf("below 100: %s", got)
	}

	g = NewRegistry(resolveTest, 1)
	mustDel(t, g, Selector{PrefSet: true}) // pref 0
	mustAdd(t, g, lookup(10), false)
	mustAdd(t, g, lookup(11), false)
	if got := list(g.Load()); got != "0:10 32765:11 32766:254" {
		t.Errorf("without rule 0: %s", got)
	}

	// after a flush only rule 0 is left: every new rule takes 0, after
	// the rules of 0 already there, and the same rule twice is a duplicate
	g = NewRegistry(resolveTest, 1)
	x := g.Begin()
	x.DeleteWhere(func(r *Rule) bool { return r.Pref != 0 })
	x.Commit()
	mustAdd(t, g, lookup(10), false)
	mustAdd(t, g, lookup(11), false)
	if err := add(t, g, lookup(10), false); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("the same rule at 0 again: %v", err)
	}
	if got := list(g.Load()); got != "0:255 0:10 0:11" {
		t.Errorf("after flush: %s", got)
	}
}

// TestDuplicates: Linux's rule_exists compares a new rule's source,
// destination and tos only if it has them, never `not` or the goto
// target, and the protocol always.
func TestDuplicates(t *testing.T) {
	src := netip.MustParsePrefix("2001:db8::/32")
	g := NewRegistry(resolveTest, 1)
	mustAdd(t, g, Rule{Pref: 100, Src: src, Action: ToTable, Table: 10}, true)
	if err := add(t, g, Rule{Pref: 100, Action: ToTable, Table: 10}, true); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("from all after from %s: %v, want File exists", src, err)
	}
	if err := add(t, g, Rule{Pref: 100, Src: src, Invert: true, Action: ToTable, Table: 10}, true); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("not from: %v, want File exists", err)
	}
	if err := add(t, g, Rule{Pref: 100, Src: src, Action: ToTable, Table: 10, Protocol: 4}, true); err != nil {
		t.Errorf("another protocol: %v", err)
	}
	g = NewRegistry(resolveTest, 1)
	mustAdd(t, g, Rule{Pref: 100, Action: ToTable, Table: 10}, true)
	if err := add(t, g, Rule{Pref: 100, Src: src, Action: ToTable, Table: 10}, true); err != nil {
		t.Errorf("from %s after from all: %v (Linux takes it)", src, err)
	}
	mustAdd(t, g, Rule{Pref: 200, Action: Goto, Target: 300}, true)
	if err := add(t, g, Rule{Pref: 200, Action: Goto, Target: 400}, true); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("another goto target: %v, want File exists", err)
	}
	before := list(g.Load())
	for _, bad := range []Rule{
		{Pref: 300, Action: Goto, Target: 300},
		{Pref: 300, Action: ToTable},
		{Pref: 300, Action: ToTable, Table: 1, DSField: 0x11},
		{Pref: 300, Action: ToTable, Table: 1, Sport: PortRange{10, 65535}},
		{Pref: 300, Action: ToTable, Table: 1, Dport: PortRange{20, 10}},
	} {
		if err := add(t, g, bad, true); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%+v: %v, want Invalid argument", bad, err)
		}
	}
	if got := list(g.Load()); got != before {
		t.Errorf("refused adds changed the set: %s, was %s", got, before)
	}
}

// TestDeleteSelects: a delete removes the first rule, in order, that
// matches what it names; what it leaves out matches anything.
func TestDeleteSelects(t *testing.T) {
	g := NewRegistry(resolveTest, 1)
	a := netip.MustParsePrefix("2001:db8:1::/48")
	mustAdd(t, g, Rule{Pref: 100, Src: a, Action: ToTable, Table: 10}, true)
	mustAdd(t, g, Rule{Pref: 200, Src: a, Action: ToTable, Table: 20}, true)
	mustDel(t, g, Selector{Rule: Rule{Src: a}})
	if got := list(g.Load()); got != "0:255 200:20 32766:254" {
		t.Errorf("del from %s: %s", a, got)
	}
	if err := del(g, Selector{Rule: Rule{Table: 20}}); err != nil || list(g.Load()) != "0:255 32766:254" {
		t.Errorf("del table 20: %v, %s", err, list(g.Load()))
	}
	if err := del(g, Selector{Rule: Rule{Table: 20}}); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("del table 20 again: %v", err)
	}
	if err := del(g, Selector{}); err != nil || list(g.Load()) != "32766:254" {
		t.Errorf("del from all takes rule 0: %v, %s", err, list(g.Load()))
	}
}

// TestGotoResolves: a goto points at the first rule of its target's
// preference; while there is none it is unresolved, and skipped.
func TestGotoResolves(t *testing.T) {
	g := NewRegistry(resolveTest, 1)
	mustAdd(t, g, Rule{Pref: 100, Action: Goto, Target: 200}, true)
	if got := list(g.Load()); got != "0:255 100:goto>200! 32766:254" {
		t.Fatalf("goto without a target: %s", got)
	}
	mustAdd(t, g, Rule{Pref: 200, Action: ToTable, Table: 10}, true)
	mustAdd(t, g, Rule{Pref: 200, Action: ToTable, Table: 11}, true)
	s := g.Load()
	if s.State(1).Unresolved || s.Target(1) != 2 || s.Rule(2).Table != 10 {
		t.Fatalf("resolved: %s, target %d", list(s), s.Target(1))
	}
	mustDel(t, g, Selector{Rule: Rule{Pref: 200, Table: 10}, PrefSet: true})
	if s := g.Load(); s.Rule(s.Target(1)).Table != 11 {
		t.Errorf("the target gone, the next of its preference: %s", list(s))
	}
	mustDel(t, g, Selector{Rule: Rule{Pref: 200}, PrefSet: true})
	if got := list(g.Load()); got != "0:255 100:goto>200! 32766:254" {
		t.Errorf("no target left: %s", got)
	}
}

// TestRelink: a rule naming a link that does not exist is detached (it
// matches nothing) until the link comes, and again when it goes.
func TestRelink(t *testing.T) {
	links := map[string]int32{}
	g := NewRegistry(func(n string) int32 { return links[n] }, 1)
	mustAdd(t, g, Rule{Pref: 5, Iif: "t0", Action: ToTable, Table: 10}, true)
	p := Packet{Iif: 7}
	var c Cursor
	c.Reset(g.Load(), &p)
	if !g.Load().State(1).IifDetached || c.Why(1) == MissNone {
		t.Fatalf("iif t0 before t0 exists: %s, fails %v", list(g.Load()), c.Why(1))
	}
	links["t0"] = 7
	g.Relink()
	c.Reset(g.Load(), &p)
	if g.Load().State(1).IifDetached || c.Why(1) != MissNone {
		t.Errorf("t0 came: %s, fails %v", list(g.Load()), c.Why(1))
	}
	delete(links, "t0")
	g.Relink()
	if !g.Load().State(1).IifDetached {
		t.Errorf("t0 went: %s", list(g.Load()))
	}
}
