package fib6

import (
	"testing"
	"unsafe"
)

// TestTrieStats prints where the real table's bytes go (go test -v).
func TestTrieStats(t *testing.T) {
	ps := loadRealTable(t)
	tab := loadFib6(t, ps)
	var dense, nodes, tails, locs, locBytes, entries, nodeBytes int
	classes := map[int]int{}
	var walk func(e unsafe.Pointer)
	walk = func(e unsafe.Pointer) {
		switch tagOf(e) {
		case tagDense:
			d := asDense(e)
			dense++
			if d.loc != nil {
				locs++
			}
			for _, s := range d.slots {
				if isKid(s) {
					walk(s)
				}
			}
		case tagNode:
			n := asNode(e)
			nodes++
			classes[capOf[n.cls]]++
			entries += n.entries()
			nodeBytes += int(cnodeSize) + 8*capOf[n.cls] + 16
			if l := n.cold().loc; l != nil {
				locs++
				locBytes += int(unsafe.Sizeof(locals{})) + 8*cap(l.vals)
			}
			for i := 0; i < n.entries(); i++ {
				if k := n.entryAt(i); isKid(k) {
					walk(k)
				}
			}
		case tagTail:
			tails++
		}
	}
	walk(denseEntry(tab.trie.root.Load()))
	t.Logf("dense %d (%d B), nodes %d (%d B, %d entries), tails %d (%d B), locals %d (%d B)",
		dense, dense*int(unsafe.Sizeof(dnode{})), nodes, nodeBytes, entries, tails, tails*int(unsafe.Sizeof(tail{})), locs, locBytes)
	t.Log("node capacity classes:", classes)
}
