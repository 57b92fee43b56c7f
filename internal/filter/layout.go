package filter

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// maxInsns is the kernel's BPF_MAXINSNS, and libpcap's limit too.
const maxInsns = 4096

// layout turns labels into offsets. A jump to the next instruction goes;
// a conditional jump whose target is more than 255 instructions on (its
// offsets are 8 bits) goes by a ja placed right after it, which nothing
// falls into, since a conditional jump never falls through.
func (g *gen) layout() ([]unix.SockFilter, error) {
	for l, at := range g.at {
		if at < 0 {
			return nil, fmt.Errorf("filter: internal error: label %d never placed", l)
		}
	}
	g.dropNextJumps()

	// tramp[i] says which of instruction i's targets go by a ja.
	tramp := make([][2]bool, len(g.ins))
	pos := make([]int, len(g.ins)+1)
	for {
		p := 0
		for i := range g.ins {
			pos[i] = p
			p += 1 + btoi(tramp[i][0]) + btoi(tramp[i][1])
		}
		pos[len(g.ins)] = p
		if p > maxInsns {
			return nil, fmt.Errorf("filter program too long: %d instructions (at most %d)", p, maxInsns)
		}
		grew := false
		for i, in := range g.ins {
			if !isCond(in.code) {
				continue
			}
			for j, l := range [2]label{in.jt, in.jf} {
				d := pos[g.at[l]] - (pos[i] + 1)
				if d < 0 {
					return nil, fmt.Errorf("filter: internal error: backward conditional jump")
				}
				if d > 255 && !tramp[i][j] {
					tramp[i][j], grew = true, true
				}
			}
		}
		if !grew {
			break
		}
	}

	out := make([]unix.SockFilter, 0, pos[len(g.ins)])
	for i, in := range g.ins {
		target := func(l label) int { return pos[g.at[l]] }
		switch {
		case in.code == unix.BPF_JMP|unix.BPF_JA:
			out = append(out, unix.SockFilter{Code: in.code, K: uint32(target(in.jt) - (pos[i] + 1))})
		case isCond(in.code):
			var off [2]uint8
			var jas []unix.SockFilter
			for j, l := range [2]label{in.jt, in.jf} {
				if tramp[i][j] {
					off[j] = uint8(len(jas))
					at := pos[i] + 1 + len(jas)
					jas = append(jas, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JA, K: uint32(target(l) - (at + 1))})
				} else {
					off[j] = uint8(target(l) - (pos[i] + 1))
				}
			}
			out = append(out, unix.SockFilter{Code: in.code, Jt: off[0], Jf: off[1], K: in.k})
			out = append(out, jas...)
		default:
			out = append(out, unix.SockFilter{Code: in.code, K: in.k})
		}
	}
	return out, nil
}

func isCond(code uint16) bool {
	return code&0x07 == unix.BPF_JMP && code&0xf0 != unix.BPF_JA
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// dropNextJumps removes each ja to the instruction right after it.
func (g *gen) dropNextJumps() {
	newIdx := make([]int, len(g.ins)+1)
	kept := g.ins[:0:0]
	for i, in := range g.ins {
		newIdx[i] = len(kept)
		if in.code == unix.BPF_JMP|unix.BPF_JA && g.at[in.jt] == i+1 {
			continue
		}
		kept = append(kept, in)
	}
	newIdx[len(g.ins)] = len(kept)
	for l, at := range g.at {
		g.at[l] = newIdx[at]
	}
	g.ins = kept
}
