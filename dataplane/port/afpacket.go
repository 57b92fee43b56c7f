package port

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// AFPacket reads and writes an existing interface's frames (a container's
// veth, a NIC) through an AF_PACKET socket bound to it for IPv6, with
// PACKET_VNET_HDR so GSO super-packets pass whole both ways, batched with
// recvmmsg and sendmmsg through Go's netpoller.
//
// Measured on the forwarding lab's veths (bench/README.md): this is as fast
// as afpfwd's read and write per frame for TCP and leaves more CPU to the
// rest of the machine per packet; a TPACKET_V2 receive ring (a 64 KiB slot
// per frame, copied out) was no faster and dropped small packets once its
// slots were full, and reads that spin before parking, or block outside
// the netpoller, or yielding the CPU after each batch of sends, gained
// nothing measurable.
type AFPacket struct {
	dev     string
	ifindex int
	file    *os.File
	rc      syscall.RawConn
	fd      int
	// txfd sends: a blocking socket of its own, bound to no protocol (it
	// reads nothing) and kept out of the netpoller, so that each sent
	// frame's release does not wake the poller (sock_def_write_space on
	// a socket epoll waits on), which cost a context switch per batch.
	txfd int

	// the reader's batch in progress (one queue, one reader), and the
	// netpoller callback that reads it, made once: a closure per read
	// would be an allocation per batch
	rx iovBatch
	// each frame's sockaddr_ll: its packet type (PACKET_OTHERHOST); and on
	// a socket that reads tags its PACKET_AUXDATA: its VLAN tag (vlan.go)
	rxFrom [BatchSize]unix.RawSockaddrLinklayer
	rxCtl  [BatchSize][auxSpace]byte
	rxN    int
	rxGot  int
	rxErr  error
	rxFn   func(fd uintptr) bool
	// the kernel's IPv6 is switched off on the interface (ipv6switch.go)
	tookIPv6 bool
	// tags: the socket reads each frame's VLAN tag (promiscTags), as a
	// promiscuous one or one with VLAN links does
	tags atomic.Bool
	closeFlag
}

// iovPool holds the writers' *iovBatch, shared by every socket (see
// scratchPool: a pool inside the AFPacket would keep it, and the worker
// buffers its receive iovecs point at, reachable after the link goes).
var iovPool = sync.Pool{New: func() any { return new(iovBatch) }}

// Carrier reports whether the interface has its carrier (IFF_RUNNING):
// a veth whose peer is down has none.
func (a *AFPacket) Carrier() bool {
	ifi, err := net.InterfaceByIndex(a.ifindex)
	return err == nil && ifi.Flags&net.FlagRunning != 0
}

// Ifindex is the interface's index.
func (a *AFPacket) Ifindex() int { return a.ifindex }

// InterfaceMAC is the interface's own MAC (nil if it is gone).
func (a *AFPacket) InterfaceMAC() net.HardwareAddr {
	ifi, err := net.InterfaceByIndex(a.ifindex)
	if err != nil {
		return nil
	}
	return ifi.HardwareAddr
}

// Spec names the interface the socket is bound to.
func (a *AFPacket) Spec() []string { return []string{"dev", a.dev} }

// OpenAFPacket attaches to interface dev: the socket, and the kernel's own
// IPv6 switched off there so that only the router answers on it.
func OpenAFPacket(dev string) (*AFPacket, *net.Interface, error) {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return nil, nil, noDevice(dev)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(htons(EtherTypeIPv6)))
	if err != nil {
		return nil, nil, fmt.Errorf("AF_PACKET socket: %w", err)
	}
	a := &AFPacket{dev: dev, ifindex: ifi.Index, fd: fd}
	a.rxFn = a.recv
	fail := func(what string, err error) (*AFPacket, *net.Interface, error) {
		// sockets never used: closing them fails only on a bad descriptor
		_ = unix.Close(fd)
		if a.txfd > 0 {
			_ = unix.Close(a.txfd)
		}
		return nil, nil, fmt.Errorf("%s %s: %w", what, dev, err)
	}
	for _, o := range []struct {
		level, opt, v int
		name          string
	}{
		{unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1, "PACKET_VNET_HDR"},
		{unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1, "PACKET_IGNORE_OUTGOING"},
		{unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1, "PACKET_QDISC_BYPASS"},
		{unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4 << 20, "SO_RCVBUFFORCE"},
		{unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4 << 20, "SO_SNDBUFFORCE"},
	} {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, o.v); err != nil {
			return fail(o.name, err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(EtherTypeIPv6), Ifindex: ifi.Index}); err != nil {
		return fail("bind", err)
	}
	if a.txfd, err = openTxSocket(ifi.Index); err != nil {
		return fail("AF_PACKET send socket", err)
	}

	if err := takeIPv6(ifi); err != nil {
		return fail("disable_ipv6", err)
	}
	a.tookIPv6 = true
	a.file = os.NewFile(uintptr(fd), "packet:"+dev)
	if a.rc, err = a.file.SyscallConn(); err != nil {
		return nil, nil, errors.Join(err, a.Close())
	}
	return a, ifi, nil
}

// openTxSocket is the sending socket: vnet headers, no qdisc (a veth has
// none), bound to the interface for protocol 0, so it receives nothing.
func openTxSocket(ifindex int) (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, o := range [][3]int{
		{unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1},
		{unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1},
		{unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4 << 20},
	} {
		if err := unix.SetsockoptInt(fd, o[0], o[1], o[2]); err != nil {
			_ = unix.Close(fd) // never used: it fails only on a bad descriptor
			return -1, err
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: 0, Ifindex: ifindex}); err != nil {
		_ = unix.Close(fd) // as above
		return -1, err
	}
	return fd, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Join adds or drops a multicast MAC on the interface, so a NIC that
// filters lets the group's frames in (a veth filters none).
func (a *AFPacket) Join(mac net.HardwareAddr, on bool) error {
	mr := unix.PacketMreq{Ifindex: int32(a.ifindex), Type: unix.PACKET_MR_MULTICAST, Alen: 6}
	copy(mr.Address[:], mac)
	opt := unix.PACKET_ADD_MEMBERSHIP
	if !on {
		opt = unix.PACKET_DROP_MEMBERSHIP
	}
	return unix.SetsockoptPacketMreq(a.fd, unix.SOL_PACKET, opt, &mr)
}

// AllMulti takes (or stops taking) every multicast frame: the groups a
// mirror's kernel side joins (OSPFv3's, say), which the router does not
// track.
func (a *AFPacket) AllMulti(on bool) error {
	mr := unix.PacketMreq{Ifindex: int32(a.ifindex), Type: unix.PACKET_MR_ALLMULTI}
	opt := unix.PACKET_ADD_MEMBERSHIP
	if !on {
		opt = unix.PACKET_DROP_MEMBERSHIP
	}
	return unix.SetsockoptPacketMreq(a.fd, unix.SOL_PACKET, opt, &mr)
}

// Promisc takes every frame, for a router MAC that is not the interface's
// (before the first read), and their VLAN tags (promiscTags).
func (a *AFPacket) Promisc() error {
	mr := unix.PacketMreq{Ifindex: int32(a.ifindex), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(a.fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mr); err != nil {
		return err
	}
	return a.ReadTags()
}

// ReadTags makes the socket read each frame's VLAN tag (promiscTags), for
// the VLAN links on the interface, and take every multicast frame (their
// groups are not joined one by one: a NIC that filters lets them in);
// once set it stays.
func (a *AFPacket) ReadTags() error {
	if a.tags.Load() {
		return nil
	}
	if err := a.promiscTags(); err != nil {
		return err
	}
	if err := a.AllMulti(true); err != nil {
		return err
	}
	a.tags.Store(true)
	return nil
}

func (*AFPacket) Queues() int { return 1 }

// ReadFrames reads a batch. The kernel's receive path takes a frame's VLAN
// tag out of it; when no VLAN device of the kernel's has its VID, it
// clears the tag too and marks the frame PACKET_OTHERHOST
// (__netif_receive_skb_core), which reaches an IPv6 socket all the same.
// So a frame to the interface's MAC or a group that comes as another
// host's had a VLAN ID: its tag is UnknownVLAN (and another MAC's frame,
// which is another host's anyway, is told apart by its reader). A
// promiscuous socket, whose frames to the router's MAC all come as
// another host's, reads each frame's tag instead (vlan.go).
func (a *AFPacket) ReadFrames(_ int, bufs [][]byte, hdrs []EthHdr, tags []VLANTag, sizes []int) (int, error) {
	n, tagged := len(bufs), a.tags.Load()
	for i := 0; i < n; i++ {
		a.rx.set(i, bufs[i][:VnetHdrLen], &hdrs[i], bufs[i][VnetHdrLen:])
		a.rx.msgs[i].Hdr.Name = (*byte)(unsafe.Pointer(&a.rxFrom[i]))
		a.rx.msgs[i].Hdr.Namelen = unix.SizeofSockaddrLinklayer
		if tagged {
			a.rx.msgs[i].Hdr.Control = &a.rxCtl[i][0]
			a.rx.msgs[i].Hdr.SetControllen(auxSpace)
		}
	}
	a.rxN, a.rxGot, a.rxErr = n, 0, nil
	err := a.rc.Read(a.rxFn)
	if err == nil {
		err = a.rxErr
	}
	if err != nil {
		return 0, a.readErr(err)
	}
	return a.sizes(a.rxGot, bufs, hdrs, tags, sizes), nil
}

// recv is the netpoller callback of ReadFrames.
func (a *AFPacket) recv(fd uintptr) bool {
	a.rxGot, a.rxErr = mmsg(unix.SYS_RECVMMSG, int(fd), a.rx.msgs[:a.rxN], unix.MSG_DONTWAIT)
	return a.rxErr != unix.EAGAIN
}

func (a *AFPacket) sizes(got int, bufs [][]byte, hdrs []EthHdr, tags []VLANTag, sizes []int) int {
	for i := 0; i < got; i++ {
		m := &a.rx.msgs[i]
		sizes[i] = int(m.Len) - EthHdrLen
		if m.Hdr.Flags&unix.MSG_TRUNC != 0 || sizes[i] < VnetHdrLen {
			sizes[i] = 0 // the packet path counts it as truncated
		}
		if sizes[i] != 0 {
			sizes[i] = a.tag(i, &hdrs[i], tags, bufs[i][:sizes[i]])
		}
	}
	return got
}

func (a *AFPacket) WriteFrames(hdrs []EthHdr, pkts [][]byte) (int, error) {
	return a.WriteTagged(nil, hdrs, pkts)
}

func (a *AFPacket) WriteTagged(tags []byte, hdrs []EthHdr, pkts [][]byte) (int, error) {
	b := iovPool.Get().(*iovBatch)
	defer iovPool.Put(b)
	done := 0
	for done < len(pkts) {
		n := min(len(pkts)-done, BatchSize)
		for i := 0; i < n; i++ {
			p := pkts[done+i]
			b.setTagged(i, p[:VnetHdrLen], &hdrs[done+i], tags, p[VnetHdrLen:])
		}
		sent, err := mmsg(unix.SYS_SENDMMSG, a.txfd, b.msgs[:n], 0)
		done += sent
		if err != nil {
			return done, err
		}
		if sent == 0 {
			return done, unix.EIO
		}
	}
	return done, nil
}

// offloads: with the vnet header the kernel takes TCP and UDP (USO)
// super-packets and packets whose checksum is left to be done; a device
// without the offload segments them in software (validate_xmit_skb).
func (*AFPacket) Offloads() Offloads { return Offloads{TCP: true, UDP: true, PartialCsum: true} }

// SetMTU sets the interface's MTU if it differs (the lab's "set it to what
// it is" is harmless).
func (a *AFPacket) SetMTU(mtu int) error {
	l, err := netlink.LinkByIndex(a.ifindex)
	if err != nil || l.Attrs().MTU == mtu {
		return nil
	}
	return netlink.LinkSetMTU(l, mtu)
}

// SetUp brings the interface up with the link; a link going down leaves
// the interface as it is (it is not the router's).
func (a *AFPacket) SetUp(up bool) error {
	l, err := netlink.LinkByIndex(a.ifindex)
	if err != nil || !up || l.Attrs().Flags&net.FlagUp != 0 {
		return nil
	}
	return netlink.LinkSetUp(l)
}

// Dev is the interface the socket is attached to.
func (a *AFPacket) Dev() string { return a.dev }

// Drops are the frames the socket's queue had no room for
// (PACKET_STATISTICS; reading them resets them).
func (a *AFPacket) Drops() uint64 {
	st, err := unix.GetsockoptTpacketStats(a.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return 0
	}
	return uint64(st.Drops)
}

// Close closes both sockets and gives the interface its disable_ipv6
// back; an error is any of them.
func (a *AFPacket) Close() error {
	a.markClosed()
	errs := []error{unix.Close(a.txfd)}
	if a.tookIPv6 {
		errs = append(errs, giveIPv6(a.ifindex))
		a.tookIPv6 = false
	}
	if a.file != nil {
		errs = append(errs, a.file.Close())
	} else {
		errs = append(errs, unix.Close(a.fd))
	}
	return errors.Join(errs...)
}
