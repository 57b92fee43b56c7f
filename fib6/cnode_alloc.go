//lint:file-ignore U1000 a node's entries (e) and cold half (c) are reached by unsafe offsets from its cnode, never by name.

package fib6

import "unsafe"

// A compressed node is allocated with room for its entries right behind it,
// so that a lookup reads the vector and (for small nodes) the entry from the
// same cache line. Go has no variable-size structs, so there is one type per
// capacity class; the classes follow the allocator's size classes.

var capOf = [...]int{1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 192, 256}

type (
	cnode1 struct {
		cnode
		e [1]unsafe.Pointer
		c cnodeCold
	}
	cnode2 struct {
		cnode
		e [2]unsafe.Pointer
		c cnodeCold
	}
	cnode3 struct {
		cnode
		e [3]unsafe.Pointer
		c cnodeCold
	}
	cnode4 struct {
		cnode
		e [4]unsafe.Pointer
		c cnodeCold
	}
	cnode6 struct {
		cnode
		e [6]unsafe.Pointer
		c cnodeCold
	}
	cnode8 struct {
		cnode
		e [8]unsafe.Pointer
		c cnodeCold
	}
	cnode10 struct {
		cnode
		e [10]unsafe.Pointer
		c cnodeCold
	}
	cnode12 struct {
		cnode
		e [12]unsafe.Pointer
		c cnodeCold
	}
	cnode16 struct {
		cnode
		e [16]unsafe.Pointer
		c cnodeCold
	}
	cnode20 struct {
		cnode
		e [20]unsafe.Pointer
		c cnodeCold
	}
	cnode24 struct {
		cnode
		e [24]unsafe.Pointer
		c cnodeCold
	}
	cnode32 struct {
		cnode
		e [32]unsafe.Pointer
		c cnodeCold
	}
	cnode40 struct {
		cnode
		e [40]unsafe.Pointer
		c cnodeCold
	}
	cnode48 struct {
		cnode
		e [48]unsafe.Pointer
		c cnodeCold
	}
	cnode64 struct {
		cnode
		e [64]unsafe.Pointer
		c cnodeCold
	}
	cnode80 struct {
		cnode
		e [80]unsafe.Pointer
		c cnodeCold
	}
	cnode96 struct {
		cnode
		e [96]unsafe.Pointer
		c cnodeCold
	}
	cnode128 struct {
		cnode
		e [128]unsafe.Pointer
		c cnodeCold
	}
	cnode160 struct {
		cnode
		e [160]unsafe.Pointer
		c cnodeCold
	}
	cnode192 struct {
		cnode
		e [192]unsafe.Pointer
		c cnodeCold
	}
	cnode256 struct {
		cnode
		e [256]unsafe.Pointer
		c cnodeCold
	}
)

// classFor is the smallest capacity class with room for n entries.
func classFor(n int) uint8 {
	for c, k := range capOf {
		if k >= n {
			return uint8(c)
		}
	}
	return uint8(len(capOf) - 1)
}

// allocNode returns a zero node of class cls.
func allocNode(cls uint8) *cnode {
	var n *cnode
	switch capOf[cls] {
	case 1:
		n = &new(cnode1).cnode
	case 2:
		n = &new(cnode2).cnode
	case 3:
		n = &new(cnode3).cnode
	case 4:
		n = &new(cnode4).cnode
	case 6:
		n = &new(cnode6).cnode
	case 8:
		n = &new(cnode8).cnode
	case 10:
		n = &new(cnode10).cnode
	case 12:
		n = &new(cnode12).cnode
	case 16:
		n = &new(cnode16).cnode
	case 20:
		n = &new(cnode20).cnode
	case 24:
		n = &new(cnode24).cnode
	case 32:
		n = &new(cnode32).cnode
	case 40:
		n = &new(cnode40).cnode
	case 48:
		n = &new(cnode48).cnode
	case 64:
		n = &new(cnode64).cnode
	case 80:
		n = &new(cnode80).cnode
	case 96:
		n = &new(cnode96).cnode
	case 128:
		n = &new(cnode128).cnode
	case 160:
		n = &new(cnode160).cnode
	case 192:
		n = &new(cnode192).cnode
	default:
		n = &new(cnode256).cnode
	}
	n.cls = cls
	return n
}
