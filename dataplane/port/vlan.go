package port

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// VLAN tags, as each port tells them (Frames.ReadFrames): a TAP finds a
// tag inline (untag); an AF_PACKET socket's kernel has taken it out and,
// finding no VLAN device for its VID, cleared it and marked the frame
// PACKET_OTHERHOST (ReadFrames); a promiscuous socket, whose frames to the
// router's MAC all come as another host's, is bound to every protocol to
// be handed each frame before that, its tag in PACKET_AUXDATA
// (promiscTags).

// The TPIDs of a VLAN tag: 802.1Q's (C-tag) and 802.1ad's (S-tag).
const (
	EtherTypeVLAN = 0x8100
	EtherTypeQinQ = 0x88a8
)

// VLANTag is the VLAN tag a port took out of a frame it read, as Linux's
// receive path does (skb_vlan_untag, or a NIC's VLAN offload), and the
// ethertype it carried.
type VLANTag struct{ TPID, TCI, Type uint16 }

// UnknownVLAN is the tag of an IPv6 frame whose port knows it was tagged
// with a VLAN ID, but not which (AFPacket.ReadFrames).
var UnknownVLAN = VLANTag{TPID: EtherTypeVLAN, TCI: 0xffff, Type: EtherTypeIPv6}

// VID is the tag's VLAN identifier; 0 for a priority tag (802.1p) or none.
func (t VLANTag) VID() uint16 { return t.TCI & 0x0fff }

// IsVLAN reports whether ethertype t is a VLAN tag's.
func IsVLAN(t uint16) bool { return t == EtherTypeVLAN || t == EtherTypeQinQ }

// Untag takes an inline VLAN tag out of a frame whose outer tag was taken
// already (QinQ's inner tag), as untag; for a VLAN link's own demux.
func Untag(h *EthHdr, t *VLANTag, b []byte) int { return untag(h, t, b) }

// untag takes the VLAN tags out of frame h, b (virtio_net_hdr and what
// follows the header) as Linux's receive path does (skb_vlan_untag, and
// again for a tag inside a priority tag), into t, and returns the frame's
// new size, 0 for a frame too short for its tag (the packet path counts
// it as truncated). The header's ethertype stays the TPID of a tag with a
// VLAN ID.
func untag(h *EthHdr, t *VLANTag, b []byte) int {
	for IsVLAN(binary.BigEndian.Uint16(h[12:])) {
		if len(b) < VnetHdrLen+4 {
			return 0
		}
		p := b[VnetHdrLen:]
		*t = VLANTag{TPID: binary.BigEndian.Uint16(h[12:]), TCI: binary.BigEndian.Uint16(p), Type: binary.BigEndian.Uint16(p[2:])}
		copy(p, p[4:])
		ShiftVnet(b, -4)
		b = b[:len(b)-4]
		if t.VID() != 0 {
			break
		}
		binary.BigEndian.PutUint16(h[12:], t.Type)
	}
	return len(b)
}

// promiscTags makes a socket tell a frame's tag: bound to every
// protocol, it is handed each frame before the kernel's VLAN handling
// clears the tag (a ptype_all tap), the tag in PACKET_AUXDATA; its
// classic BPF filter keeps every ethertype but IPv6 and a tag's out (the
// outer tag is out of the frame by then: IPv6 inside it passes, and so
// does an inner tag of QinQ, still inline). Its own frames, which a tap
// would be given too, are kept out by PACKET_IGNORE_OUTGOING.
func (a *AFPacket) promiscTags() error {
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 12},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: EtherTypeIPv6, Jt: 3},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: EtherTypeVLAN, Jt: 2},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: EtherTypeQinQ, Jt: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: 0},
		{Code: unix.BPF_RET | unix.BPF_K, K: 1 << 18},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.SetsockoptSockFprog(a.fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
		return err
	}
	if err := unix.SetsockoptInt(a.fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		return err
	}
	return unix.Bind(a.fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: a.ifindex})
}

// auxSpace is the room for a frame's PACKET_AUXDATA.
const (
	auxLen   = unix.SizeofCmsghdr + int(unsafe.Sizeof(unix.TpacketAuxdata{}))
	auxSpace = (auxLen + 7) &^ 7
)

// auxTag is the tag of a frame with a VLAN ID in its PACKET_AUXDATA (n
// bytes of control message), and whether it has one; a tag without its
// TPID (kernels before 3.14) is 802.1Q's.
func auxTag(ctl *[auxSpace]byte, n int) (VLANTag, bool) {
	h := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
	if n < auxLen || h.Level != unix.SOL_PACKET || h.Type != unix.PACKET_AUXDATA {
		return VLANTag{}, false
	}
	aux := (*unix.TpacketAuxdata)(unsafe.Pointer(&ctl[unix.SizeofCmsghdr]))
	t := VLANTag{TPID: EtherTypeVLAN, TCI: aux.Vlan_tci}
	if aux.Status&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
		t.TPID = aux.Vlan_tpid
	}
	return t, aux.Status&unix.TP_STATUS_VLAN_VALID != 0 && t.VID() != 0
}

// tag marks frame i of a batch read (h, b) tagged when it is, and
// returns its size: by its PACKET_AUXDATA on a socket that reads tags,
// else by its being another host's (ReadFrames). A tag the kernel left
// inline, inside a priority tag, is taken out as a TAP's is.
func (a *AFPacket) tag(i int, h *EthHdr, tags []VLANTag, b []byte) int {
	if tags == nil {
		return len(b)
	}
	if a.rx.msgs[i].Hdr.Control == nil {
		if a.rxFrom[i].Pkttype == unix.PACKET_OTHERHOST {
			tags[i] = UnknownVLAN
			binary.BigEndian.PutUint16(h[12:], UnknownVLAN.TPID)
		}
		return len(b)
	}
	if t, ok := auxTag(&a.rxCtl[i], int(a.rx.msgs[i].Hdr.Controllen)); ok {
		t.Type = binary.BigEndian.Uint16(h[12:])
		tags[i] = t
		binary.BigEndian.PutUint16(h[12:], t.TPID)
		return len(b)
	}
	if IsVLAN(binary.BigEndian.Uint16(h[12:])) {
		return untag(h, &tags[i], b)
	}
	return len(b)
}
