package port

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// Others is a second socket on an AF_PACKET link's interface that reads
// the frames of the other ethertypes (IS-IS's LLC, LLDP) to the router's
// MAC or a group, for a TAP mirror to give the kernel. The link's own
// socket stays bound to IPv6 alone, so the packet path pays nothing for
// them; a classic BPF filter keeps out IPv6, and IPv4 and ARP too (an
// IPv6 router's kernel side has no use for them), and other hosts' unicast
// (the socket is promiscuous when the router's MAC is not the
// interface's), before they cost a read.
type Others struct {
	f *os.File
}

// othersFilter is the filter for a router's MAC: untagged (or priority-
// tagged: a tag with a VLAN ID is for a VLAN no link is on, and Linux
// takes such a frame for another host's), ethertype not IPv6, IPv4 or
// ARP, and the destination a group (its I/G bit) or mac.
func othersFilter(mac net.HardwareAddr) []unix.SockFilter {
	// the kernel's ancillary data (linux/filter.h: SKF_AD_OFF -0x1000,
	// SKF_AD_VLAN_TAG 44, SKF_AD_VLAN_TAG_PRESENT 48)
	const ad, vlanTag, vlanPresent = 1<<32 - 0x1000, 44, 48
	vlan := []unix.SockFilter{ // the tag the kernel took out of the frame
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: ad + vlanPresent},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0, Jt: 2},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: ad + vlanTag},
		{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: 0x0fff, Jt: 11}, // to the untagged filter's drop
	}
	return append(vlan, untaggedFilter(mac)...)
}

// untaggedFilter is othersFilter after the tag.
func untaggedFilter(mac net.HardwareAddr) []unix.SockFilter {
	const accept, drop = 10, 11 // the two returns' places
	jeq := func(at int, k uint32, jt, jf int) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: uint8(jt - at - 1), Jf: uint8(jf - at - 1)}
	}
	return []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 12},
		jeq(1, EtherTypeIPv6, drop, 2),
		jeq(2, unix.ETH_P_IP, drop, 3),
		jeq(3, unix.ETH_P_ARP, drop, 4),
		{Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 0},
		{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: 1, Jt: accept - 5 - 1},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
		jeq(7, binary.BigEndian.Uint32(mac[0:4]), 8, drop),
		{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 4},
		jeq(9, uint32(binary.BigEndian.Uint16(mac[4:6])), accept, drop),
		{Code: unix.BPF_RET | unix.BPF_K, K: 1 << 18},
		{Code: unix.BPF_RET | unix.BPF_K, K: 0},
	}
}

// OpenOthers opens the interface's socket of other ethertypes for a
// router whose MAC is mac.
func (a *AFPacket) OpenOthers(mac net.HardwareAddr) (*Others, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	fail := func(what string, err error) (*Others, error) {
		_ = unix.Close(fd) // never used: closing fails only on a bad descriptor
		return nil, fmt.Errorf("%s %s: %w", what, a.dev, err)
	}
	filter := othersFilter(mac)
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
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
