package fib6

import (
	"testing"
	"unsafe"
)

// trieStats is where a trie's bytes go.
type trieStats struct {
	dense, nodes, tails, locs, entries int
	denseBytes, nodeBytes, tailBytes   int
	locBytes                           int
}

func (t *trie) stats() trieStats {
	var s trieStats
	var walk func(e unsafe.Pointer)
	walk = func(e unsafe.Pointer) {
		switch tagOf(e) {
		case tagDense:
			d := asDense(e)
			s.dense++
			s.denseBytes += int(unsafe.Sizeof(dnode{}))
			if d.loc != nil {
				s.locs++
			}
			for _, k := range d.slots {
				if isKid(k) {
					walk(k)
				}
			}
		case tagNode:
			n := asNode(e)
			s.nodes++
			s.entries += n.entries()
			s.nodeBytes += int(cnodeSize) + 8*capOf[n.cls] + 16
			if l := n.cold().loc; l != nil {
				s.locs++
				s.locBytes += int(unsafe.Sizeof(locals{})) + 8*cap(l.vals)
			}
			for i := 0; i < n.entries(); i++ {
				if k := n.entryAt(i); isKid(k) {
					walk(k)
				}
			}
		case tagTail:
			s.tails++
			s.tailBytes += int(unsafe.Sizeof(tail{}))
		}
	}
	walk(denseEntry(t.root.Load()))
	return s
}

// BenchmarkTrieStats walks the real table's trie and reports where its
// bytes go: node counts and bytes per prefix, by kind of node.
func BenchmarkTrieStats(b *testing.B) {
	ps := loadRealTable(b)
	tab := loadFib6(b, ps)
	var s trieStats
	for b.Loop() {
		s = tab.trie.stats()
	}
	n := float64(len(ps))
	b.ReportMetric(float64(s.dense), "dense-nodes")
	b.ReportMetric(float64(s.nodes), "nodes")
	b.ReportMetric(float64(s.tails), "tails")
	b.ReportMetric(float64(s.locs), "locals")
	b.ReportMetric(float64(s.denseBytes+s.nodeBytes+s.tailBytes+s.locBytes)/n, "trie-B/prefix")
	b.ReportMetric(float64(s.nodeBytes)/n, "node-B/prefix")
	b.ReportMetric(float64(s.entries)/float64(max(s.nodes, 1)), "entries/node")
}
