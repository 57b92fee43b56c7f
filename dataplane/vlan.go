package dataplane

import (
	"urouter/dataplane/port"
	"urouter/ndisc"
)

// tagged takes a frame (h, n bytes after it) that came tagged with a VLAN
// ID (tag). No link is on a VLAN (VLAN links, to come, will claim their
// frames here by the tag's TPID and VID), so it is dropped and counted
// unknown_vlan: Linux marks such a frame another host's
// (__netif_receive_skb_core, PACKET_OTHERHOST) and IPv6 drops it, so a
// trunk's VLANs do not leak into the untagged LAN (nor, of other
// ethertypes, up a TAP mirror). A priority-tagged frame (VID 0) is the
// untagged LAN's, as in Linux. Another MAC's unicast is not for us,
// tagged or not.
func (e *ether) tagged(h *port.EthHdr, _ *port.VLANTag, n int) {
	if h[0]&1 == 0 && ndisc.MAC(h[:6]) != e.mac {
		e.stats.NotForUs.Add(1)
		return
	}
	if ctrs := e.ndCtrs.Load(); ctrs != nil {
		ctrs.RxPackets.addShared(1)
		ctrs.RxBytes.addShared(uint64(n))
		ctrs.Drops[DropUnknownVLAN].addShared(1)
	}
}
