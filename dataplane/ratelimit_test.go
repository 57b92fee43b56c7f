package dataplane_test

import (
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"urouter/dataplane"
)

// TestRateLimitPerDestination: 2,000 hop-limit-1 packets in one second
// from each of two sources get, each source, a burst of 6 Time Exceeded
// and then one per 100 ms, as a Linux 6.18 router answers (measured in a
// netns: 6, then gaps of 96-101 ms, 16 in the second); Packet Too Big is
// not limited at all; the packets are counted once, the errors held back
// apart.
func TestRateLimitPerDestination(t *testing.T) {
	r := newRig(t)
	r.dp.SetICMPRate(1000, 50)
	r.dp.SetICMPDestRate(100*time.Millisecond, 6)
	other := net.ParseIP("2001:db8:1::3")
	mk := func(src net.IP) []byte {
		return craft(t, append([]gopacket.SerializableLayer{ipv6(src, host2, layers.IPProtocolUDP, 1)}, udp(20)...)...)
	}
	a, b := mk(host1), mk(other)
	var clock atomic.Int64 // the packets' time, a 2,000th of a second apart
	r.dp.SetClock(clock.Load)
	var times []time.Duration
	counts := map[string]int{}
	for i := 0; i < 2000; i++ {
		clock.Store(int64(time.Duration(i) * time.Second / 2000))
		r.run(a, b)
		for _, g := range r.recv(r.ta) {
			ip, ic := icmpOf(t, g)
			if ic.TypeCode.Type() != 3 {
				t.Fatalf("answered %v", ic.TypeCode)
			}
			counts[ip.DstIP.String()]++
			if ip.DstIP.Equal(host1) {
				times = append(times, time.Duration(clock.Load()))
			}
		}
	}
	for _, dst := range []string{host1.String(), other.String()} {
		if n := counts[dst]; n < 14 || n > 18 {
			t.Errorf("%s got %d Time Exceeded in a second, want 6 + about 10", dst, n)
		}
	}
	// within one interval: without the burst the sixth would come at 500 ms
	if len(times) > 6 && times[5] >= 100*time.Millisecond {
		t.Errorf("the burst of 6 took %v", times[5])
	}
	for i := 7; i < len(times); i++ {
		if gap := times[i] - times[i-1]; gap < 90*time.Millisecond {
			t.Errorf("after the burst, errors %d and %d came %v apart", i-1, i, gap)
		}
	}
	s := r.ta.Stats()
	if s.RxPackets != 4000 || s.Drops[dataplane.DropHopLimit].Count != 4000 || s.RxDropped != 4000 {
		t.Errorf("received %d, hop_limit %d, dropped %d: each packet counted once", s.RxPackets, s.Drops[dataplane.DropHopLimit].Count, s.RxDropped)
	}
	if want := uint64(4000 - counts[host1.String()] - counts[other.String()]); s.ICMPLimited != want {
		t.Errorf("%d errors held back counted, want %d", s.ICMPLimited, want)
	}
	// Packet Too Big: every one answered, however many come at once
	big := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, host2, layers.IPProtocolUDP, 64)}, udp(1400)...)...)
	ptb := 0
	for i := 0; i < 2000; i += 50 {
		batch := make([][]byte, 50)
		for j := range batch {
			batch[j] = big
		}
		r.run(batch...)
		ptb += len(r.recv(r.ta))
	}
	if ptb != 2000 {
		t.Errorf("%d Packet Too Big for 2000 packets", ptb)
	}
}

// TestRateLimitGlobal: many sources at once share the global bucket:
// 1,000 a second with bursts of 50.
func TestRateLimitGlobal(t *testing.T) {
	r := newRig(t)
	r.dp.SetICMPRate(1000, 50)
	r.dp.SetICMPDestRate(100*time.Millisecond, 6)
	var batch [][]byte
	for i := 0; i < 64; i++ {
		src := net.ParseIP("2001:db8:1::100").To16()
		src[15] = byte(i)
		batch = append(batch, craft(t, append([]gopacket.SerializableLayer{ipv6(src, host2, layers.IPProtocolUDP, 1)}, udp(20)...)...))
	}
	var clock atomic.Int64 // 100 us a batch
	r.dp.SetClock(clock.Load)
	n := 0
	for i := 0; i < 100; i++ {
		clock.Store(int64(time.Duration(i) * 100 * time.Microsecond))
		r.run(batch...)
		n += len(r.recv(r.ta))
	}
	if elapsed := time.Duration(clock.Load()); n > 50+int(elapsed/time.Millisecond)+2 || n < 50 {
		t.Errorf("%d errors in %v, want at most 50 + 1 per ms (%d)", n, elapsed, 50+int(elapsed/time.Millisecond)+2)
	}
}

// TestDestLimiterBounded: the per-destination limiter is a fixed table:
// 100,000 destinations an attacker invents cost it no memory, and a
// destination it keeps answering keeps its own bucket among them.
func TestDestLimiterBounded(t *testing.T) {
	l := dataplane.NewDestLimiter(100*time.Millisecond, 6)
	steady := [16]byte{0x20, 0x01, 0x0d, 0xb8, 1, 15: 2}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	now := int64(time.Hour)
	allowed := 0
	const step = 10 * int64(time.Microsecond)
	for i := 0; i < 100000; i++ {
		d := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0xff, 12: byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}
		l.Allow(d, now)
		if i%10 == 0 && l.Allow(steady, now) {
			allowed++
		}
		now += step
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	if grew := int64(m1.HeapAlloc) - int64(m0.HeapAlloc); grew > 64<<10 {
		t.Errorf("the heap grew %d bytes over 100,000 destinations", grew)
	}
	elapsed := 100000 * step
	if want := 6 + int(elapsed/int64(100*time.Millisecond)); allowed < want-1 || allowed > want+1 {
		t.Errorf("the steady destination got %d errors in %v, want about %d", allowed, time.Duration(elapsed), want)
	}
}

// TestCountsAddUp: after 1,000 packets to an unreachable prefix, with the
// router's default limits, the link's received packets and its drops by
// reason add up: each packet once, under no_route; the errors the limits
// held back apart.
func TestCountsAddUp(t *testing.T) {
	r := newRig(t)
	r.dp.SetICMPRate(1000, 50)
	r.dp.SetICMPDestRate(100*time.Millisecond, 6)
	p := craft(t, append([]gopacket.SerializableLayer{ipv6(host1, net.ParseIP("2001:db8:66::1"), layers.IPProtocolUDP, 64)}, udp(20)...)...)
	sent := 0
	for i := 0; i < 1000; i += 50 {
		batch := make([][]byte, 50)
		for j := range batch {
			batch[j] = p
		}
		r.run(batch...)
		sent += len(r.recv(r.ta))
	}
	s := r.ta.Stats()
	var drops uint64
	for _, d := range s.Drops {
		drops += d.Count
	}
	if s.RxPackets != 1000 || drops != 1000 || s.RxDropped != 1000 || s.Drops[dataplane.DropNoRoute].Count != 1000 {
		t.Errorf("received %d, drops %d (rx dropped %d, no_route %d)", s.RxPackets, drops, s.RxDropped, s.Drops[dataplane.DropNoRoute].Count)
	}
	if s.ICMPLimited != uint64(1000-sent) || sent < 6 {
		t.Errorf("%d errors sent, %d held back", sent, s.ICMPLimited)
	}
}
