package fib6

import "testing"

// BenchmarkChurn is the route storm's writer in fib6 alone: 1,000
// prefixes of the full table deleted, then added back, in one transaction
// per chunk of each. ns/op is per change.
func BenchmarkChurn(b *testing.B) {
	ps := realTable(b)
	t := loadFib6(b, ps)
	const chunk = 1000
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 2 * chunk {
		part := ps[(i/2)%(len(ps)-chunk):][:chunk]
		x := t.Begin()
		for _, p := range part {
			if _, err := x.Delete(Match{Dst: p}); err != nil {
				b.Fatal(err)
			}
		}
		x.Commit()
		x = t.Begin()
		for _, p := range part {
			if err := x.Add(Route{Dst: p, Attrs: benchRoute}); err != nil {
				b.Fatal(err)
			}
		}
		x.Commit()
	}
}
