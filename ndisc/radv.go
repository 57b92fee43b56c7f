package ndisc

import (
	"encoding/binary"
	"math/rand/v2"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Router Advertisements (RFC 4861 6.2.4): the schedule and the message.

// RFC 4861's router constants.
const (
	maxInitialAdverts  = 3
	maxInitialInterval = 16 * time.Second
	minDelayBetweenRAs = 3 * time.Second
	maxRADelay         = 500 * time.Millisecond
)

// raTimer sends the advertisement that is due and plans the next: the
// first three at most 16 s apart, then a random time between the
// intervals. It returns when it wants to run next.
func (n *ND) raTimer(now time.Time) time.Duration {
	r := &n.raState
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
	n.send(n.raMsg(src.As16(), header.IPv6AllNodesMulticastAddress.As16(), r.stopped), MulticastMAC(allNodes))
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
func (n *ND) raMsg(src, dst [16]byte, final bool) []byte {
	c := &n.raState.cfg
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
	body = append(body, n.mac[:]...)
	if c.MTU != 0 {
		body = append(body, 5, 1, 0, 0)
		body = binary.BigEndian.AppendUint32(body, c.MTU)
	}
	prefixes := c.Prefixes
	if len(prefixes) == 0 {
		for _, p := range n.link.Addrs() {
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
	return icmp(header.ICMPv6RouterAdvert, src, dst, body)
}

// seconds is a lifetime in seconds, "infinity" (all ones) past 32 bits.
func seconds(d time.Duration) uint32 {
	s := d / time.Second
	if s >= 1<<32-1 {
		return 1<<32 - 1
	}
	return uint32(s)
}

// jitter is a random duration in [0, d).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(d)))
}
