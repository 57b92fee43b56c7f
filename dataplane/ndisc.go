package dataplane

import (
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"urouter/ndisc"
)

// ndisc is an Ethernet link's Neighbour Discovery (RFC 4861), run by one
// goroutine of its own: it answers Neighbour Solicitations for the
// router's addresses on the link, applies advertisements to the neighbour
// cache, runs the cache's timers (and so sends its solicitations), checks
// the router's new addresses for duplicates (DAD), and sends Router
// Advertisements (radv.go). The packet path only hands it messages,
// through a bounded queue, and never waits for it.
type ndProto struct {
	e    *ether
	in   chan ndMsg
	kick chan struct{} // addresses or RA settings changed
	quit chan struct{}
	done chan struct{}
	once sync.Once

	mu sync.Mutex // what sends: the sender and its scratch
	tx *worker    // routes the ICMPv6 errors the link makes (Address Unreachable)
	b  []byte

	// the goroutine's own
	addrs map[netip.Addr]*ownAddr
	ra    raState
}

type ndMsg struct {
	src ndisc.MAC
	p   []byte
}

// ownAddr is a router address on the link, as DAD sees it.
type ownAddr struct {
	tentative bool
	failed    bool // a duplicate answered: never used on the link
	until     time.Time
}

func newNDisc(e *ether) *ndProto {
	return &ndProto{e: e, in: make(chan ndMsg, 256), kick: make(chan struct{}, 1), quit: make(chan struct{}),
		done: make(chan struct{}), addrs: map[netip.Addr]*ownAddr{}, b: make([]byte, 2048)}
}

func (n *ndProto) start() { go n.run() }

func (n *ndProto) stop() {
	n.once.Do(func() {
		close(n.quit)
		if n.e.link.Load() != nil {
			<-n.done
		}
	})
}

// receive hands a message over, copied; a full queue drops it. Either way
// it is counted as received, as Linux counts ND in the interface's
// statistics.
func (n *ndProto) receive(src ndisc.MAC, p []byte) {
	c := n.e.ndCtrs.Load()
	if c != nil {
		c.RxPackets.addShared(1)
		c.RxBytes.addShared(uint64(len(p)))
	}
	select {
	case n.in <- ndMsg{src: src, p: append([]byte(nil), p...)}:
		n.e.stats.NDReceived.Add(1)
	default:
		n.e.stats.NDDropped.Add(1)
		if c != nil {
			c.Drops[DropNDQueue].addShared(1)
		}
	}
}

// refuse counts a message handle discards.
func (n *ndProto) refuse() {
	n.e.stats.NDDropped.Add(1)
	if c := n.e.ndCtrs.Load(); c != nil {
		c.Drops[DropNDInvalid].addShared(1)
	}
}

// changed asks the goroutine to look at the link's addresses and RA again.
func (n *ndProto) changed() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *ndProto) run() {
	defer close(n.done)
	t := time.NewTimer(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-n.quit:
			return
		case m := <-n.in:
			n.handle(m.src, header.IPv6(m.p))
		case <-n.e.neigh.Kick():
		case <-n.kick:
			n.syncAddrs()
		case <-t.C:
		}
		now := time.Now()
		next := time.Duration(n.e.neigh.Run(ndisc.Now()) - ndisc.Now())
		next = min(next, n.dadTimers(now), n.raTimer(now))
		n.publishDAD()
		t.Reset(max(next, time.Millisecond))
	}
}

// syncAddrs notices the link's new and removed addresses: a new one is
// tentative while DAD runs (one solicitation, a retrans time to answer),
// and the link listens to its solicited-node group.
func (n *ndProto) syncAddrs() {
	l := n.e.link.Load()
	cur := l.Addrs()
	n.e.setGroups(cur) // before DAD: another node's probe comes to the group
	seen := map[netip.Addr]bool{}
	for _, p := range cur {
		a := p.Addr()
		seen[a] = true
		if n.addrs[a] == nil {
			n.addrs[a] = &ownAddr{tentative: true, until: time.Now().Add(n.e.neigh.Params().Retrans)}
			n.send(n.ns(netip.IPv6Unspecified(), solicitedNode(a), a), multicastMAC(solicitedNode(a)))
		}
	}
	for a := range n.addrs {
		if !seen[a] {
			delete(n.addrs, a)
		}
	}
	n.raSync(l)
}

// dadTimers ends the DAD of addresses nobody claimed; it returns when it
// wants to run next.
func (n *ndProto) dadTimers(now time.Time) time.Duration {
	next := time.Hour
	for _, o := range n.addrs {
		if o.tentative && !o.failed {
			if !now.Before(o.until) {
				o.tentative = false
				n.raSync(n.e.link.Load()) // the link-local may now send RAs
			} else {
				next = min(next, o.until.Sub(now))
			}
		}
	}
	return next
}

// publishDAD makes the addresses' DAD states what `address show` reads.
func (n *ndProto) publishDAD() {
	m := map[netip.Addr]DADState{}
	for a, o := range n.addrs {
		switch {
		case o.failed:
			m[a] = DADFailed
		case o.tentative:
			m[a] = Tentative
		default:
			m[a] = DADDone
		}
	}
	if old := n.e.dad.Load(); old != nil && maps.Equal(*old, m) {
		return
	}
	n.e.dad.Store(&m)
}

// DADState is where an address of the router's stands in Duplicate
// Address Detection (Linux's IFA_F_TENTATIVE and IFA_F_DADFAILED).
type DADState uint8

const (
	DADDone DADState = iota
	Tentative
	DADFailed
)

// DAD returns the DAD state of address a on the link (done on links
// without ND).
func (l *Link) DAD(a netip.Addr) DADState {
	if e, ok := l.hw.(*ether); ok {
		if m := e.dad.Load(); m != nil {
			if s, ok := (*m)[a]; ok {
				return s
			}
		}
		return Tentative // ND has not seen it yet
	}
	return DADDone
}

// linkLocal is the link's link-local address once past DAD.
func (n *ndProto) linkLocal() (netip.Addr, bool) {
	for a, o := range n.addrs {
		if a.IsLinkLocalUnicast() && !o.tentative && !o.failed {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// handle checks a message as RFC 4861 section 7.1 and 6.1 ask (hop limit
// 255, checksum, code 0, length, options) and acts on it.
func (n *ndProto) handle(srcMAC ndisc.MAC, p header.IPv6) {
	if !p.IsValid(len(p)) || p.HopLimit() != 255 || int(p.PayloadLength())+ipv6Len != len(p) ||
		len(p) < ipv6Len+header.ICMPv6MinimumSize {
		n.refuse()
		return
	}
	m := header.ICMPv6(p.Payload())
	src, dst := netip.AddrFrom16([16]byte(p.SourceAddressSlice())), netip.AddrFrom16([16]byte(p.DestinationAddressSlice()))
	sum := header.ICMPv6Checksum(header.ICMPv6ChecksumParams{Header: m, Src: tcpip.AddrFrom16Slice(p.SourceAddressSlice()),
		Dst: tcpip.AddrFrom16Slice(p.DestinationAddressSlice())})
	if m.Code() != 0 || m.Checksum() != sum {
		n.refuse()
		return
	}
	body := m.MessageBody()
	switch m.Type() {
	case header.ICMPv6NeighborSolicit:
		if len(body) < header.NDPNSMinimumSize {
			break
		}
		ns := header.NDPNeighborSolicit(body)
		sll, ok := linkOption(ns.Options(), optSourceLL)
		target := netip.AddrFrom16(ns.TargetAddress().As16())
		if !ok || target.IsMulticast() || src.IsUnspecified() && (!isSolicitedNode(dst) || sll != nil) {
			break
		}
		n.solicited(src, dst, target, sll, srcMAC)
		return
	case header.ICMPv6NeighborAdvert:
		if len(body) < header.NDPNAMinimumSize {
			break
		}
		na := header.NDPNeighborAdvert(body)
		tll, ok := linkOption(na.Options(), optTargetLL)
		target := netip.AddrFrom16(na.TargetAddress().As16())
		if !ok || target.IsMulticast() || dst.IsMulticast() && na.SolicitedFlag() {
			break
		}
		if o := n.addrs[target]; o != nil {
			o.duplicate() // someone else has the router's address
			return
		}
		adv := ndisc.Advert{Solicited: na.SolicitedFlag(), Override: na.OverrideFlag(), Router: na.RouterFlag()}
		if tll != nil {
			adv.MAC, adv.HasMAC = ndisc.MAC(tll), true
		}
		n.e.neigh.Advertised(target, adv)
		return
	case header.ICMPv6RouterSolicit:
		if len(body) < header.NDPRSMinimumSize {
			break
		}
		sll, ok := linkOption(header.NDPRouterSolicit(body).Options(), optSourceLL)
		if !ok || src.IsUnspecified() && sll != nil {
			break
		}
		if sll != nil {
			n.e.neigh.Solicited(src, ndisc.MAC(sll))
		}
		n.raSolicited(src, srcMAC)
		return
	default:
		return // RAs of other routers and redirects: a router takes none
	}
	n.refuse()
}

// Link-layer address options (RFC 4861 4.6.1).
const (
	optSourceLL = 1
	optTargetLL = 2
)

func isSolicitedNode(a netip.Addr) bool {
	b := a.As16()
	return b[0] == 0xff && b[1] == 0x02 && b[11] == 1 && b[12] == 0xff && binary.BigEndian.Uint64(b[2:10]) == 0
}

// linkOption finds a link-layer address option of kind k; ok is false for
// malformed options (a zero length, say, or one longer than a MAC) and for
// an address no unicast neighbour has (a group's, broadcast, all zeros:
// traffic to it would flood or vanish), which void the message.
func linkOption(opts header.NDPOptions, k uint8) ([]byte, bool) {
	it, err := opts.Iter(true)
	if err != nil {
		return nil, false
	}
	var found []byte
	for {
		o, done, err := it.Next()
		if err != nil {
			return nil, false
		}
		if done {
			return found, found == nil || unicastMAC(found)
		}
		var v []byte
		switch o := o.(type) {
		case header.NDPSourceLinkLayerAddressOption:
			if k == optSourceLL {
				v = []byte(o)
			}
		case header.NDPTargetLinkLayerAddressOption:
			if k == optTargetLL {
				v = []byte(o)
			}
		}
		switch {
		case v == nil || found != nil: // as Linux, the first of two is the one
		case len(v) != 6:
			return nil, false // not an Ethernet address: Linux drops the message
		default:
			found = v
		}
	}
}

// solicited answers a Neighbour Solicitation for one of the router's
// addresses on the link as Linux's ndisc_recv_ns does: a DAD probe (from
// ::) gets an advertisement to all-nodes; a multicast solicitation a
// solicited one with override and the target's link-layer address; a
// unicast one (a NUD probe) a solicited one without either. The router
// flag is always set.
func (n *ndProto) solicited(src, dst, target netip.Addr, sll []byte, srcMAC ndisc.MAC) {
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
		n.send(n.na(target, header.IPv6AllNodesMulticastAddress.As16(), false, true, true), multicastMAC(allNodes))
		return
	}
	multicast := dst.IsMulticast()
	if sll != nil {
		n.e.neigh.Solicited(src, ndisc.MAC(sll))
	}
	n.send(n.na(target, src.As16(), true, multicast, multicast), srcMAC)
}

var allNodes = netip.AddrFrom16(header.IPv6AllNodesMulticastAddress.As16())

// duplicate marks a router address in DAD that another node has: it is
// never used on the link (Linux's dadfailed).
func (o *ownAddr) duplicate() {
	if o.tentative {
		o.failed = true
	}
}

// ns builds a Neighbour Solicitation for target, from src to dst, with the
// link's MAC as source link-layer option unless src is ::.
func (n *ndProto) ns(src, dst, target netip.Addr) []byte {
	opts := header.NDPOptionsSerializer{}
	if !src.IsUnspecified() {
		opts = append(opts, header.NDPSourceLinkLayerAddressOption(tcpip.LinkAddress(n.e.mac[:])))
	}
	body := make([]byte, header.NDPNSMinimumSize+opts.Length())
	ns := header.NDPNeighborSolicit(body)
	ns.SetTargetAddress(tcpip.AddrFrom16(target.As16()))
	ns.Options().Serialize(opts)
	return n.icmp(header.ICMPv6NeighborSolicit, src.As16(), dst.As16(), body)
}

// na builds a Neighbour Advertisement for target (the router's, so the
// router flag), to dst.
func (n *ndProto) na(target netip.Addr, dst [16]byte, solicited, override, withLL bool) []byte {
	opts := header.NDPOptionsSerializer{}
	if withLL {
		opts = append(opts, header.NDPTargetLinkLayerAddressOption(tcpip.LinkAddress(n.e.mac[:])))
	}
	body := make([]byte, header.NDPNAMinimumSize+opts.Length())
	na := header.NDPNeighborAdvert(body)
	na.SetTargetAddress(tcpip.AddrFrom16(target.As16()))
	na.SetRouterFlag(true)
	na.SetSolicitedFlag(solicited)
	na.SetOverrideFlag(override)
	na.Options().Serialize(opts)
	return n.icmp(header.ICMPv6NeighborAdvert, target.As16(), dst, body)
}

// icmp wraps an ND message body in ICMPv6 and IPv6 (hop limit 255),
// behind a zeroed virtio_net_hdr.
func (n *ndProto) icmp(typ header.ICMPv6Type, src, dst [16]byte, body []byte) []byte {
	b := make([]byte, vnetHdrLen+ipv6Len+header.ICMPv6HeaderSize+len(body))
	p := header.IPv6(b[vnetHdrLen:])
	p.Encode(&header.IPv6Fields{PayloadLength: uint16(header.ICMPv6HeaderSize + len(body)),
		TransportProtocol: header.ICMPv6ProtocolNumber, HopLimit: 255,
		SrcAddr: tcpip.AddrFrom16(src), DstAddr: tcpip.AddrFrom16(dst)})
	m := header.ICMPv6(p.Payload())
	m.SetType(typ)
	copy(m.MessageBody(), body)
	m.SetChecksum(header.ICMPv6Checksum(header.ICMPv6ChecksumParams{Header: m, Src: tcpip.AddrFrom16(src), Dst: tcpip.AddrFrom16(dst)}))
	return b
}

func (n *ndProto) send(b []byte, to ndisc.MAC) {
	n.e.writeTo(to, [][]byte{b})
	n.e.stats.NDSent.Add(1)
	if c := n.e.ndCtrs.Load(); c != nil {
		c.TxPackets.addShared(1)
		c.TxBytes.addShared(uint64(len(b) - vnetHdrLen))
	}
}

// unicastMAC: neither a group's (the I/G bit), nor all zeros.
func unicastMAC(m []byte) bool { return m[0]&1 == 0 && ndisc.MAC(m) != ndisc.MAC{} }

// Solicit sends the cache's solicitations, from the link-local address as
// Linux's ndisc_send_ns does when the packet's own source is not given.
func (n *ndProto) Solicit(target netip.Addr, mac ndisc.MAC, unicast bool) {
	l := n.e.link.Load()
	if l == nil {
		return
	}
	src, ok := l.linkLocalAddr()
	if !ok {
		return
	}
	if unicast {
		n.send(n.ns(src, target, target), mac)
		return
	}
	g := solicitedNode(target)
	n.send(n.ns(src, g, target), multicastMAC(g))
}

// Release sends the packets that waited for target.
func (n *ndProto) Release(target netip.Addr, mac ndisc.MAC, pkts [][]byte) { n.e.writeTo(mac, pkts) }

// Unreachable answers each packet that waited in vain with ICMPv6
// Destination Unreachable, Address Unreachable (code 3), as Linux's
// ndisc_error_report, within the ICMPv6 limits.
func (n *ndProto) Unreachable(target netip.Addr, pkts [][]byte) {
	l := n.e.link.Load()
	if l == nil || n.e.dp == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.tx == nil {
		n.tx = newSender(n.e.dp, l)
	}
	for _, b := range pkts {
		k := pkt{b: b}
		if !n.tx.parse(&k) {
			continue
		}
		k.error(DropNeighbour, header.ICMPv6DstUnreachable, header.ICMPv6AddressUnreachable, 0)
		n.tx.drop(l, DropNeighbour)
		n.tx.icmpError(&k)
	}
	n.tx.flush()
}

// Changed passes the cache's news on to whoever watches neighbours (the
// router, for the gateways it probes).
func (n *ndProto) Changed(target netip.Addr, from, to ndisc.State) {
	if dp, l := n.e.dp, n.e.link.Load(); dp != nil && l != nil {
		if fn := dp.neighWatch.Load(); fn != nil {
			(*fn)(l, target, from, to)
		}
	}
}

// jitter is a random duration in [0, d).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(d)))
}
