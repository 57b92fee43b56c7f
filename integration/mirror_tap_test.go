package integration

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// TestMirrorTAP: `mirror KNAME type tap` is a kernel Ethernet interface
// with the link's MAC, NOARP (the kernel keeps no neighbours on it); the
// kernel's TCP and pings cross it as a TUN mirror's; frames of other
// ethertypes cross both ways (LLDP up, an IS-IS LLC frame down, from the
// link's MAC); save writes the kind.
func TestMirrorTAP(t *testing.T) {
	parallel(t)
	l := newMirrorLabOf(t, "tap", nil, "link add tun1 type tun")
	out, _, _ := l.d.run("link", "show", "lan1")
	if !strings.Contains(out, "mirror km1 ifindex ") || !strings.Contains(out, " type tap") {
		t.Fatalf("link show does not name the TAP mirror:\n%s", out)
	}
	mac := linkMAC(t, l)
	km, err := kernelLink(t, l.r, "km1")
	if err != nil {
		t.Fatal(err)
	}
	if km.HardwareAddr.String() != mac.String() || km.Flags&net.FlagMulticast == 0 {
		t.Fatalf("km1 is %v %v, want lan1's MAC %v", km.HardwareAddr, km.Flags, mac)
	}
	if o := mustRun(t, "ip", "-n", l.r, "link", "show", "km1"); !strings.Contains(o, "NOARP") || !strings.Contains(o, "link/ether") {
		t.Fatalf("km1 is not an Ethernet interface without ARP:\n%s", o)
	}
	if o, _, _ := l.d.run("save"); !strings.Contains(o, "link set lan1 mirror km1 type tap\n") {
		t.Fatalf("save does not write the TAP mirror:\n%s", o)
	}
	for _, bad := range []struct{ args, err string }{
		{"link set tun1 mirror kt1 type tap", "a TAP mirror needs an Ethernet link"},
		{"link set lan1 mirror km1 type veth", `argument "veth" is wrong: mirror type is "tun" or "tap"`},
		{"link set lan1 type tap", "Operation not supported"},
	} {
		if _, e, st := l.d.run(strings.Fields(bad.args)...); st == 0 || !strings.Contains(e, bad.err) {
			t.Errorf("%s: %d %q, want an error with %q", bad.args, st, e, bad.err)
		}
	}
	// A mirror that cannot be made (its name taken in the kernel) leaves the
	// one there.
	if _, e, st := l.d.run("link", "set", "lan1", "mirror", "lo", "type", "tap"); st == 0 || !strings.Contains(e, "exists") {
		t.Errorf("mirror lo: %d %q, want an error that it exists", st, e)
	}
	if out, _, _ := l.d.run("link", "show", "lan1"); !strings.Contains(out, "mirror km1 ifindex ") {
		t.Fatalf("a refused mirror took km1 away:\n%s", out)
	}
	checkKernelThroughMirror(t, l)
	for _, line := range strings.Split(mustRun(t, "ip", "-n", l.r, "neigh", "show", "dev", "km1"), "\n") {
		if line != "" && !strings.Contains(line, "NOARP") {
			t.Errorf("the kernel keeps a neighbour on km1: %s", line)
		}
	}

	// LLDP from the host up to km1; an IS-IS hello from km1 down to the host.
	hs, ks := frameSocket(t, l.h, "eth0"), frameSocket(t, l.r, "km1")
	lldp := ether([]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, hostMAC(t, l), 0x88cc, []byte("urouter-lldp-test"))
	hs.send(t, lldp)
	if _, ok := ks.await(func(f []byte) bool { return len(f) >= len(lldp) && bytes.Equal(f[:len(lldp)], lldp) }); !ok {
		t.Errorf("an LLDP frame from the host did not reach km1")
	}
	isis := append([]byte{0xfe, 0xfe, 0x03, 0x83}, []byte("urouter-isis-test")...)
	hello := ether([]byte{0x09, 0x00, 0x2b, 0, 0, 0x05}, mac, uint16(len(isis)), isis)
	ks.send(t, hello)
	if _, ok := hs.await(func(f []byte) bool { return len(f) >= len(hello) && bytes.Equal(f[:len(hello)], hello) }); !ok {
		t.Errorf("an IS-IS frame from km1 did not leave by lan1 as it was sent")
	}

	// What is not given up: a frame with nothing after its header (nor
	// does it crash anything), another host's unicast, IPv4's ARP.
	hs.send(t, ether([]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, hostMAC(t, l), 0x88cc, nil))
	other := ether([]byte{0x02, 0, 0, 0, 0, 0x99}, hostMAC(t, l), 0x88cc, []byte("urouter-not-for-us"))
	hs.send(t, other)
	arp := ether([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, hostMAC(t, l), 0x0806, make([]byte, 28))
	hs.send(t, arp)
	if f, ok := ks.await(func(f []byte) bool {
		return len(f) <= 14 || bytes.HasSuffix(f, []byte("urouter-not-for-us")) || f[12] == 0x08 && f[13] == 0x06
	}); ok {
		t.Errorf("km1 was given %x", f)
	}
	hs.send(t, lldp)
	if _, ok := ks.await(func(f []byte) bool { return len(f) >= len(lldp) && bytes.Equal(f[:len(lldp)], lldp) }); !ok {
		t.Errorf("LLDP did not reach km1 after the short frame")
	}

	// A TUN of the same name, kept by a mirror line that does not say its
	// type, and a TAP again.
	for _, c := range []struct{ args, want string }{
		{"link set lan1 mirror km1 type tun", "link/none"},
		{"link set lan1 mirror km1", "link/none"},
		{"link set lan1 mirror km1 type tap", "link/ether"},
	} {
		if _, e, st := l.d.run(strings.Fields(c.args)...); st != 0 {
			t.Fatalf("%s: %s", c.args, e)
		}
		if o := mustRun(t, "ip", "-n", l.r, "link", "show", "km1"); !strings.Contains(o, c.want) {
			t.Errorf("after %s km1 is not %s:\n%s", c.args, c.want, o)
		}
	}
}

// TestMirrorRA: Router Advertisements and Solicitations cross both kinds
// of mirror as BGP unnumbered needs: a neighbour's RA goes up (urouter
// itself ignores it), the kernel's (zebra's) goes out of the link with
// the link's MAC as its source link-layer option, and a link whose RAs
// are urouter's own (`ra set dev LINK on`) keeps the kernel's off the
// link, counted, and answers its solicitations itself.
func TestMirrorRA(t *testing.T) {
	parallel(t)
	for _, kind := range []string{"tun", "tap"} {
		t.Run(kind, func(t *testing.T) {
			l := newMirrorLabOf(t, kind, nil)
			mac, hmac := linkMAC(t, l), hostMAC(t, l)
			hs, ks := frameSocket(t, l.h, "eth0"), frameSocket(t, l.r, "km1")
			hLLA, rLLA := netip.MustParseAddr(l.hLLA), netip.MustParseAddr(l.rLLA)
			allNodes := netip.MustParseAddr("ff02::1")
			// isICMP matches an ICMPv6 message of type ty (and an RA's
			// lifetime) in a frame, or a packet on a TUN
			isICMP := func(framed bool, ty header.ICMPv6Type, lifetime uint16) func([]byte) bool {
				return func(f []byte) bool {
					p := f
					if framed {
						if len(f) < 14 || f[12] != 0x86 || f[13] != 0xdd {
							return false
						}
						p = f[14:]
					}
					ok := len(p) >= 48 && p[0]>>4 == 6 && p[6] == 58 && p[7] == 255 && p[40] == byte(ty)
					return ok && (lifetime == 0 || binary.BigEndian.Uint16(p[46:]) == lifetime)
				}
			}

			ra := ether([]byte{0x33, 0x33, 0, 0, 0, 1}, hmac, 0x86dd, icmp6(hLLA, allNodes, header.ICMPv6RouterAdvert, raBody(4321, nil)))
			hs.send(t, ra)
			if _, ok := ks.await(isICMP(kind == "tap", header.ICMPv6RouterAdvert, 4321)); !ok {
				t.Errorf("the host's RA did not go up km1")
			}
			rs := ether([]byte{0x33, 0x33, 0, 0, 0, 2}, hmac, 0x86dd,
				icmp6(hLLA, netip.MustParseAddr("ff02::2"), header.ICMPv6RouterSolicit, make([]byte, 4)))
			hs.send(t, rs)
			if _, ok := ks.await(isICMP(kind == "tap", header.ICMPv6RouterSolicit, 0)); !ok {
				t.Errorf("the host's RS did not go up km1 while the kernel owns the link's RAs")
			}

			// The kernel's RA, as zebra sends it: no link-layer option on a
			// TUN (appended), or one that names another MAC (rewritten).
			kernelRA := icmp6(rLLA, allNodes, header.ICMPv6RouterAdvert, raBody(1234, nil))
			for _, opts := range [][]byte{nil, {1, 1, 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}} {
				ks.send(t, kernelFrame(kind, mac, icmp6(rLLA, allNodes, header.ICMPv6RouterAdvert, raBody(1234, opts))))
				f, ok := hs.await(isICMP(true, header.ICMPv6RouterAdvert, 1234))
				if !ok {
					t.Fatalf("the kernel's RA (options %x) did not leave by lan1", opts)
				}
				checkRA(t, f, mac)
			}

			l.d.run("ra", "set", "dev", "lan1", "on", "lifetime", "1800")
			held := mirrorCounter(t, l.d, "ra_held")
			ks.send(t, kernelFrame(kind, mac, kernelRA))
			if _, ok := hs.await(isICMP(true, header.ICMPv6RouterAdvert, 1234)); ok {
				t.Errorf("the kernel's RA left by lan1 whose RAs are urouter's")
			}
			if after := mirrorCounter(t, l.d, "ra_held"); after != held+1 {
				t.Errorf("ra_held %d -> %d, want one more", held, after)
			}
			hs.send(t, rs)
			if _, ok := ks.await(isICMP(kind == "tap", header.ICMPv6RouterSolicit, 0)); ok {
				t.Errorf("the host's RS went up km1 though urouter answers it")
			}
			// urouter's answer, unicast to the host that asked (its
			// unsolicited RAs go to all nodes)
			answered := isICMP(true, header.ICMPv6RouterAdvert, 1800)
			hs.send(t, rs)
			if _, ok := hs.await(func(f []byte) bool {
				return answered(f) && netip.AddrFrom16([16]byte(f[14+24:14+40])) == hLLA
			}); !ok {
				t.Errorf("urouter did not answer the host's RS")
			}
		})
	}
}

// checkRA: an RA frame from the router's MAC with one source link-layer
// option naming it and a right checksum.
func checkRA(t *testing.T, f []byte, mac net.HardwareAddr) {
	t.Helper()
	if !bytes.Equal(f[6:12], mac) {
		t.Errorf("the RA left from %v, not lan1's %v", net.HardwareAddr(f[6:12]), mac)
	}
	p := header.IPv6(f[14:])
	m := header.ICMPv6(p.Payload())
	if len(m) < 24 || m[16] != 1 || m[17] != 1 || !bytes.Equal(m[18:24], mac) {
		t.Errorf("the RA's options are %x, want a source link-layer option of %v", m[16:], mac)
	}
	sum := header.PseudoHeaderChecksum(header.ICMPv6ProtocolNumber, p.SourceAddress(), p.DestinationAddress(), uint16(len(m)))
	if checksum.Checksum(m, sum) != 0xffff {
		t.Errorf("the RA's checksum is wrong")
	}
}

// raBody is an RA's body after the ICMPv6 header: hop limit 64, the
// router lifetime, then opts.
func raBody(lifetime uint16, opts []byte) []byte {
	b := make([]byte, 12, 12+len(opts))
	b[0] = 64
	binary.BigEndian.PutUint16(b[2:], lifetime)
	return append(b, opts...)
}

// icmp6 is an IPv6 packet of an ICMPv6 message with hop limit 255, its
// checksum set.
func icmp6(src, dst netip.Addr, ty header.ICMPv6Type, body []byte) []byte {
	p := make([]byte, header.IPv6MinimumSize+4+len(body))
	ip := header.IPv6(p)
	ip.Encode(&header.IPv6Fields{PayloadLength: uint16(4 + len(body)), TransportProtocol: header.ICMPv6ProtocolNumber,
		HopLimit: 255, SrcAddr: tcpip.AddrFrom16(src.As16()), DstAddr: tcpip.AddrFrom16(dst.As16())})
	m := header.ICMPv6(p[header.IPv6MinimumSize:])
	m.SetType(ty)
	copy(m[4:], body)
	sum := header.PseudoHeaderChecksum(header.ICMPv6ProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(m)))
	m.SetChecksum(^checksum.Checksum(m, sum))
	return p
}

func ether(dst, src net.HardwareAddr, ty uint16, payload []byte) []byte {
	f := append(append(append([]byte{}, dst...), src...), byte(ty>>8), byte(ty))
	return append(f, payload...)
}

// kernelFrame is how the kernel's side sends packet p on km1: a frame from
// the link's MAC on a TAP, the packet alone on a TUN.
func kernelFrame(kind string, mac net.HardwareAddr, p []byte) []byte {
	if kind != "tap" {
		return p
	}
	dst := []byte{0x33, 0x33, p[36], p[37], p[38], p[39]}
	return ether(dst, mac, 0x86dd, p)
}

func linkMAC(t *testing.T, l *mirrorLab) net.HardwareAddr {
	t.Helper()
	out, _, _ := l.d.run("link", "show", "lan1")
	for _, f := range strings.Fields(out) {
		if m, err := net.ParseMAC(f); err == nil && f != "ff:ff:ff:ff:ff:ff" {
			return m
		}
	}
	t.Fatalf("no MAC in link show:\n%s", out)
	return nil
}

func hostMAC(t *testing.T, l *mirrorLab) net.HardwareAddr {
	t.Helper()
	k, err := kernelLink(t, l.h, "eth0")
	if err != nil {
		t.Fatal(err)
	}
	return k.HardwareAddr
}

// kernelLink is interface dev of namespace ns.
func kernelLink(t *testing.T, ns, dev string) (k *net.Interface, err error) {
	inNetns(t, ns, func() { k, err = net.InterfaceByName(dev) })
	return k, err
}

// rawSocket is an AF_PACKET socket on one interface of a namespace, which
// sends frames as they are and reads every frame.
type rawSocket struct {
	fd, ifindex int
}

func frameSocket(t *testing.T, ns, dev string) *rawSocket {
	t.Helper()
	var s rawSocket
	var err error
	inNetns(t, ns, func() {
		var ifi *net.Interface
		if ifi, err = net.InterfaceByName(dev); err != nil {
			return
		}
		s.ifindex = ifi.Index
		proto := int(htons(unix.ETH_P_ALL))
		typ := unix.SOCK_RAW
		if ifi.HardwareAddr == nil {
			typ = unix.SOCK_DGRAM // a TUN: packets, no header
			proto = int(htons(unix.ETH_P_IPV6))
		}
		if s.fd, err = unix.Socket(unix.AF_PACKET, typ|unix.SOCK_CLOEXEC, proto); err != nil {
			return
		}
		err = unix.Bind(s.fd, &unix.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: s.ifindex})
	})
	if err != nil {
		t.Fatalf("AF_PACKET on %s of %s: %v", dev, ns, err)
	}
	tv := unix.Timeval{Usec: 100_000}
	if err := unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(s.fd) })
	return &s
}

func (s *rawSocket) send(t *testing.T, f []byte) {
	t.Helper()
	to := &unix.SockaddrLinklayer{Ifindex: s.ifindex, Protocol: htons(unix.ETH_P_IPV6), Halen: 6}
	if len(f) >= 6 {
		copy(to.Addr[:], f[:6])
	}
	if err := unix.Sendto(s.fd, f, 0, to); err != nil {
		t.Fatalf("sending a frame: %v", err)
	}
}

// await reads frames for up to 2 s until one matches.
func (s *rawSocket) await(match func([]byte) bool) ([]byte, bool) {
	buf := make([]byte, 65536)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		n, from, err := unix.Recvfrom(s.fd, buf, 0)
		if err != nil {
			continue
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if match(buf[:n]) {
			return append([]byte(nil), buf[:n]...), true
		}
	}
	return nil, false
}
