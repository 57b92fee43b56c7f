package ndisc

import (
	"maps"
	"net/netip"
	"time"
)

// Duplicate Address Detection (RFC 4862 5.4) of the router's addresses
// on the link.

// DADState is where an address of the router's stands in Duplicate
// Address Detection (Linux's IFA_F_TENTATIVE and IFA_F_DADFAILED).
type DADState uint8

const (
	DADDone DADState = iota
	Tentative
	DADFailed
)

// ownAddr is a router address on the link, as DAD sees it.
type ownAddr struct {
	tentative bool
	failed    bool // a duplicate answered: never used on the link
	until     time.Time
	left      int32 // solicitations still to send
}

// SetDADTransmits sets how many solicitations DAD sends for each address
// the link gets from now on (Linux's dad_transmits); 0: none, an address
// is usable at once (accept_dad 0).
func (n *ND) SetDADTransmits(count int) { n.dadTransmits.Store(int32(max(count, 0))) }

// duplicate marks a router address in DAD that another node has: it is
// never used on the link (Linux's dadfailed).
func (o *ownAddr) duplicate() {
	if o.tentative {
		o.failed = true
	}
}

// DAD returns the DAD state of address a on the link.
func (n *ND) DAD(a netip.Addr) DADState {
	if m := n.dad.Load(); m != nil {
		if s, ok := (*m)[a]; ok {
			return s
		}
	}
	return Tentative // ND has not seen it yet
}

// syncAddrs notices the link's new and removed addresses: a new one is
// tentative while DAD runs (dad_transmits solicitations, a retrans time
// apart, and a retrans time after the last to answer).
// The link listens to its solicited-node group already (Groups): it
// joined before the address was published.
func (n *ND) syncAddrs() {
	cur := n.link.Addrs()
	seen := map[netip.Addr]bool{}
	for _, p := range cur {
		a := p.Addr()
		seen[a] = true
		if n.addrs[a] == nil {
			o := &ownAddr{left: n.dadTransmits.Load()}
			n.addrs[a] = o
			n.solicitOwn(a, o, time.Now())
		}
	}
	for a := range n.addrs {
		if !seen[a] {
			delete(n.addrs, a)
		}
	}
	n.raSync()
}

// dadTimers ends the DAD of addresses nobody claimed; it returns when it
// wants to run next.
func (n *ND) dadTimers(now time.Time) time.Duration {
	next := time.Hour
	for a, o := range n.addrs {
		if o.tentative && !o.failed {
			if !now.Before(o.until) {
				n.solicitOwn(a, o, now)
			}
			if o.tentative {
				next = min(next, o.until.Sub(now))
			}
		}
	}
	return next
}

// solicitOwn sends address a's next DAD solicitation, or ends its DAD
// when none is left to send.
func (n *ND) solicitOwn(a netip.Addr, o *ownAddr, now time.Time) {
	if o.left == 0 {
		o.tentative = false
		n.raSync() // the link-local may now send RAs
		return
	}
	o.left--
	o.tentative, o.until = true, now.Add(n.table.Params().Retrans)
	n.send(n.ns(netip.IPv6Unspecified(), SolicitedNode(a), a), MulticastMAC(SolicitedNode(a)))
}

// publishDAD makes the addresses' DAD states what `address show` reads.
func (n *ND) publishDAD() {
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
	if old := n.dad.Load(); old != nil && maps.Equal(*old, m) {
		return
	}
	n.dad.Store(&m)
}

// linkLocal is the link's link-local address once past DAD.
func (n *ND) linkLocal() (netip.Addr, bool) {
	for a, o := range n.addrs {
		if a.IsLinkLocalUnicast() && !o.tentative && !o.failed {
			return a, true
		}
	}
	return netip.Addr{}, false
}
