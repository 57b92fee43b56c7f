package port

import (
	"net"
	"net/netip"
	"strconv"
)

// vrf is Linux's VRF device (drivers/net/vrf.c): an L3 master whose
// table its members' packets are routed in. It reads nothing; what a
// route sends out of it is routed again in its table by the dataplane,
// so a packet written to it is dropped (counted as sent).
type vrf struct {
	dummy
	table uint32
}

// VRFMTU is a VRF device's MTU, as vrf_setup sets it (IP6_MAX_MTU).
const VRFMTU = 65575

// NewVRF makes a VRF device of table, with mac (nil: a random one, as
// Linux's eth_hw_addr_random).
func NewVRF(table uint32, mac net.HardwareAddr) Device {
	return &vrf{dummy: *NewDummyMAC(mac).(*dummy), table: table}
}

func (*vrf) WriteBatch(_ int, pkts [][]byte, _ []netip.Addr) (int, error) { return len(pkts), nil }
func (*vrf) Kind() string                                                 { return "vrf" }
func (*vrf) Flags() Flags                                                 { return FlagNoARP | FlagMaster }

// Table is the VRF's routing table.
func (v *vrf) Table() uint32 { return v.table }

// Spec is what makes it again: `table N`.
func (v *vrf) Spec() []string { return []string{"table", strconv.FormatUint(uint64(v.table), 10)} }

// VRFTable is the table of a VRF device, and false for any other.
func VRFTable(h Hardware) (uint32, bool) {
	if v, ok := h.(*vrf); ok {
		return v.table, true
	}
	return 0, false
}
