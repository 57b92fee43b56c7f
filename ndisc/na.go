package ndisc

import (
	"log"
	"net/netip"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Neighbour Advertisements (RFC 4861 4.4, 7.2.5): the ones the cache
// learns from, and the ones the router sends for its addresses (na).

// recvNA checks an advertisement's body and applies it: to DAD if it is
// for one of the router's addresses, else to the cache.
func (n *ND) recvNA(src, dst netip.Addr, srcMAC MAC, body []byte) Count {
	if len(body) < header.NDPNAMinimumSize {
		return CountInvalid
	}
	na := header.NDPNeighborAdvert(body)
	tll, ok := LinkOption(na.Options(), optTargetLL)
	target := netip.AddrFrom16(na.TargetAddress().As16())
	if !ok || target.IsMulticast() || dst.IsMulticast() && na.SolicitedFlag() {
		return CountInvalid
	}
	if o := n.addrs[target]; o != nil {
		n.conflict(target, srcMAC, o)
		return CountDADConflict
	}
	adv := Advert{Solicited: na.SolicitedFlag(), Override: na.OverrideFlag(), Router: na.RouterFlag(),
		Untracked: n.acceptsUntracked(src)}
	if tll != nil {
		adv.MAC, adv.HasMAC = MAC(tll), true
	}
	n.table.Advertised(target, adv)
	return accepted
}

// conflict is another node advertising the router's address: a duplicate
// that fails DAD while the address is tentative, else a conflict to log
// (as Linux's addrconf_dad_failure and ndisc_recv_na do), never a cache
// entry. The log is at most once a second: a flood of them is counted.
func (n *ND) conflict(a netip.Addr, mac MAC, o *ownAddr) {
	tentative := o.tentative
	o.duplicate()
	if now := time.Now(); now.Sub(n.lastLog) >= time.Second {
		n.lastLog = now
		if tentative {
			log.Printf("ndisc: %s: IPv6 duplicate address %s used by %s detected!", n.link.Name(), a, mac)
		} else {
			log.Printf("ndisc: NA: %s advertised our address %s on %s!", mac, a, n.link.Name())
		}
	}
}

// SetUntrackedNA sets the link's accept_untracked_na (0, 1 or 2).
func (n *ND) SetUntrackedNA(mode int) { n.untracked.Store(int32(mode)) }

// acceptsUntracked reports whether an advertisement from src may create
// an entry, as Linux's accept_untracked_na on a forwarding link.
func (n *ND) acceptsUntracked(src netip.Addr) bool {
	if n.host.Load() {
		return false
	}
	switch n.untracked.Load() {
	case 1:
		return true
	case 2:
		for _, p := range n.link.Addrs() {
			if p.Contains(src) {
				return true
			}
		}
	}
	return false
}

// SetRouter says whether the link's advertisements carry the router flag
// (Linux's net.ipv6.conf.LINK.forwarding).
func (n *ND) SetRouter(on bool) { n.host.Store(!on) }

// na builds a Neighbour Advertisement for target (the router's: the
// router flag unless the link's forwarding is off), to dst.
func (n *ND) na(target netip.Addr, dst [16]byte, solicited, override, withLL bool) []byte {
	opts := header.NDPOptionsSerializer{}
	if withLL {
		opts = append(opts, header.NDPTargetLinkLayerAddressOption(tcpip.LinkAddress(n.mac[:])))
	}
	body := make([]byte, header.NDPNAMinimumSize+opts.Length())
	na := header.NDPNeighborAdvert(body)
	na.SetTargetAddress(tcpip.AddrFrom16(target.As16()))
	na.SetRouterFlag(!n.host.Load())
	na.SetSolicitedFlag(solicited)
	na.SetOverrideFlag(override)
	na.Options().Serialize(opts)
	return icmp(header.ICMPv6NeighborAdvert, target.As16(), dst, body)
}
