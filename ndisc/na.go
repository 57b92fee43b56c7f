package ndisc

import (
	"net/netip"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Neighbour Advertisements (RFC 4861 4.4, 7.2.5): the ones the cache
// learns from, and the ones the router sends for its addresses (na).

// recvNA checks an advertisement's body and applies it: to DAD if it is
// for one of the router's addresses, else to the cache; false: invalid.
func (n *ND) recvNA(dst netip.Addr, body []byte) bool {
	if len(body) < header.NDPNAMinimumSize {
		return false
	}
	na := header.NDPNeighborAdvert(body)
	tll, ok := LinkOption(na.Options(), optTargetLL)
	target := netip.AddrFrom16(na.TargetAddress().As16())
	if !ok || target.IsMulticast() || dst.IsMulticast() && na.SolicitedFlag() {
		return false
	}
	if o := n.addrs[target]; o != nil {
		o.duplicate() // someone else has the router's address
		return true
	}
	adv := Advert{Solicited: na.SolicitedFlag(), Override: na.OverrideFlag(), Router: na.RouterFlag()}
	if tll != nil {
		adv.MAC, adv.HasMAC = MAC(tll), true
	}
	n.table.Advertised(target, adv)
	return true
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
