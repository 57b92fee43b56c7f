package port

import (
	"net"
	"net/netip"
	"os"
)

// Devices on paper: what a TUN or a TAP would be, with no kernel device
// behind them and no queue to read. `urouter apply` loads a config into a
// router made of them to learn what the config says, in the words save
// writes, without touching the kernel (a TUN opened by the name of one
// that exists would join it).

// PaperTUN is a TUN on paper, as OpenTUN would make it with o.
func PaperTUN(o TUNOptions) Device { return paperTUN{spec: specOf(o.Queues, o.Netns, o.NoGSO)} }

type paperTUN struct{ spec []string }

func (paperTUN) Queues() int                                                  { return 0 }
func (paperTUN) ReadBatch(int, [][]byte, []int) (int, error)                  { return 0, os.ErrClosed }
func (paperTUN) WriteBatch(_ int, pkts [][]byte, _ []netip.Addr) (int, error) { return len(pkts), nil }
func (paperTUN) Offloads() Offloads                                           { return Offloads{} }
func (paperTUN) SetMTU(int) error                                             { return nil }
func (paperTUN) SetUp(bool) error                                             { return nil }
func (paperTUN) Close() error                                                 { return nil }
func (paperTUN) Kind() string                                                 { return "tun" }
func (paperTUN) Flags() Flags                                                 { return (*TUN)(nil).Flags() }
func (paperTUN) LinkType() string                                             { return (*TUN)(nil).LinkType() }
func (paperTUN) HardwareAddr() net.HardwareAddr                               { return nil }
func (paperTUN) Broadcast() net.HardwareAddr                                  { return nil }
func (paperTUN) TxQueueLen() int                                              { return (*TUN)(nil).TxQueueLen() }
func (p paperTUN) Spec() []string                                             { return p.spec }

// PaperFrames is a TAP's frames on paper, as OpenTAP would make it with o.
func PaperFrames(o TAPOptions) Frames { return paperFrames{spec: specOf(o.Queues, o.Netns, false)} }

type paperFrames struct{ spec []string }

func (paperFrames) Queues() int { return 0 }
func (paperFrames) ReadFrames(int, [][]byte, []EthHdr, []VLANTag, []int) (int, error) {
	return 0, os.ErrClosed
}
func (paperFrames) WriteFrames(_ []EthHdr, pkts [][]byte) (int, error) { return len(pkts), nil }
func (paperFrames) WriteTagged(_ []byte, _ []EthHdr, pkts [][]byte) (int, error) {
	return len(pkts), nil
}
func (paperFrames) Offloads() Offloads { return Offloads{} }
func (paperFrames) SetMTU(int) error   { return nil }
func (paperFrames) SetUp(bool) error   { return nil }
func (paperFrames) Close() error       { return nil }
func (p paperFrames) Spec() []string   { return p.spec }

// PaperHost is a host link's frames on paper: the interface dev is read
// (its MAC, for the words of a MAC given the link), never taken.
func PaperHost(dev string) Frames { return paperHost{paperFrames{spec: []string{"dev", dev}}, dev} }

type paperHost struct {
	paperFrames
	dev string
}

// InterfaceMAC is the interface's MAC, as Host's; nil without one.
func (p paperHost) InterfaceMAC() net.HardwareAddr {
	if ifi, err := net.InterfaceByName(p.dev); err == nil {
		return ifi.HardwareAddr
	}
	return nil
}
