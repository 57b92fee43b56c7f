package port

import (
	"encoding/binary"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TAPOptions are what `link add NAME type tap` takes.
type TAPOptions struct {
	MTU    int
	Queues int
	Netns  string // move the kernel side into this namespace
	MAC    []byte // the router's MAC on the link; random if nil
}

// TAP is a TAP device the router owns: its kernel side is an Ethernet
// interface (moved into a host's namespace, say), its frames come and go
// through one file per queue, with the same virtio_net_hdr offloads as a
// TUN, one readv or writev per frame.
type TAP struct {
	name   string
	files  []*os.File
	queues []*tapQueue
	uso    bool
	opts   TAPOptions
	closeFlag
}

type tapQueue struct {
	rc syscall.RawConn
	fd int
	rx iovBatch // one message's iovecs per frame, for readv
	// the batch in progress, for the netpoller callback
	bufs  [][]byte
	hdrs  []EthHdr
	tags  []VLANTag
	sizes []int
	n     int
	err   error
	fn    func(uintptr) bool
}

// Spec says the TAP's queues and namespace (its MAC and MTU are the link's).
func (t *TAP) Spec() []string { return specOf(t.opts.Queues, t.opts.Netns, false) }

// OpenTAP creates TAP device name with its queues.
func OpenTAP(name string, o TAPOptions) (*TAP, error) {
	flags := netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR
	if o.Queues > 1 {
		flags |= netlink.TUNTAP_MULTI_QUEUE
	}
	tt := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: name}, Mode: netlink.TUNTAP_MODE_TAP,
		Flags: flags, Queues: max(o.Queues, 1), NonPersist: true}
	if err := netlink.LinkAdd(tt); err != nil {
		return nil, fmt.Errorf("TAP %s: %w", name, err)
	}
	t := &TAP{name: name, files: tt.Fds, opts: o}
	for _, f := range t.files {
		rc, err := f.SyscallConn()
		if err != nil {
			return nil, closing(t, err)
		}
		q := &tapQueue{rc: rc}
		if err := rc.Control(func(fd uintptr) { q.fd = int(fd) }); err != nil {
			return nil, closing(t, err)
		}
		q.fn = q.read
		t.queues = append(t.queues, q)
	}
	if err := unix.IoctlSetInt(t.queues[0].fd, unix.TUNSETOFFLOAD, tunTCPOffloads); err != nil {
		return nil, closing(t, fmt.Errorf("TUNSETOFFLOAD %s: %w", name, err))
	}
	t.uso = unix.IoctlSetInt(t.queues[0].fd, unix.TUNSETOFFLOAD, tunTCPOffloads|tunUDPOffloads) == nil
	if o.MTU != 0 {
		if err := kernelSide(name).setMTU(o.MTU); err != nil {
			return nil, closing(t, fmt.Errorf("TAP %s: MTU %d: %w", name, o.MTU, err))
		}
	}
	if o.Netns != "" {
		if err := moveToNetns(name, o.Netns); err != nil {
			return nil, closing(t, err)
		}
	}
	return t, nil
}

func (t *TAP) Queues() int { return len(t.queues) }

// ReadFrames reads a batch; a tag the kernel sent inline (tun_put_user
// writes a VLAN device's tag into the frame) is taken out of it.
func (t *TAP) ReadFrames(qi int, bufs [][]byte, hdrs []EthHdr, tags []VLANTag, sizes []int) (int, error) {
	q := t.queues[qi]
	q.bufs, q.hdrs, q.tags, q.sizes, q.n, q.err = bufs, hdrs, tags, sizes, 0, nil
	err := q.rc.Read(q.fn)
	q.bufs, q.hdrs, q.tags, q.sizes = nil, nil, nil, nil
	if err == nil {
		err = q.err
	}
	if err != nil && q.n == 0 {
		return 0, t.readErr(err)
	}
	return q.n, nil
}

// read reads frames until the queue is empty or the batch full.
func (q *tapQueue) read(fd uintptr) bool {
	for q.n < len(q.bufs) {
		b := q.bufs[q.n]
		q.rx.set(0, b[:VnetHdrLen], &q.hdrs[q.n], b[VnetHdrLen:])
		n, _, e := syscall.Syscall(unix.SYS_READV, fd, uintptr(unsafe.Pointer(&q.rx.iovs[0][0])), 3)
		switch e {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return q.n > 0
		default:
			q.err = e
			return true
		}
		q.sizes[q.n] = int(n) - EthHdrLen
		if q.sizes[q.n] < VnetHdrLen {
			q.sizes[q.n] = 0
		}
		if q.tags != nil && IsVLAN(binary.BigEndian.Uint16(q.hdrs[q.n][12:])) {
			q.sizes[q.n] = untag(&q.hdrs[q.n], &q.tags[q.n], b[:q.sizes[q.n]])
		}
		q.n++
	}
	return true
}

func (t *TAP) WriteFrames(hdrs []EthHdr, pkts [][]byte) (int, error) {
	return t.WriteTagged(nil, hdrs, pkts)
}

func (t *TAP) WriteTagged(tags []byte, hdrs []EthHdr, pkts [][]byte) (int, error) {
	fd := t.queues[0].fd
	var iov [5]unix.Iovec
	for i, p := range pkts {
		n := tagIovecs(&iov, p[:VnetHdrLen], &hdrs[i], tags, p[VnetHdrLen:])
		for {
			_, _, e := syscall.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(n))
			if e == unix.EINTR {
				continue
			}
			if e != 0 {
				return i, e
			}
			break
		}
	}
	return len(pkts), nil
}

func (t *TAP) Offloads() Offloads { return Offloads{TCP: true, UDP: t.uso, PartialCsum: true} }

func (t *TAP) SetMTU(mtu int) error { return kernelSide(t.name).setMTU(mtu) }
func (t *TAP) SetUp(up bool) error  { return kernelSide(t.name).setUp(up) }

func (t *TAP) Close() error {
	t.markClosed()
	err := closeFiles(t.files)
	t.files = nil
	return err
}
