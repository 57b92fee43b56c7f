package dataplane

import "sync/atomic"

// What the packet path reads of Linux's IPv6 knobs (net.ipv6.conf.*,
// net.ipv6.icmp.*): the router keeps the sysctl values, by their names,
// and sets these.

// linkConf is a link's share of net.ipv6.conf.LINK: what a packet on the
// link reads, one atomic word each.
type linkConf struct {
	mtu6     atomic.Uint32 // the IPv6 MTU (mtu), at most the link's; 0: the link's
	hopLimit atomic.Uint32 // of what the router sends out of it (hop_limit); 0: 64
	noIPv6   atomic.Bool   // disable_ipv6: no IPv6 in or out
}

// IPv6MTU is the MTU IPv6 uses on the link (net.ipv6.conf.LINK.mtu): the
// link's, or less.
func (l *Link) IPv6MTU() int {
	if m := l.conf.mtu6.Load(); m != 0 {
		return int(m)
	}
	return l.MTU()
}

// SetIPv6MTU sets it, within [MinMTU, MTU()].
func (l *Link) SetIPv6MTU(mtu int) error {
	if mtu < MinMTU || mtu > l.MTU() {
		return ErrMTU
	}
	l.conf.mtu6.Store(uint32(mtu))
	return nil
}

// HopLimit is the hop limit of the packets the router makes and sends out
// of the link (net.ipv6.conf.LINK.hop_limit).
func (l *Link) HopLimit() uint8 {
	if h := l.conf.hopLimit.Load(); h != 0 {
		return uint8(h)
	}
	return defaultHopLimit
}

// SetHopLimit sets it (1 to 255; 0 is Linux's 64).
func (l *Link) SetHopLimit(h uint8) { l.conf.hopLimit.Store(uint32(h)) }

// defaultHopLimit is Linux's default hop_limit.
const defaultHopLimit = 64

// SetIPv6 turns IPv6 on the link on or off (net.ipv6.conf.LINK.disable_ipv6):
// off, nothing is received or sent on it, though it stays up.
func (l *Link) SetIPv6(on bool) { l.conf.noIPv6.Store(!on) }

// IPv6Enabled reports whether IPv6 is on for the link.
func (l *Link) IPv6Enabled() bool { return !l.conf.noIPv6.Load() }

// carries reports whether IPv6 goes in and out of the link: it is up, and
// IPv6 is not disabled on it.
func (l *Link) carries() bool { return l.Up() && !l.conf.noIPv6.Load() }

// SetDADTransmits sets how many solicitations Duplicate Address Detection
// sends for each new address of an Ethernet link (dad_transmits, 0 for
// none: the accept_dad knobs say 0 too); other links do no DAD.
func (l *Link) SetDADTransmits(n int) {
	if e, ok := l.hw.(*ether); ok {
		e.nd.SetDADTransmits(n)
	}
}

// SetUntrackedNA sets an Ethernet link's accept_untracked_na.
func (l *Link) SetUntrackedNA(mode int) {
	if e, ok := l.hw.(*ether); ok {
		e.nd.SetUntrackedNA(mode)
	}
}

// SetRouterFlag says whether an Ethernet link's Neighbour Advertisements
// say the router is one (its forwarding knob, as Linux's NA router flag).
func (l *Link) SetRouterFlag(on bool) {
	if e, ok := l.hw.(*ether); ok {
		e.nd.SetRouter(on)
	}
}

// SetForwarding turns forwarding on or off for the whole router
// (net.ipv6.conf.all.forwarding): off, a packet not for the router is
// dropped, as Linux's ip6_forward drops it, with no ICMPv6 error.
func (dp *Dataplane) SetForwarding(on bool) { dp.noForward.Store(!on) }

// SetICMPRateMask sets which ICMPv6 types the rate limits hold back
// (net.ipv6.icmp.ratemask): bit t of mask for type t.
func (dp *Dataplane) SetICMPRateMask(mask [4]uint64) {
	for i, m := range mask {
		dp.icmp.mask[i].Store(m)
	}
}
