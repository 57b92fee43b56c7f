package port

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Others is a second socket on an AF_PACKET link's interface that reads
// the frames of every ethertype but IPv6 (IS-IS's LLC, LLDP, ARP), for a
// TAP mirror to give the kernel. The link's own socket stays bound to IPv6
// alone, so the packet path pays nothing for them; a classic BPF filter
// keeps IPv6 out of this one.
type Others struct {
	f *os.File
}

// nonIPv6 is `ether proto not 0x86dd`: load the ethertype, drop IPv6,
// take the rest whole.
var nonIPv6 = []unix.SockFilter{
	{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 12},
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: EtherTypeIPv6},
	{Code: unix.BPF_RET | unix.BPF_K, K: 0},
	{Code: unix.BPF_RET | unix.BPF_K, K: 1 << 18},
}

// OpenOthers opens the interface's socket of other ethertypes.
func (a *AFPacket) OpenOthers() (*Others, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	fail := func(what string, err error) (*Others, error) {
		_ = unix.Close(fd) // never used: closing fails only on a bad descriptor
		return nil, fmt.Errorf("%s %s: %w", what, a.dev, err)
	}
	prog := unix.SockFprog{Len: uint16(len(nonIPv6)), Filter: &nonIPv6[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
		return fail("SO_ATTACH_FILTER", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fail("PACKET_IGNORE_OUTGOING", err)
	}
	// bound with its filter already on, so no IPv6 frame is queued before it
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: a.ifindex}); err != nil {
		return fail("bind", err)
	}
	return &Others{f: os.NewFile(uintptr(fd), "packet-others:"+a.dev)}, nil
}

// Read reads one frame into b, header and all; os.ErrClosed once closed.
func (o *Others) Read(b []byte) (int, error) { return o.f.Read(b) }

func (o *Others) Close() error { return o.f.Close() }
