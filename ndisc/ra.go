package ndisc

import (
	"net/netip"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Router Solicitations and the advertisements' settings (RFC 4861 6.2);
// the schedule and the message are radv.go's.

// RAConfig is what a link's Router Advertisements say (RFC 4861 6.2.1;
// `ra set`, `ra prefix` in the command language).
type RAConfig struct {
	Enabled bool
	// MinInterval and MaxInterval bound the time between unsolicited
	// advertisements (MinRtrAdvInterval, MaxRtrAdvInterval).
	MinInterval, MaxInterval time.Duration
	// Lifetime is the router lifetime: how long hosts keep the router as
	// a default router; 0 says it is not one.
	Lifetime   time.Duration
	Preference int8 // default router preference (RFC 4191): -1 low, 0 medium, 1 high
	MTU        uint32
	HopLimit   uint8
	Managed    bool // M: addresses from DHCPv6
	Other      bool // O: other configuration from DHCPv6
	// Prefixes are advertised as given; without any, each /64 of the
	// link's global addresses is, on-link and autonomous.
	Prefixes []RAPrefix
	RDNSS    []netip.Addr
	// RDNSSLifetime is how long hosts may use the RDNSS servers.
	RDNSSLifetime time.Duration
}

// RAPrefix is one Prefix Information option.
type RAPrefix struct {
	Prefix           netip.Prefix
	Valid, Preferred time.Duration
	OnLink           bool
	Autonomous       bool
}

// DefaultRA is RFC 4861's defaults, not yet enabled: intervals of 200 to
// 600 s, a router lifetime of three times the longest interval, hop limit
// 64.
func DefaultRA() RAConfig {
	return RAConfig{MinInterval: 200 * time.Second, MaxInterval: 600 * time.Second,
		Lifetime: 1800 * time.Second, HopLimit: 64, RDNSSLifetime: 1200 * time.Second}
}

// DefaultPrefix is a prefix with RFC 4861's lifetimes (30 days valid,
// 7 days preferred), on-link and autonomous.
func DefaultPrefix(p netip.Prefix) RAPrefix {
	return RAPrefix{Prefix: p, Valid: 30 * 24 * time.Hour, Preferred: 7 * 24 * time.Hour, OnLink: true, Autonomous: true}
}

type raState struct {
	cfg     RAConfig
	unicast []soliciter // solicitations to answer, each by its own due time
	sent    int         // unsolicited advertisements so far
	next    time.Time   // the next one; zero: none planned
	last    time.Time   // the last multicast one
	stopped bool        // a final one (lifetime 0) is owed
}

// SetRA sets the link's advertisements.
func (n *ND) SetRA(c RAConfig) {
	n.ra.Store(&c)
	n.Resync()
}

// RA returns the link's advertisement settings.
func (n *ND) RA() RAConfig { return *n.ra.Load() }

// raSync takes new settings: enabling starts the initial advertisements,
// disabling owes a last one with a lifetime of 0 (RFC 4861 6.2.5).
func (n *ND) raSync() {
	c := *n.ra.Load()
	was := n.raState.cfg.Enabled
	n.raState.cfg = c
	switch {
	case c.Enabled && !was:
		n.raState.sent, n.raState.next = 0, time.Now().Add(jitter(maxRADelay))
	case !c.Enabled && was:
		n.raState.stopped, n.raState.next = true, time.Now()
	}
}

// recvRS checks a Router Solicitation's body and answers it.
func (n *ND) recvRS(src netip.Addr, srcMAC MAC, body []byte) Count {
	if len(body) < header.NDPRSMinimumSize {
		return CountInvalid
	}
	sll, ok := LinkOption(header.NDPRouterSolicit(body).Options(), optSourceLL)
	if !ok || src.IsUnspecified() && sll != nil {
		return CountInvalid
	}
	if sll != nil {
		n.table.Solicited(src, MAC(sll))
	}
	n.raSolicited(src, srcMAC)
	return accepted
}

// soliciter is a host whose Router Solicitation is answered unicast.
type soliciter struct {
	addr netip.Addr
	mac  MAC
	at   time.Time
}

// maxSoliciters bounds the answers owed: a flood of solicitations costs
// no memory beyond it (the periodic advertisement serves the rest).
const maxSoliciters = 64

// raSolicited answers a Router Solicitation within 500 ms (RFC 4861
// 6.2.6): unicast to a host that gave its address (as radvd does), else to
// all-nodes, but not within 3 s of the last multicast one.
func (n *ND) raSolicited(src netip.Addr, mac MAC) {
	if !n.raState.cfg.Enabled {
		return
	}
	if !src.IsUnspecified() {
		if len(n.raState.unicast) < maxSoliciters {
			n.raState.unicast = append(n.raState.unicast, soliciter{src, mac, time.Now().Add(jitter(maxRADelay))})
		}
		return
	}
	at := time.Now().Add(jitter(maxRADelay))
	if early := n.raState.last.Add(minDelayBetweenRAs); at.Before(early) {
		at = early
	}
	if n.raState.next.IsZero() || at.Before(n.raState.next) {
		n.raState.next = at
	}
}
