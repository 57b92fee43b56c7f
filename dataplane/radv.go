package dataplane

import (
	"encoding/binary"
	"net/netip"
	"time"
	"urouter/ndisc"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

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

// RFC 4861's router constants.
const (
	maxInitialAdverts  = 3
	maxInitialInterval = 16 * time.Second
	minDelayBetweenRAs = 3 * time.Second
	maxRADelay         = 500 * time.Millisecond
)

type raState struct {
	cfg     RAConfig
	unicast []soliciter // solicitations to answer, each by its own due time
	sent    int         // unsolicited advertisements so far
	next    time.Time   // the next one; zero: none planned
	last    time.Time   // the last multicast one
	stopped bool        // a final one (lifetime 0) is owed
}

// SetRA sets a link's advertisements; it fails for links without ND.
func (l *Link) SetRA(c RAConfig) bool {
	e, ok := l.hw.(*ether)
	if !ok {
		return false
	}
	e.ra.Store(&c)
	e.nd.changed()
	return true
}

// RA returns a link's advertisement settings, false for links without ND.
func (l *Link) RA() (RAConfig, bool) {
	e, ok := l.hw.(*ether)
	if !ok {
		return RAConfig{}, false
	}
	return *e.ra.Load(), true
}

// raSync takes new settings: enabling starts the initial advertisements,
// disabling owes a last one with a lifetime of 0 (RFC 4861 6.2.5).
func (n *ndProto) raSync(l *Link) {
	c := *n.e.ra.Load()
	was := n.ra.cfg.Enabled
	n.ra.cfg = c
	switch {
	case c.Enabled && !was:
		n.ra.sent, n.ra.next = 0, time.Now().Add(jitter(maxRADelay))
	case !c.Enabled && was:
		n.ra.stopped, n.ra.next = true, time.Now()
	}
}

// soliciter is a host whose Router Solicitation is answered unicast.
type soliciter struct {
	addr netip.Addr
	mac  ndisc.MAC
	at   time.Time
}

// maxSoliciters bounds the answers owed: a flood of solicitations costs
// no memory beyond it (the periodic advertisement serves the rest).
const maxSoliciters = 64

// raSolicited answers a Router Solicitation within 500 ms (RFC 4861
// 6.2.6): unicast to a host that gave its address (as radvd does), else to
// all-nodes, but not within 3 s of the last multicast one.
func (n *ndProto) raSolicited(src netip.Addr, mac ndisc.MAC) {
	if !n.ra.cfg.Enabled {
		return
	}
	if !src.IsUnspecified() {
		if len(n.ra.unicast) < maxSoliciters {
			n.ra.unicast = append(n.ra.unicast, soliciter{src, mac, time.Now().Add(jitter(maxRADelay))})
		}
		return
	}
	at := time.Now().Add(jitter(maxRADelay))
	if early := n.ra.last.Add(minDelayBetweenRAs); at.Before(early) {
		at = early
	}
	if n.ra.next.IsZero() || at.Before(n.ra.next) {
		n.ra.next = at
	}
}

// raTimer sends the advertisement that is due and plans the next: the
// first three at most 16 s apart, then a random time between the
// intervals. It returns when it wants to run next.
func (n *ndProto) raTimer(now time.Time) time.Duration {
	r := &n.ra
	if len(r.unicast) == 0 && (r.next.IsZero() || (!r.cfg.Enabled && !r.stopped)) {
		return time.Hour
	}
	if len(r.unicast) == 0 && now.Before(r.next) {
		return r.next.Sub(now)
	}
	src, ok := n.linkLocal()
	if !ok {
		return 100 * time.Millisecond // DAD of the link-local still runs
	}
	wait := time.Hour
	kept := r.unicast[:0]
	for _, s := range r.unicast {
		if now.Before(s.at) {
			kept = append(kept, s)
			wait = min(wait, s.at.Sub(now))
			continue
		}
		if r.cfg.Enabled {
			n.send(n.raMsg(src.As16(), s.addr.As16(), false), s.mac)
		}
	}
	r.unicast = kept
	if r.next.IsZero() || now.Before(r.next) {
		if !r.next.IsZero() {
			wait = min(wait, r.next.Sub(now))
		}
		return wait
	}
	n.send(n.raMsg(src.As16(), header.IPv6AllNodesMulticastAddress.As16(), r.stopped), multicastMAC(allNodes))
	r.last = now
	if r.stopped {
		r.stopped, r.next = false, time.Time{}
		return time.Hour
	}
	r.sent++
	iv := r.cfg.MinInterval + jitter(r.cfg.MaxInterval-r.cfg.MinInterval+1)
	if r.sent < maxInitialAdverts {
		iv = min(iv, maxInitialInterval)
	}
	r.next = now.Add(iv)
	return iv
}

// raMsg builds an advertisement from src to dst: the settings, the
// link's MAC, and the prefixes (the link's own /64s unless some are
// given); final: a router lifetime of 0.
func (n *ndProto) raMsg(src, dst [16]byte, final bool) []byte {
	c := &n.ra.cfg
	life := c.Lifetime
	if final {
		life = 0
	}
	body := make([]byte, header.NDPRAMinimumSize, 256)
	body[0] = c.HopLimit
	if c.Managed {
		body[1] |= 0x80
	}
	if c.Other {
		body[1] |= 0x40
	}
	body[1] |= byte(c.Preference&3) << 3 // 01 high, 11 low
	binary.BigEndian.PutUint16(body[2:], uint16(min(life/time.Second, 9000)))
	body = append(body, 1, 1)
	body = append(body, n.e.mac[:]...)
	if c.MTU != 0 {
		body = append(body, 5, 1, 0, 0)
		body = binary.BigEndian.AppendUint32(body, c.MTU)
	}
	prefixes := c.Prefixes
	if len(prefixes) == 0 {
		for _, p := range n.e.link.Load().Addrs() {
			if !p.Addr().IsLinkLocalUnicast() && p.Bits() == 64 {
				prefixes = append(prefixes, DefaultPrefix(p.Masked()))
			}
		}
	}
	for _, p := range prefixes {
		flags := byte(0)
		if p.OnLink {
			flags |= 0x80
		}
		if p.Autonomous {
			flags |= 0x40
		}
		body = append(body, 3, 4, byte(p.Prefix.Bits()), flags)
		body = binary.BigEndian.AppendUint32(body, seconds(p.Valid))
		body = binary.BigEndian.AppendUint32(body, seconds(p.Preferred))
		body = append(body, 0, 0, 0, 0)
		a := p.Prefix.Masked().Addr().As16()
		body = append(body, a[:]...)
	}
	if len(c.RDNSS) > 0 {
		body = append(body, 25, byte(1+2*len(c.RDNSS)), 0, 0)
		body = binary.BigEndian.AppendUint32(body, seconds(c.RDNSSLifetime))
		for _, a := range c.RDNSS {
			b := a.As16()
			body = append(body, b[:]...)
		}
	}
	return n.icmp(header.ICMPv6RouterAdvert, src, dst, body)
}

// seconds is a lifetime in seconds, "infinity" (all ones) past 32 bits.
func seconds(d time.Duration) uint32 {
	s := d / time.Second
	if s >= 1<<32-1 {
		return 1<<32 - 1
	}
	return uint32(s)
}
