package rules

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// universe draws rules and packets from a few values per field, so that
// rules overlap, nest and match often.
type universe struct{ rnd *rand.Rand }

var links = []string{"", "a", "b", "c", "gone"}

func (u universe) prefix() netip.Prefix {
	base := [16]byte{0x20, 0x01, 0x0d, 0xb8, byte(u.rnd.IntN(3)), byte(u.rnd.IntN(3)), 15: byte(u.rnd.IntN(4))}
	bits := []int{0, 16, 40, 48, 64, 127, 128}[u.rnd.IntN(7)]
	return netip.PrefixFrom(netip.AddrFrom16(base), bits).Masked()
}

func (u universe) ports() PortRange {
	if u.rnd.IntN(2) == 0 {
		return PortRange{}
	}
	lo := uint16(u.rnd.IntN(8)) * 1000
	return PortRange{lo, lo + uint16(u.rnd.IntN(3000))}
}

func (u universe) rule() Rule {
	r := u.rnd
	x := Rule{Pref: uint32(r.IntN(64)), Action: ToTable, Table: uint32(1 + r.IntN(4))}
	pick := func(n int) bool { return r.IntN(n) == 0 }
	if pick(2) {
		x.Src = u.prefix()
	}
	if pick(2) {
		x.Dst = u.prefix()
	}
	if pick(3) {
		x.Iif = links[r.IntN(len(links))]
	}
	if pick(4) {
		x.Oif = links[r.IntN(len(links))]
	}
	if pick(3) {
		x.IPProto = []uint8{6, 17, 58}[r.IntN(3)]
	}
	x.Sport, x.Dport = u.ports(), u.ports()
	if pick(4) {
		x.DSField = uint8(r.IntN(4)) << 2
	}
	x.Invert = pick(6)
	if pick(8) {
		x.L3mdev, x.Table = true, 0
	}
	return x
}

func (u universe) packet() Packet {
	r := u.rnd
	var p Packet
	p.Dst = u.prefix().Addr().As16()
	p.Dst[15] = byte(r.IntN(4))
	if r.IntN(5) > 0 {
		p.Src = u.prefix().Addr().As16()
		p.Src[15] = byte(r.IntN(4))
	}
	p.Iif, p.Oif = int32(r.IntN(5)), int32(r.IntN(4))
	p.Proto = []uint8{6, 17, 58, 0}[r.IntN(4)]
	p.Sport, p.Dport = uint16(r.IntN(11000)), uint16(r.IntN(11000))
	p.DSField = uint8(r.IntN(16))
	if r.IntN(3) == 0 {
		p.L3Table = uint32(10 + r.IntN(2))
	}
	return p
}

var testLinks = map[string]int32{"a": 1, "b": 2, "c": 3}

func resolveTest(name string) int32 { return testLinks[name] }

func setOf(rs []Rule) *Set {
	es := make([]*entry, len(rs))
	for i := range rs {
		es[i] = newEntry(&rs[i], resolveTest)
	}
	return newSet(seqOf(es), 1)
}

// agree checks that the classifier's walk and the linear one find the
// same rules, from every start, for packet p.
func agree(t testing.TB, s *Set, p *Packet) {
	var c, l Cursor
	c.Reset(s, p)
	l.Reset(s, p)
	l.n = -1
	for i := 0; i <= s.Len(); i++ {
		if got, want := c.Next(i), l.Next(i); got != want {
			t.Fatalf("Next(%d) = %d, the linear walk says %d, for %+v in %d rules", i, got, want, *p, s.Len())
		}
	}
}

// TestClassifierAgrees is the classifier against the plain walk, on random
// rule sets of every size and random packets.
func TestClassifierAgrees(t *testing.T) {
	u := universe{rand.New(rand.NewPCG(1, 2))}
	for round := 0; round < 300; round++ {
		n := []int{1, 5, 9, 40, 64, 65, 130, 700}[round%8]
		rs := make([]Rule, n)
		for i := range rs {
			rs[i] = u.rule()
		}
		s := setOf(rs)
		if n > linearMax && s.cls == nil {
			t.Fatalf("%d random rules: no classifier", n)
		}
		for k := 0; k < 60; k++ {
			p := u.packet()
			agree(t, s, &p)
		}
	}
}

// FuzzClassifier draws rule sets and packets from fuzzed bytes.
func FuzzClassifier(f *testing.F) {
	f.Add(uint64(1), uint8(20))
	f.Add(uint64(7), uint8(200))
	f.Fuzz(func(t *testing.T, seed uint64, n uint8) {
		u := universe{rand.New(rand.NewPCG(seed, uint64(n)))}
		rs := make([]Rule, int(n)+1)
		for i := range rs {
			rs[i] = u.rule()
		}
		s := setOf(rs)
		for k := 0; k < 20; k++ {
			p := u.packet()
			agree(t, s, &p)
		}
	})
}
