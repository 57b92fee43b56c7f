package filter

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Run interprets classic BPF program prog on packet pkt, as the kernel's
// interpreter does: it returns the length to keep, 0 to reject; a load
// past the packet's end or a division by zero rejects. It allocates
// nothing. prog is trusted to be valid (Compile's are; libpcap's are).
func Run(prog []unix.SockFilter, pkt []byte) uint32 {
	var a, x uint32
	var mem [16]uint32
	n := uint32(len(pkt))
	for pc := 0; pc < len(prog); pc++ {
		ins := &prog[pc]
		k := ins.K
		switch ins.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, unix.BPF_LD | unix.BPF_W | unix.BPF_IND:
			off := k
			if ins.Code&0xe0 == unix.BPF_IND {
				off += x
			}
			if off > n || n-off < 4 {
				return 0
			}
			a = binary.BigEndian.Uint32(pkt[off:])
		case unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, unix.BPF_LD | unix.BPF_H | unix.BPF_IND:
			off := k
			if ins.Code&0xe0 == unix.BPF_IND {
				off += x
			}
			if off > n || n-off < 2 {
				return 0
			}
			a = uint32(binary.BigEndian.Uint16(pkt[off:]))
		case unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, unix.BPF_LD | unix.BPF_B | unix.BPF_IND:
			off := k
			if ins.Code&0xe0 == unix.BPF_IND {
				off += x
			}
			if off >= n {
				return 0
			}
			a = uint32(pkt[off])
		case unix.BPF_LD | unix.BPF_W | unix.BPF_LEN:
			a = n
		case unix.BPF_LDX | unix.BPF_W | unix.BPF_LEN:
			x = n
		case unix.BPF_LD | unix.BPF_IMM:
			a = k
		case unix.BPF_LDX | unix.BPF_IMM:
			x = k
		case unix.BPF_LD | unix.BPF_MEM:
			a = mem[k&15]
		case unix.BPF_LDX | unix.BPF_MEM:
			x = mem[k&15]
		case unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH:
			if k >= n {
				return 0
			}
			x = uint32(pkt[k]&0xf) * 4
		case unix.BPF_ST:
			mem[k&15] = a
		case unix.BPF_STX:
			mem[k&15] = x
		case unix.BPF_RET | unix.BPF_K:
			return k
		case unix.BPF_RET | unix.BPF_A:
			return a
		case unix.BPF_MISC | unix.BPF_TAX:
			x = a
		case unix.BPF_MISC | unix.BPF_TXA:
			a = x
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(k)
		default:
			var ok bool
			if a, pc, ok = step(ins, a, x, pc); !ok {
				return 0
			}
		}
	}
	return 0
}

// step runs an ALU or conditional jump instruction; ok is false for a
// division by zero or an instruction the interpreter does not know.
func step(ins *unix.SockFilter, a, x uint32, pc int) (uint32, int, bool) {
	v := ins.K
	if ins.Code&unix.BPF_X != 0 {
		v = x
	}
	switch ins.Code & 0x07 {
	case unix.BPF_ALU:
		switch ins.Code & 0xf0 {
		case unix.BPF_ADD:
			return a + v, pc, true
		case unix.BPF_SUB:
			return a - v, pc, true
		case unix.BPF_MUL:
			return a * v, pc, true
		case unix.BPF_DIV:
			if v == 0 {
				return 0, pc, false
			}
			return a / v, pc, true
		case unix.BPF_MOD:
			if v == 0 {
				return 0, pc, false
			}
			return a % v, pc, true
		case unix.BPF_OR:
			return a | v, pc, true
		case unix.BPF_AND:
			return a & v, pc, true
		case unix.BPF_XOR:
			return a ^ v, pc, true
		case unix.BPF_LSH:
			return a << (v & 31), pc, v < 32
		case unix.BPF_RSH:
			return a >> (v & 31), pc, v < 32
		case unix.BPF_NEG:
			return -a, pc, true
		}
	case unix.BPF_JMP:
		var cond bool
		switch ins.Code & 0xf0 {
		case unix.BPF_JEQ:
			cond = a == v
		case unix.BPF_JGT:
			cond = a > v
		case unix.BPF_JGE:
			cond = a >= v
		case unix.BPF_JSET:
			cond = a&v != 0
		default:
			return a, pc, false
		}
		if cond {
			return a, pc + int(ins.Jt), true
		}
		return a, pc + int(ins.Jf), true
	}
	return a, pc, false
}
