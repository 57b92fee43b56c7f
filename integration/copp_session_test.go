package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sessionLab is a mirror lab with a TAP mirror and a BGP-like session: a
// listener on port 179 in the kernel's namespace that answers the host
// 2001:db8:c1::2 (its peer: it echoes what the peer sends) and, as bgpd
// does with an address it has no neighbor for, closes anyone else's
// connection unanswered (once it has read what it sent). The routing class is 4,000 a second, so a flood
// that rode it would starve the session.
type sessionLab struct {
	*mirrorLab
	peer net.Conn // the host's end of the session
}

func newSessionLab(t *testing.T) *sessionLab {
	t.Helper()
	l := &sessionLab{mirrorLab: newMirrorLabOf(t, "tap", nil,
		"sysctl -w net.ipv6.copp.routing.rate=4000", "sysctl -w net.ipv6.copp.routing.burst=4000",
		"ntable change name ndisc_cache thresh2 8192 thresh3 8192")} // room for TestCoPPPeerFlood's hosts
	var ln net.Listener
	var err error
	// no TCP keepalives: what the kernel sends the peer is what the test
	// makes it send
	lc := net.ListenConfig{KeepAlive: -1}
	inNetns(t, l.r, func() { ln, err = lc.Listen(context.Background(), "tcp6", "[2001:db8:c1::1]:179") })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if c.RemoteAddr().(*net.TCPAddr).IP.String() != "2001:db8:c1::2" {
				go func() { // not a neighbor: what it sent is read (the kernel acknowledged it), then it is shut out
					_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
					_, _ = c.Read(make([]byte, 1))
					_ = c.Close()
				}()
				continue
			}
			go func() { _, _ = io.Copy(c, c) }()
		}
	}()
	inNetns(t, l.h, func() {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("2001:db8:c1::2")}, Timeout: 5 * time.Second, KeepAlive: -1}
		l.peer, err = d.Dial("tcp6", "[2001:db8:c1::1]:179")
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.peer.Close() })
	if _, err := l.exchange(1); err != nil {
		t.Fatal(err)
	}
	return l
}

// exchange sends n messages over the session and reads each echoed back
// within 5 s, returning the longest round trip.
func (l *sessionLab) exchange(n int) (time.Duration, error) {
	msg, back := make([]byte, 64), make([]byte, 64)
	var worst time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := l.peer.SetDeadline(start.Add(5 * time.Second)); err != nil {
			return worst, err
		}
		if _, err := l.peer.Write(msg); err != nil {
			return worst, fmt.Errorf("the session, message %d: %w", i, err)
		}
		if _, err := io.ReadFull(l.peer, back); err != nil {
			return worst, fmt.Errorf("the session, message %d: %w", i, err)
		}
		worst = max(worst, time.Since(start))
	}
	return worst, nil
}

// TestCoPPLLDPFlood: a LAN host floods LLDP's group as fast as it can
// beside a BGP session on the same link, with a TAP mirror that takes
// LLDP up: the flood is policed in a class of its own (lldp), not in
// routing, so the session's segments are never dropped and the flood
// passes no more than lldp's limit.
func TestCoPPLLDPFlood(t *testing.T) {
	measures(t)
	l := newSessionLab(t)
	hs := frameSocket(t, l.h, "eth0")
	lldp := ether([]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, hostMAC(t, l.mirrorLab), 0x88cc, make([]byte, 64))
	before := coppStats(t, l.d, "lan1")
	var stop atomic.Bool
	var sent atomic.Uint64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		to := &unix.SockaddrLinklayer{Ifindex: hs.ifindex, Protocol: htons(0x88cc), Halen: 6}
		for !stop.Load() {
			if unix.Sendto(hs.fd, lldp, 0, to) == nil {
				sent.Add(1)
			}
		}
	}()
	start, cpu0 := time.Now(), cpuTicks(t, l.d.cmd.Process.Pid)
	var worst time.Duration
	var sessionErr error
	for time.Since(start) < 2*time.Second && sessionErr == nil {
		var w time.Duration
		w, sessionErr = l.exchange(10)
		worst = max(worst, w)
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	secs := time.Since(start).Seconds()
	cpu := float64(cpuTicks(t, l.d.cmd.Process.Pid)-cpu0) / 100 / secs // USER_HZ
	after := coppStats(t, l.d, "lan1")
	rt, ll, other := after["routing"], after["lldp"], after["other"]
	t.Logf("LLDP flood: %d frames in %.1f s; lldp passed %d dropped %d; routing passed %d dropped %d (other passed %d); "+
		"the daemon's CPU %.2f; the session's worst round trip %v",
		sent.Load(), secs, ll.Passed-before["lldp"].Passed, ll.Dropped-before["lldp"].Dropped,
		rt.Passed-before["routing"].Passed, rt.Dropped-before["routing"].Dropped, other.Passed-before["other"].Passed, cpu, worst)
	if sessionErr != nil {
		t.Errorf("the session under an LLDP flood: %v", sessionErr)
	}
	if rt.Dropped != before["routing"].Dropped {
		t.Errorf("the session's class dropped %d under an LLDP flood", rt.Dropped-before["routing"].Dropped)
	}
	if ll.Dropped == before["lldp"].Dropped || float64(ll.Passed-before["lldp"].Passed) > 100+100*(secs+1) {
		t.Errorf("the LLDP flood was not held to lldp's limit (100/s, burst 100): %+v, before %+v", ll, before["lldp"])
	}
}
