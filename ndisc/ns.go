package ndisc

import (
	"net/netip"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Neighbour Solicitations (RFC 4861 4.3, 7.2.3): the ones the router
// answers for its addresses, and the ones it sends (ns).

// recvNS checks a solicitation's body and answers it.
func (n *ND) recvNS(src, dst netip.Addr, srcMAC MAC, body []byte) Count {
	if len(body) < header.NDPNSMinimumSize {
		return CountInvalid
	}
	ns := header.NDPNeighborSolicit(body)
	sll, ok := LinkOption(ns.Options(), optSourceLL)
	target := netip.AddrFrom16(ns.TargetAddress().As16())
	if !ok || target.IsMulticast() || src.IsUnspecified() && (!isSolicitedNode(dst) || sll != nil) {
		return CountInvalid
	}
	n.solicited(src, dst, target, sll, srcMAC)
	return accepted
}

// solicited answers a Neighbour Solicitation for one of the router's
// addresses on the link as Linux's ndisc_recv_ns does: a DAD probe (from
// ::) gets an advertisement to all-nodes; a multicast solicitation a
// solicited one with override and the target's link-layer address; a
// unicast one (a NUD probe) a solicited one without either. The router
// flag is always set.
func (n *ND) solicited(src, dst, target netip.Addr, sll []byte, srcMAC MAC) {
	o := n.addrs[target]
	if o == nil || o.failed {
		return
	}
	if o.tentative {
		if src.IsUnspecified() {
			o.duplicate() // another node is trying the same address
		}
		return
	}
	if src.IsUnspecified() {
		n.send(n.na(target, header.IPv6AllNodesMulticastAddress.As16(), false, true, true), MulticastMAC(allNodes))
		return
	}
	multicast := dst.IsMulticast()
	if sll != nil {
		n.table.Solicited(src, MAC(sll))
	}
	n.send(n.na(target, src.As16(), true, multicast, multicast), srcMAC)
}

// ns builds a Neighbour Solicitation for target, from src to dst, with the
// link's MAC as source link-layer option unless src is ::.
func (n *ND) ns(src, dst, target netip.Addr) []byte {
	opts := header.NDPOptionsSerializer{}
	if !src.IsUnspecified() {
		opts = append(opts, header.NDPSourceLinkLayerAddressOption(tcpip.LinkAddress(n.mac[:])))
	}
	body := make([]byte, header.NDPNSMinimumSize+opts.Length())
	ns := header.NDPNeighborSolicit(body)
	ns.SetTargetAddress(tcpip.AddrFrom16(target.As16()))
	ns.Options().Serialize(opts)
	return icmp(header.ICMPv6NeighborSolicit, src.As16(), dst.As16(), body)
}
