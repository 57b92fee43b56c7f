package ndisc

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Headroom is what precedes the IPv6 packet in every buffer ND sends or
// the cache holds: the port's 10-byte virtio_net_hdr, left zero by ND.
const Headroom = 10

const ipv6Len = header.IPv6MinimumSize

// Iface is what Neighbour Discovery asks of its link. ND calls it from its
// own goroutine (Receive's Count from the link's reader), with no lock of
// its own held.
type Iface interface {
	// Name is the link's, for the log.
	Name() string
	// Addrs are the link's addresses.
	Addrs() []netip.Prefix
	// Send frames each packet (Headroom bytes, then IPv6) from the link's
	// MAC to mac, and sends it.
	Send(mac MAC, pkts [][]byte) error
	// Unreachable answers packets whose neighbour failed to resolve
	// (ICMPv6 Address Unreachable: the packet path's business).
	Unreachable(target netip.Addr, pkts [][]byte)
	// Changed says a neighbour's entry went from one state to another.
	Changed(target netip.Addr, from, to State)
	// Count counts a message of bytes bytes (its IPv6 packet).
	Count(c Count, bytes int)
}

// Count is what Iface.Count counts.
type Count uint8

const (
	CountIn        Count = iota // a message taken for the ND goroutine
	CountQueueFull              // a message dropped: the goroutine's queue was full
	CountInvalid                // a message the goroutine refused (after CountIn): malformed
	CountOut                    // a message sent
	// the goroutine refused these too, each for its reason
	CountHopLimit    // a hop limit other than 255: not from the link (RFC 4861 7.1.1)
	CountChecksum    // a bad ICMPv6 checksum
	CountRAIgnored   // another router's advertisement: a router learns nothing from it
	CountRedirect    // a Redirect: a router follows its own routes
	CountDADConflict // an advertisement of the router's own address (duplicate or forged)
)

// accepted is what the receivers return for a message they took.
const accepted = CountIn

// ND is an Ethernet link's Neighbour Discovery, run by one goroutine of
// its own: it answers Neighbour Solicitations for the router's addresses
// on the link, applies advertisements to the neighbour cache, runs the
// cache's timers (and so sends its solicitations), checks the router's new
// addresses for duplicates (DAD), and sends Router Advertisements. The
// packet path only hands it messages, through a bounded queue, and never
// waits for it.
type ND struct {
	link    Iface
	mac     MAC
	table   *Table
	in      chan msg
	kick    chan struct{} // addresses or RA settings changed
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
	started atomic.Bool

	ra  atomic.Pointer[RAConfig]
	dad atomic.Pointer[map[netip.Addr]DADState] // published by the goroutine
	// dadTransmits is how many solicitations DAD sends for a new address
	// (Linux's dad_transmits; 0 when its accept_dad knobs say no DAD)
	dadTransmits atomic.Int32
	// host: the link's forwarding is 0, so its advertisements say it is
	// no router (Linux's NA router flag is the link's forwarding)
	host atomic.Bool
	// untracked is the link's accept_untracked_na: 1, an advertisement
	// for an address without an entry makes one; 2, if its source is on
	// one of the link's prefixes
	untracked atomic.Int32
	// lastLog is when the goroutine last logged a DAD conflict
	lastLog time.Time

	// the goroutine's own
	addrs   map[netip.Addr]*ownAddr
	raState raState
}

type msg struct {
	src MAC
	p   []byte
}

// New makes the Neighbour Discovery of a link whose MAC is mac, with a
// neighbour cache of knobs p whose held packets count against held (its
// router's; nil: a budget of the cache's own); Start runs it.
func New(link Iface, mac MAC, p Params, held *Budget) *ND {
	if held == nil {
		held = NewBudget()
	}
	n := &ND{link: link, mac: mac, in: make(chan msg, 256), kick: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{}), addrs: map[netip.Addr]*ownAddr{}}
	n.table = newTable(n, p, held)
	n.dadTransmits.Store(1)
	ra := DefaultRA()
	n.ra.Store(&ra)
	return n
}

// Table is the link's neighbour cache.
func (n *ND) Table() *Table { return n.table }

// Start runs the ND goroutine.
func (n *ND) Start() {
	n.started.Store(true)
	go n.run()
}

// Stop ends the ND goroutine and waits for it; the cache lets go of
// the packets it held.
func (n *ND) Stop() {
	n.once.Do(func() {
		close(n.quit)
		if n.started.Load() {
			<-n.done
		}
		n.table.Close()
	})
}

// Receive hands a message (from MAC src; p is its IPv6 packet) over,
// copied; a full queue drops it. Either way it is counted as received, as
// Linux counts ND in the interface's statistics.
func (n *ND) Receive(src MAC, p []byte) {
	select {
	case n.in <- msg{src: src, p: append([]byte(nil), p...)}:
		n.link.Count(CountIn, len(p))
	default:
		n.link.Count(CountQueueFull, len(p))
	}
}

// refuse counts a message handle discards, for reason c.
func (n *ND) refuse(c Count, p []byte) { n.link.Count(c, len(p)) }

// Resync asks the goroutine to look at the link's addresses and RA again.
func (n *ND) Resync() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *ND) run() {
	defer close(n.done)
	t := time.NewTimer(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-n.quit:
			return
		case m := <-n.in:
			// an address added before the message came must be known to
			// it: select takes ready cases in no order
			select {
			case <-n.kick:
				n.syncAddrs()
			default:
			}
			n.handle(m.src, header.IPv6(m.p))
		case <-n.table.Kick():
		case <-n.kick:
			n.syncAddrs()
		case <-t.C:
		}
		now := time.Now()
		next := time.Duration(n.table.Run(Now()) - Now())
		next = min(next, n.dadTimers(now), n.raTimer(now))
		n.publishDAD()
		t.Reset(max(next, time.Millisecond))
	}
}

// handle checks a message as RFC 4861 section 7.1 and 6.1 ask (hop limit
// 255, checksum, code 0, length, options) and acts on it; what it refuses
// is counted by reason.
func (n *ND) handle(srcMAC MAC, p header.IPv6) {
	if !p.IsValid(len(p)) || int(p.PayloadLength())+ipv6Len != len(p) || len(p) < ipv6Len+header.ICMPv6MinimumSize {
		n.refuse(CountInvalid, p)
		return
	}
	if p.HopLimit() != 255 {
		n.refuse(CountHopLimit, p)
		return
	}
	m := header.ICMPv6(p.Payload())
	src, dst := netip.AddrFrom16([16]byte(p.SourceAddressSlice())), netip.AddrFrom16([16]byte(p.DestinationAddressSlice()))
	sum := header.ICMPv6Checksum(header.ICMPv6ChecksumParams{Header: m, Src: tcpip.AddrFrom16Slice(p.SourceAddressSlice()),
		Dst: tcpip.AddrFrom16Slice(p.DestinationAddressSlice())})
	switch {
	case m.Checksum() != sum:
		n.refuse(CountChecksum, p)
		return
	case m.Code() != 0:
		n.refuse(CountInvalid, p)
		return
	}
	c := CountInvalid
	switch m.Type() {
	case header.ICMPv6NeighborSolicit:
		c = n.recvNS(src, dst, srcMAC, m.MessageBody())
	case header.ICMPv6NeighborAdvert:
		c = n.recvNA(src, dst, srcMAC, m.MessageBody())
	case header.ICMPv6RouterSolicit:
		c = n.recvRS(src, srcMAC, m.MessageBody())
	case header.ICMPv6RouterAdvert:
		// a router's routes and addresses are its administrator's (Linux
		// with forwarding 1); unlike Linux, not even the sender's
		// link-layer address is taken
		c = CountRAIgnored
	case header.ICMPv6RedirectMsg:
		c = CountRedirect
	}
	if c != accepted {
		n.refuse(c, p)
	}
}

// icmp wraps an ND message body in ICMPv6 and IPv6 (hop limit 255),
// behind Headroom zero bytes.
func icmp(typ header.ICMPv6Type, src, dst [16]byte, body []byte) []byte {
	b := make([]byte, Headroom+ipv6Len+header.ICMPv6HeaderSize+len(body))
	p := header.IPv6(b[Headroom:])
	p.Encode(&header.IPv6Fields{PayloadLength: uint16(header.ICMPv6HeaderSize + len(body)),
		TransportProtocol: header.ICMPv6ProtocolNumber, HopLimit: 255,
		SrcAddr: tcpip.AddrFrom16(src), DstAddr: tcpip.AddrFrom16(dst)})
	m := header.ICMPv6(p.Payload())
	m.SetType(typ)
	copy(m.MessageBody(), body)
	m.SetChecksum(header.ICMPv6Checksum(header.ICMPv6ChecksumParams{Header: m, Src: tcpip.AddrFrom16(src), Dst: tcpip.AddrFrom16(dst)}))
	return b
}

// send sends a message ND made. A message the link fails to send is not
// retried here: ND's own retransmissions (probes, DAD, the RA schedule)
// are the protocol's answer to loss; it is counted as sent, as before.
func (n *ND) send(b []byte, to MAC) {
	_ = n.link.Send(to, [][]byte{b}) // lost as on the wire; see above
	n.link.Count(CountOut, len(b)-Headroom)
}

// linkLocalAddr is the link's link-local address, if it has one.
func (n *ND) linkLocalAddr() (netip.Addr, bool) { return LinkLocalOf(n.link.Addrs()) }

// LinkLocalOf is the first link-local address of addrs, if there is one.
func LinkLocalOf(addrs []netip.Prefix) (netip.Addr, bool) {
	for _, p := range addrs {
		if p.Addr().IsLinkLocalUnicast() {
			return p.Addr(), true
		}
	}
	return netip.Addr{}, false
}

// solicit sends the cache's solicitations, from the link-local address as
// Linux's ndisc_send_ns does when the packet's own source is not given.
func (n *ND) solicit(target netip.Addr, mac MAC, unicast bool) {
	src, ok := n.linkLocalAddr()
	if !ok {
		return
	}
	if unicast {
		n.send(n.ns(src, target, target), mac)
		return
	}
	g := SolicitedNode(target)
	n.send(n.ns(src, g, target), MulticastMAC(g))
}

// release sends the packets that waited for target. A failed send loses
// them as the wire would; their senders' transports retransmit.
func (n *ND) release(target netip.Addr, mac MAC, pkts [][]byte) {
	_ = n.link.Send(mac, pkts) // see above
}

// unreachable hands the packets that waited in vain to the link.
func (n *ND) unreachable(target netip.Addr, pkts [][]byte) { n.link.Unreachable(target, pkts) }

// changed passes the cache's news on to the link.
func (n *ND) changed(target netip.Addr, from, to State) { n.link.Changed(target, from, to) }
