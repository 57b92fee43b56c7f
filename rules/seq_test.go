package rules

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSeqPersists: random inserts, removes and replaces, in transactions
// of random length, agree with a plain slice; and every snapshot
// published keeps what it held while later transactions change theirs.
func TestSeqPersists(t *testing.T) {
	rnd := rand.New(rand.NewPCG(8, 9))
	var model []*entry
	x := editor{}
	type snap struct {
		s    seq
		want []*entry
	}
	var snaps []snap
	for txn := uint64(1); txn <= 300; txn++ {
		x = editor{seq: x.seq, gen: txn}
		for n := rnd.IntN(20); n > 0; n-- {
			e := &entry{Rule: Rule{Pref: uint32(rnd.IntN(1000))}}
			switch op := rnd.IntN(4); {
			case op < 2 || len(model) == 0:
				i := rnd.IntN(len(model) + 1)
				x.insert(i, e)
				model = slices.Insert(model, i, e)
			case op == 2:
				i := rnd.IntN(len(model))
				x.remove(i)
				model = slices.Delete(model, i, i+1)
			default:
				i := rnd.IntN(len(model))
				x.replace(i, e)
				model[i] = e
			}
		}
		x.compact()
		if !slices.Equal(x.flat(), model) || x.len() != len(model) {
			t.Fatalf("txn %d: the seq holds %d rules, the model %d", txn, x.len(), len(model))
		}
		for i := range model {
			if x.at(i) != model[i] {
				t.Fatalf("txn %d: at(%d) differs", txn, i)
			}
		}
		snaps = append(snaps, snap{x.seq, slices.Clone(model)})
	}
	for i, s := range snaps {
		if !slices.Equal(s.s.flat(), s.want) {
			t.Fatalf("snapshot %d changed after it was published", i)
		}
	}
}

// TestSeqSearch: search finds the first rule of a preference or above,
// as a walk does, in blocks of every size.
func TestSeqSearch(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{0, 1, 5, 64, 65, 500} {
		var es []*entry
		for i := 0; i < n; i++ {
			es = append(es, &entry{Rule: Rule{Pref: uint32(rnd.IntN(100))}})
		}
		slices.SortStableFunc(es, func(a, b *entry) int { return cmpU32(a.Pref, b.Pref) })
		x := editor{gen: 1}
		for i, e := range es {
			x.insert(i, e)
		}
		for p := uint32(0); p <= 101; p++ {
			want := 0
			for want < n && es[want].Pref < p {
				want++
			}
			if got := x.search(p); got != want {
				t.Fatalf("%d rules: search(%d) = %d, want %d", n, p, got, want)
			}
		}
	}
}
