package fib6

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// FuzzTable decodes the input into a sequence of transactions of add,
// replace, append, delete and lookup, and checks each against the model.
// Prefixes come from a small pool derived from the input so that they nest
// and collide.
func FuzzTable(f *testing.F) {
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"))
	f.Add([]byte{0x20, 0x01, 0x0d, 0xb8, 48, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0xff, 0xfe, 0x80, 64})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 8 {
			return
		}
		seed := binary.LittleEndian.Uint64(data[:8])
		r := rand.New(rand.NewPCG(seed, 1))
		// the pool: prefixes built from the input's bytes
		var pool []netip.Prefix
		for i := 8; i+3 <= len(data) && len(pool) < 24; i += 3 {
			var b [16]byte
			b[0], b[1] = 0x20, 0x01
			b[2], b[3], b[4] = data[i], data[i+1], data[i+2]
			for j := 5; j < 16; j++ {
				b[j] = byte(r.UintN(256))
			}
			l := int(data[i+2]) % 129
			pool = append(pool, netip.PrefixFrom(netip.AddrFrom16(b), l).Masked())
		}
		if len(pool) == 0 {
			return
		}
		tab := newTable(7, nil)
		m := newRefTable()
		x := tab.Begin()
		for i, c := range data[8:] {
			rt := randRoute(r, nil)
			rt.Dst = pool[int(c)%len(pool)]
			if c&0x40 != 0 {
				rt.Src = pool[(int(c)+i)%len(pool)]
			} else {
				rt.Src = netip.Prefix{}
			}
			var got, want error
			switch c >> 6 & 3 {
			case 0:
				want, got = m.put(rt, modeAdd), x.Add(rt)
			case 1:
				want, got = m.put(rt, modeReplace), x.Replace(rt)
			case 2:
				want, got = m.put(rt, modeAppend), x.Append(rt)
			case 3:
				q := Match{Dst: rt.Dst, Src: rt.Src}
				_, want = m.del(q)
				_, got = x.Delete(q)
			}
			if !sameErr(got, want) {
				t.Fatalf("op %d on %v: got %v want %v", i, rt, got, want)
			}
			if c%5 == 0 {
				x.Commit()
				checkTable(t, tab, m, r)
				x = tab.Begin()
			}
		}
		x.Commit()
		checkTable(t, tab, m, r)
	})
}

// FuzzBulkLoad loads a table the input sizes into an empty table, in
// order or shuffled, bottom-up (with a change that settles the build where the input says,
// or none) and the incremental way, and churns both, against the model.
func FuzzBulkLoad(f *testing.F) {
	f.Add(uint64(1), uint16(3000), uint16(0xffff))
	f.Add(uint64(2), uint16(2100), uint16(2050))
	f.Add(uint64(3), uint16(900), uint16(10))
	f.Add(uint64(5), uint16(4000), uint16(3000))
	f.Add(uint64(7), uint16(2500), uint16(0xffff))
	f.Fuzz(func(t *testing.T, seed uint64, n, settle uint16) {
		settleAt := int(settle)
		if settleAt >= int(n%5000) {
			settleAt = -1
		}
		// odd seeds load in a random order
		checkBulkLoad(t, rand.New(rand.NewPCG(seed, 2)), int(n%5000), settleAt, 3, seed%2 == 1)
	})
}
