package dataplane

import (
	"net/netip"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/dataplane/port"
	"urouter/ndisc"
)

// ndLink is an Ethernet link as its Neighbour Discovery sees it
// (ndisc.Iface): the ND goroutine's way to the link's frames, addresses,
// counters and the packet path's ICMPv6 errors. It is the ether itself,
// typed apart so that these methods are not the Device's.
type ndLink ether

// ND's packets are framed as the packet path's (writeTo shifts their
// virtio_net_hdr): its headroom must be that header, byte for byte.
const (
	_ = uint(ndisc.Headroom - port.VnetHdrLen)
	_ = uint(port.VnetHdrLen - ndisc.Headroom)
)

func (n *ndLink) Addrs() []netip.Prefix {
	if l := n.link.Load(); l != nil {
		return l.Addrs()
	}
	return nil
}

func (n *ndLink) Name() string {
	if l := n.link.Load(); l != nil {
		return l.Name
	}
	return "?"
}

func (n *ndLink) Send(mac ndisc.MAC, pkts [][]byte) error { return (*ether)(n).writeTo(mac, pkts) }

// Count counts ND in the link's counters and the port's statistics, as
// Linux counts ND in the interface's: received whether queued or not.
func (n *ndLink) Count(c ndisc.Count, bytes int) {
	ctrs := n.ndCtrs.Load()
	switch c {
	case ndisc.CountIn, ndisc.CountQueueFull:
		if ctrs != nil {
			ctrs.RxPackets.addShared(1)
			ctrs.RxBytes.addShared(uint64(bytes))
		}
		if c == ndisc.CountIn {
			n.stats.NDReceived.Add(1)
			return
		}
		n.stats.NDDropped.Add(1)
		if ctrs != nil {
			ctrs.Drops[DropNDQueue].addShared(1)
		}
	case ndisc.CountInvalid, ndisc.CountHopLimit, ndisc.CountChecksum, ndisc.CountRAIgnored,
		ndisc.CountRedirect, ndisc.CountDADConflict:
		n.stats.NDDropped.Add(1)
		if ctrs != nil {
			ctrs.Drops[ndDrops[c]].addShared(1)
		}
	case ndisc.CountOut:
		n.stats.NDSent.Add(1)
		if ctrs != nil {
			ctrs.TxPackets.addShared(1)
			ctrs.TxBytes.addShared(uint64(bytes))
		}
	}
}

// ndDrops are the drop reasons of what ND refused, by its count.
var ndDrops = [...]DropReason{
	ndisc.CountInvalid: DropNDInvalid, ndisc.CountHopLimit: DropNDHopLimit, ndisc.CountChecksum: DropNDChecksum,
	ndisc.CountRAIgnored: DropRAIgnored, ndisc.CountRedirect: DropRedirectIgnored, ndisc.CountDADConflict: DropDADConflict,
}

// Unreachable answers each packet that waited in vain with ICMPv6
// Destination Unreachable, Address Unreachable (code 3), as Linux's
// ndisc_error_report, within the ICMPv6 limits.
func (n *ndLink) Unreachable(target netip.Addr, pkts [][]byte) {
	l := n.link.Load()
	if l == nil || n.dp == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.tx == nil {
		n.tx = n.dp.newSender(l)
	}
	n.tx.epoch.Add(1) // a batch in flight: a port closes after it (synchronize)
	defer n.tx.epoch.Add(1)
	n.tx.loadTaps(false)
	defer n.tx.dropTaps()
	n.tx.now = n.dp.now() // its batch: the limiters' clock, as a worker's
	n.tx.batchSeq++
	for _, b := range pkts {
		k := pkt{b: b}
		if !n.tx.parse(&k) {
			continue
		}
		k.error(DropNeighbour, header.ICMPv6DstUnreachable, header.ICMPv6AddressUnreachable, 0)
		n.tx.drop(l, DropNeighbour)
		n.tx.dropped(l, DirOut, k.b, nil, DropNeighbour)
		n.tx.icmpError(&k)
	}
	n.tx.flush()
}

// Changed passes the cache's news on to whoever watches neighbours (the
// router, for the gateways it probes).
func (n *ndLink) Changed(target netip.Addr, from, to ndisc.State) {
	if dp, l := n.dp, n.link.Load(); dp != nil && l != nil {
		if fn := dp.neighWatch.Load(); fn != nil {
			(*fn)(l, target, from, to)
		}
	}
}

// DAD returns the DAD state of address a on the link (done on links
// without ND).
func (l *Link) DAD(a netip.Addr) ndisc.DADState {
	if e, ok := l.hw.(*ether); ok {
		return e.nd.DAD(a)
	}
	return ndisc.DADDone
}

// SetRA sets a link's advertisements; it fails for links without ND.
func (l *Link) SetRA(c ndisc.RAConfig) bool {
	e, ok := l.hw.(*ether)
	if !ok {
		return false
	}
	e.nd.SetRA(c)
	return true
}

// RA returns a link's advertisement settings, false for links without ND.
func (l *Link) RA() (ndisc.RAConfig, bool) {
	e, ok := l.hw.(*ether)
	if !ok {
		return ndisc.RAConfig{}, false
	}
	return e.nd.RA(), true
}
