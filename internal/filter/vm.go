package filter

import "golang.org/x/sys/unix"

// The interpreter is classic BPF as the kernel and libpcap's bpf_filter
// run it: A and X 32-bit, 16 words of scratch memory, every load checked
// against the packet (one past the end, or an unknown instruction,
// rejects: returns 0), division by a zero X rejects. It differs where
// they refuse a program rather than run it: a jump backwards (libpcap's
// protochain loops so) is followed, a run that has not ended after
// maxSteps instructions rejects, and a shift counts modulo 32, as x86
// does for both.

// maxSteps bounds a run: a forward-only program takes at most its length
// (4096 at most); protochain's loop takes about a dozen a header, and on
// a crafted AH (whose length libpcap's loop takes for the offset) it would
// not end: a bound near the longest program keeps a hostile packet's cost
// to microseconds on the worker that filters it.
const maxSteps = 8192

// Run interprets prog, any classic BPF program, on pkt (its wire length
// is len(pkt)) and returns what the program returned: the bytes to
// accept, 0 to reject.
func Run(prog []unix.SockFilter, pkt []byte) uint32 {
	var a, x uint32
	var mem [memWords]uint32
	n := uint64(len(pkt))
	pc := uint32(0)
	for range maxSteps {
		if uint64(pc) >= uint64(len(prog)) {
			return 0
		}
		in := &prog[pc]
		pc++
		switch in.Code {
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		case unix.BPF_RET | unix.BPF_A:
			return a
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, unix.BPF_LD | unix.BPF_B | unix.BPF_ABS,
			unix.BPF_LD | unix.BPF_W | unix.BPF_IND, unix.BPF_LD | unix.BPF_H | unix.BPF_IND, unix.BPF_LD | unix.BPF_B | unix.BPF_IND:
			off := uint64(in.K)
			if in.Code&0xe0 == unix.BPF_IND {
				off += uint64(x)
			}
			v, ok := load(pkt, n, off, in.Code&0x18)
			if !ok {
				return 0
			}
			a = v
		case unix.BPF_LD | unix.BPF_W | unix.BPF_LEN:
			a = uint32(n)
		case unix.BPF_LDX | unix.BPF_W | unix.BPF_LEN:
			x = uint32(n)
		case unix.BPF_LD | unix.BPF_IMM:
			a = in.K
		case unix.BPF_LDX | unix.BPF_W | unix.BPF_IMM:
			x = in.K
		case unix.BPF_LD | unix.BPF_MEM:
			if in.K >= memWords {
				return 0
			}
			a = mem[in.K]
		case unix.BPF_LDX | unix.BPF_W | unix.BPF_MEM:
			if in.K >= memWords {
				return 0
			}
			x = mem[in.K]
		case unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH:
			if uint64(in.K) >= n {
				return 0
			}
			x = uint32(pkt[in.K]&0xf) << 2
		case unix.BPF_ST:
			if in.K >= memWords {
				return 0
			}
			mem[in.K] = a
		case unix.BPF_STX:
			if in.K >= memWords {
				return 0
			}
			mem[in.K] = x
		case unix.BPF_MISC | unix.BPF_TAX:
			x = a
		case unix.BPF_MISC | unix.BPF_TXA:
			a = x
		case unix.BPF_JMP | unix.BPF_JA:
			pc += in.K // wraps: libpcap's protochain jumps back so
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_X:
			pc += branch(a == operand(in, x), in)
		case unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGT | unix.BPF_X:
			pc += branch(a > operand(in, x), in)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_X:
			pc += branch(a >= operand(in, x), in)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_X:
			pc += branch(a&operand(in, x) != 0, in)
		case unix.BPF_ALU | unix.BPF_NEG:
			a = -a
		default:
			if in.Code&0x07 != unix.BPF_ALU {
				return 0
			}
			var ok bool
			if a, ok = alu(in.Code&0xf0, a, operand(in, x)); !ok {
				return 0
			}
		}
	}
	return 0
}

// operand is what a jump or an ALU instruction takes A with: X or K.
func operand(in *unix.SockFilter, x uint32) uint32 {
	if in.Code&unix.BPF_X != 0 {
		return x
	}
	return in.K
}

func branch(c bool, in *unix.SockFilter) uint32 {
	if c {
		return uint32(in.Jt)
	}
	return uint32(in.Jf)
}

// load reads size (BPF_W, BPF_H or BPF_B) bytes at off, big-endian.
func load(pkt []byte, n, off uint64, size uint16) (uint32, bool) {
	switch size {
	case unix.BPF_W:
		if off+4 > n {
			return 0, false
		}
		return uint32(pkt[off])<<24 | uint32(pkt[off+1])<<16 | uint32(pkt[off+2])<<8 | uint32(pkt[off+3]), true
	case unix.BPF_H:
		if off+2 > n {
			return 0, false
		}
		return uint32(pkt[off])<<8 | uint32(pkt[off+1]), true
	case unix.BPF_B:
		if off >= n {
			return 0, false
		}
		return uint32(pkt[off]), true
	}
	return 0, false
}

// alu applies op; false for a division by zero or an unknown op.
func alu(op uint16, a, v uint32) (uint32, bool) {
	switch op {
	case unix.BPF_ADD:
		return a + v, true
	case unix.BPF_SUB:
		return a - v, true
	case unix.BPF_MUL:
		return a * v, true
	case unix.BPF_DIV:
		if v == 0 {
			return 0, false
		}
		return a / v, true
	case unix.BPF_MOD:
		if v == 0 {
			return 0, false
		}
		return a % v, true
	case unix.BPF_AND:
		return a & v, true
	case unix.BPF_OR:
		return a | v, true
	case unix.BPF_XOR:
		return a ^ v, true
	case unix.BPF_LSH:
		return a << (v & 31), true
	case unix.BPF_RSH:
		return a >> (v & 31), true
	}
	return 0, false
}
