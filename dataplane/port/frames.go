package port

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ethernet framing: a frame is read and written as three pieces, so the
// packet path's buffer stays what it is on every link (a virtio_net_hdr,
// then the IPv6 packet) and no byte is moved: the header goes to buf[0:10],
// the 14-byte Ethernet header to a slot of its own, the packet to buf[10:].
const EthHdrLen = 14

// EthHdr is an Ethernet header: destination, source, EtherType.
type EthHdr [EthHdrLen]byte

const EtherTypeIPv6 = 0x86dd

// BatchSize is the most frames a Frames reads at once: a worker's batch.
const BatchSize = 64

// Frames is an Ethernet link's device: batches of frames split as above.
// Readers are one goroutine per queue; writers may be many at once.
type Frames interface {
	Queues() int
	// ReadFrames reads at least one frame, waiting while there is none:
	// frame i's header in hdrs[i], its virtio_net_hdr and packet in
	// bufs[i][:sizes[i]]. A priority tag (VID 0) is taken out: the frame
	// is untagged, as Linux has it. A frame tagged with a VLAN ID has the
	// tag's TPID as its header's ethertype (IsVLAN), and the tag, taken
	// out of the packet, in tags[i]; tags[i] is written for no other
	// frame, so untagged ones cost their reader nothing. With tags nil, a
	// TAP leaves a tag in the frame.
	ReadFrames(q int, bufs [][]byte, hdrs []EthHdr, tags []VLANTag, sizes []int) (int, error)
	// WriteFrames writes frames in order and says how many went.
	WriteFrames(hdrs []EthHdr, pkts [][]byte) (int, error)
	// WriteTagged is WriteFrames with VLAN tags (TPID and TCI, outer
	// first: 4 bytes a tag) between each header's source MAC and its
	// ethertype, for a VLAN link's frames; the packets' virtio_net_hdr
	// offsets count them.
	WriteTagged(tags []byte, hdrs []EthHdr, pkts [][]byte) (int, error)
	// Offloads, SetMTU, SetUp and Close are the Port's.
	Offloads() Offloads
	SetMTU(mtu int) error
	SetUp(up bool) error
	Close() error
}

// iovBatch is the scatter-gather state of one batch of frames.
type iovBatch struct {
	msgs [BatchSize]unix.Mmsghdr
	iovs [BatchSize][5]unix.Iovec
}

// set points message i at its three pieces: vnet, eth and the packet
// (with room for n bytes of it).
func (b *iovBatch) set(i int, vnet []byte, eth *EthHdr, pkt []byte) {
	b.setTagged(i, vnet, eth, nil, pkt)
}

// setTagged is set with VLAN tags after the header's MACs: five pieces,
// the header split around them, so that no byte of the packet moves.
func (b *iovBatch) setTagged(i int, vnet []byte, eth *EthHdr, tags []byte, pkt []byte) {
	iov := &b.iovs[i]
	n := tagIovecs(iov, vnet, eth, tags, pkt)
	b.msgs[i] = unix.Mmsghdr{Hdr: unix.Msghdr{Iov: &iov[0]}}
	b.msgs[i].Hdr.SetIovlen(n)
}

// tagIovecs fills iov with a frame's pieces and says how many there are:
// three untagged, five with tags.
func tagIovecs(iov *[5]unix.Iovec, vnet []byte, eth *EthHdr, tags []byte, pkt []byte) int {
	iov[0].Base = &vnet[0]
	iov[0].SetLen(len(vnet))
	iov[1].Base = &eth[0]
	n := 2
	if len(tags) > 0 {
		iov[1].SetLen(12)
		iov[2].Base = &tags[0]
		iov[2].SetLen(len(tags))
		iov[3].Base = &eth[12]
		iov[3].SetLen(2)
		n = 4
	} else {
		iov[1].SetLen(EthHdrLen)
	}
	if len(pkt) > 0 {
		iov[n].Base = &pkt[0]
		iov[n].SetLen(len(pkt))
	} else {
		iov[n].Base = nil
		iov[n].SetLen(0)
	}
	return n + 1
}

func mmsg(trap uintptr, fd int, msgs []unix.Mmsghdr, flags int) (int, error) {
	for {
		n, _, e := syscall.Syscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), uintptr(flags), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
}

// closedErr is os.ErrClosed for the errors of a descriptor that is gone.
func closedErr(err error) error {
	if errors.Is(err, unix.EBADFD) || errors.Is(err, unix.EBADF) || errors.Is(err, os.ErrClosed) {
		return os.ErrClosed
	}
	return err
}

// closeFlag is what every port's readers end on. A read parked in the
// netpoller when its file closes gets internal/poll's "use of closed file",
// which os does not export and closedErr cannot tell: so a port sets the
// flag before it closes its files, and its reads' errors go through readErr.
type closeFlag struct{ closed atomic.Bool }

func (c *closeFlag) markClosed() { c.closed.Store(true) }

// readErr is a read's error as the port's readers see it: os.ErrClosed
// once the port is closing.
func (c *closeFlag) readErr(err error) error {
	if err != nil && c.closed.Load() {
		return os.ErrClosed
	}
	return closedErr(err)
}
