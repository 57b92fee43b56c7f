package dataplane

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"time"

	"urouter/fib6"
)

// ICMPv6 (RFC 4443) types and codes the router sends.
const (
	icmpDstUnreach   = 1
	codeNoRoute      = 0
	codeProhibited   = 1
	codePortUnreach  = 4
	icmpPacketTooBig = 2
	icmpTimeExceeded = 3
	icmpParamProblem = 4
	codeUnknownNH    = 1
	icmpEchoRequest  = 128
	icmpEchoReply    = 129

	icmpHL = 64 // the hop limit of what the router sends
)

// icmpError answers a packet with the error it earned, as RFC 4443 §2.4
// says: never about an ICMPv6 error, from the router's address on the
// link the packet came in by, quoting as much of it as fits in 1280
// bytes, within the rate limit. The martians that may not be answered
// (multicast or unspecified sources and destinations) never get here.
func (w *worker) icmpError(k *pkt) {
	if k.l4.isICMPError() {
		return
	}
	if !w.dp.icmp.allow() {
		w.drop(w.in, DropRateLimit)
		return
	}
	src, ok := w.dp.sourceOn(w.in)
	if !ok {
		return
	}
	quote := k.p[:min(len(k.p), MinMTU-ipv6Len-8)]
	b := w.scratch[:vnetHdrLen+ipv6Len+8+len(quote)]
	clear(b[:vnetHdrLen])
	p := b[vnetHdrLen:]
	writeIPv6(p, src, [16]byte(k.p[offSrc:offSrc+16]), 8+len(quote))
	m := p[ipv6Len:]
	m[0], m[1] = k.icmpType, k.icmpCode
	binary.BigEndian.PutUint32(m[4:], k.icmpParam)
	copy(m[8:], quote)
	setICMPChecksum(p)
	w.originate(b)
}

// writeIPv6 fills in an IPv6 header for an ICMPv6 message of n bytes.
func writeIPv6(p []byte, src, dst [16]byte, n int) {
	binary.BigEndian.PutUint32(p[0:], 6<<28)
	binary.BigEndian.PutUint16(p[offPayloadLen:], uint16(n))
	p[offNextHeader] = protoICMPv6
	p[offHopLimit] = icmpHL
	copy(p[offSrc:], src[:])
	copy(p[offDst:], dst[:])
}

// icmpSum is the one's complement sum of an ICMPv6 message (at p[40:])
// with its pseudo-header; 0xffff over a message with a valid checksum.
func icmpSum(p []byte) uint16 { return transportSum(p, ipv6Len, protoICMPv6) }

func setICMPChecksum(p []byte) {
	m := p[ipv6Len:]
	m[2], m[3] = 0, 0
	binary.BigEndian.PutUint16(m[2:], ^icmpSum(p))
}

// local delivers a packet addressed to the router: an echo request gets
// its reply; anything else the unreachable or parameter problem that
// says nobody listens.
func (w *worker) local(k *pkt) {
	switch {
	case k.l4.proto == protoICMPv6:
		if k.l4.icmpTy == icmpEchoRequest && k.l4.off == ipv6Len && len(k.p) >= ipv6Len+8 && k.p[ipv6Len+1] == 0 {
			w.echoReply(k)
			return
		}
		w.drop(w.in, DropLocal) // errors and other messages: nothing to do
	case k.l4.off >= 0 && hasPorts(k.l4.proto):
		k.error(DropLocal, icmpDstUnreach, codePortUnreach, 0)
		w.drop(w.in, DropLocal)
		w.icmpError(k)
	default:
		k.error(DropLocal, icmpParamProblem, codeUnknownNH, uint32(k.l4.nhOff))
		w.drop(w.in, DropLocal)
		w.icmpError(k)
	}
}

// echoReply turns an echo request into its reply in place and sends it.
func (w *worker) echoReply(k *pkt) {
	p := k.p
	if icmpSum(p) != 0xffff || k.vh.gso() {
		w.drop(w.in, DropLocal)
		return
	}
	var a [16]byte
	copy(a[:], p[offSrc:offSrc+16])
	copy(p[offSrc:], p[offDst:offDst+16])
	copy(p[offDst:], a[:])
	p[offHopLimit] = icmpHL
	p[ipv6Len] = icmpEchoReply
	setICMPChecksum(p)
	clear(k.b[:vnetHdrLen])
	w.originate(k.b[:vnetHdrLen+len(p)])
}

// originate routes and sends a packet the router made (b: zeroed
// virtio_net_hdr, then the packet).
func (w *worker) originate(b []byte) {
	p := b[vnetHdrLen:]
	dst := netip.AddrFrom16([16]byte(p[offDst : offDst+16]))
	src := netip.AddrFrom16([16]byte(p[offSrc : offSrc+16]))
	for _, rule := range w.dp.Rules.Load().Rules() {
		t := w.dp.Tables.Get(rule.Table)
		if t == nil {
			continue
		}
		a := t.Lookup(dst, src)
		if a == nil || a.Type == fib6.Throw {
			continue
		}
		if a.Type != fib6.Unicast {
			return
		}
		out := w.dp.Links.ByIndex(a.Nexthop.Link)
		if out == nil || !out.Up() || out.Kind != TUN {
			return
		}
		if dev := out.dev.Load(); dev != nil {
			w.write(out, dev, b, 1)
		}
		return
	}
}

// sourceOn picks the router's address for what it sends about packets
// that came in by link l: a global address on l, else one on any link.
func (dp *Dataplane) sourceOn(l *Link) ([16]byte, bool) {
	if a, ok := globalAddr(l); ok {
		return a, true
	}
	for _, o := range dp.Links.snap.Load().byIndex {
		if o == nil {
			continue
		}
		if a, ok := globalAddr(o); ok {
			return a, true
		}
	}
	return [16]byte{}, false
}

// globalAddr is the first of l's addresses that may source what the
// router sends beyond the link.
func globalAddr(l *Link) ([16]byte, bool) {
	for _, a := range l.Addrs() {
		if ad := a.Addr(); !ad.IsLinkLocalUnicast() && !ad.IsLoopback() {
			return ad.As16(), true
		}
	}
	return [16]byte{}, false
}

// limiter is the token bucket of ICMPv6 errors (as a GCRA: one atomic
// "theoretical arrival time"), shared by the workers.
type limiter struct {
	interval atomic.Int64 // ns per message; 0: no limit
	slack    atomic.Int64 // how far ahead of now the bucket may run: the burst
	tat      atomic.Int64
}

var epoch = time.Now()

func (l *limiter) set(perSec, burst int) {
	if perSec <= 0 {
		l.interval.Store(0)
		return
	}
	iv := int64(time.Second) / int64(perSec)
	l.interval.Store(iv)
	l.slack.Store(int64(max(burst, 1)-1) * iv)
}

func (l *limiter) allow() bool {
	iv := l.interval.Load()
	if iv == 0 {
		return true
	}
	now := int64(time.Since(epoch))
	for {
		old := l.tat.Load()
		tat := max(old, now)
		if tat-now > l.slack.Load() {
			return false
		}
		if l.tat.CompareAndSwap(old, tat+iv) {
			return true
		}
	}
}
