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
}

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
// tentative while DAD runs (one solicitation, a retrans time to answer).
// The link listens to its solicited-node group already (Groups): it
// joined before the address was published.
func (n *ND) syncAddrs() {
	cur := n.link.Addrs()
	seen := map[netip.Addr]bool{}
	for _, p := range cur {
		a := p.Addr()
		seen[a] = true
		if n.addrs[a] == nil {
			n.addrs[a] = &ownAddr{tentative: true, until: time.Now().Add(n.table.Params().Retrans)}
			n.send(n.ns(netip.IPv6Unspecified(), SolicitedNode(a), a), MulticastMAC(SolicitedNode(a)))
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
	for _, o := range n.addrs {
		if o.tentative && !o.failed {
			if !now.Before(o.until) {
				o.tentative = false
				n.raSync() // the link-local may now send RAs
			} else {
				next = min(next, o.until.Sub(now))
			}
		}
	}
	return next
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
