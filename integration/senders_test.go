package integration

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// What the tests send from a host: the scan of a /64 (from one address or
// spoofed from many), ICMPv6 messages as a host's raw socket sends them.

// floodSender opens a UDP socket in namespace ns and returns a function
// that sends, at rate a second for d, one datagram to each of as many
// random addresses of ndFloodNet (never one of its first 256), or, not
// scanning, all to B, and returns how many the kernel took and how long
// that took. Spoofed, each comes from a new random address of
// 2001:db8:f1::/64 (a raw socket that writes the IPv6 header).
func floodSender(t testing.TB, ns string, spoofed bool) func(rate int, d time.Duration, scan bool) (int, time.Duration) {
	var fd int
	inNetns(t, ns, func() {
		var err error
		if spoofed {
			fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_RAW)
		} else {
			fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { _ = unix.Close(fd) })
	return func(rate int, d time.Duration, scan bool) (int, time.Duration) {
		payload := []byte("rfc6583 scan")
		sa := &unix.SockaddrInet6{Port: 9, Addr: ndFloodNet.Addr().As16()}
		if spoofed {
			payload = spoofedDatagram(payload)
			sa.Port = 0
		}
		sent := 0
		start := time.Now()
		for {
			el := time.Since(start)
			if el >= d {
				return sent, el
			}
			// paced against the clock: what a late wake-up missed goes in
			// the next burst
			for due := int(el.Seconds() * float64(rate)); sent < due; {
				iid := rand.Uint64() | 0x100
				if !scan {
					iid = 2 // B
				}
				for i := range 8 {
					sa.Addr[8+i] = byte(iid >> (56 - 8*i))
				}
				if spoofed {
					binary.BigEndian.PutUint64(payload[16:], rand.Uint64()) // the source's interface identifier
					copy(payload[24:40], sa.Addr[:])
				}
				if err := unix.Sendto(fd, payload, 0, sa); err == nil {
					sent++
				} else {
					break // ENOBUFS and the like: the next round tries again
				}
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// spoofedDatagram is an IPv6 packet from 2001:db8:f1::/64 carrying UDP
// to port 9 with payload; the flood fills in its addresses. Its checksum
// is left 0: the router forwards without looking.
func spoofedDatagram(payload []byte) []byte {
	b := make([]byte, 48+len(payload))
	b[0], b[6], b[7] = 0x60, 17, 64
	binary.BigEndian.PutUint16(b[4:], uint16(8+len(payload)))
	copy(b[8:16], netip.MustParseAddr("2001:db8:f1::").AsSlice()[:8])
	binary.BigEndian.PutUint16(b[40:], 9)
	binary.BigEndian.PutUint16(b[42:], 9)
	binary.BigEndian.PutUint16(b[44:], uint16(8+len(payload)))
	copy(b[48:], payload)
	return b
}

// icmpSender opens a raw ICMPv6 socket on dev of namespace ns and returns
// a function that sends an ICMPv6 message (the kernel fills in its
// checksum) to an address with a hop limit.
func icmpSender(t *testing.T, ns, dev string) func(msg []byte, to netip.Addr, hops int) {
	var fd int
	var ifi *net.Interface
	inNetns(t, ns, func() {
		var err error
		if fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6); err != nil {
			t.Fatal(err)
		}
		if ifi, err = net.InterfaceByName(dev); err != nil {
			t.Fatal(err)
		}
		// not to the host itself: its own stack would take a forged NA
		// of the router's address, and send the router's frames to itself
		if err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_LOOP, 0); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { _ = unix.Close(fd) })
	return func(msg []byte, to netip.Addr, hops int) {
		t.Helper()
		for _, o := range []int{unix.IPV6_UNICAST_HOPS, unix.IPV6_MULTICAST_HOPS} {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, o, hops); err != nil {
				t.Fatal(err)
			}
		}
		if err := unix.Sendto(fd, msg, 0, &unix.SockaddrInet6{Addr: to.As16(), ZoneId: uint32(ifi.Index)}); err != nil {
			t.Fatalf("sending to %v: %v", to, err)
		}
	}
}
