package integration

import (
	"bufio"
	"encoding/binary"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGatewayFailure: a multipath route through two gateways; one stops
// answering, its entry goes DELAY -> PROBE -> FAILED on Linux's schedule
// (here delay_probe 500 ms, 3 probes 250 ms apart), its member stops
// carrying flows, and it carries them again once it answers.
func TestGatewayFailure(t *testing.T) {
	measures(t)
	l := newEtherLab(t, []string{"--router-probe-interval", "1s", "--multipath-hash-policy", "1"},
		"ntable change name ndisc_cache dev lan3 base_reachable 2000 delay_probe 500 retrans 250")
	if _, e, st := l.d.run("route", "add", "2001:db8:f0::/48", "nexthop", "via", l.e2addr, "dev", "lan2",
		"nexthop", "via", "2001:db8:a3::2", "dev", "lan3"); st != 0 {
		t.Fatalf("route add: %s", e)
	}
	fl := newFlows(t, l)
	fl.send() // resolves both gateways
	if e2, e3 := fl.send(); e2 == 0 || e3 == 0 || e2+e3 != 64 {
		t.Fatalf("both gateways up: e2 took %d flows, e3 %d; want all 64 spread over both", e2, e3)
	}
	// from here traffic flows all the time, so the gateway's entry is in
	// use and goes REACHABLE -> DELAY, never STALE
	stopFlowing := fl.keepFlowing()
	changes := monitorNeigh(t, l, "2001:db8:a3::2")
	time.Sleep(300 * time.Millisecond) // the monitor listens
	waitUntil(t, "the gateway's entry to be REACHABLE", func() bool {
		out, _, _ := l.d.run("neigh", "show", "2001:db8:a3::2", "dev", "lan3")
		return strings.HasSuffix(out, "REACHABLE \n")
	})
	mustRun(t, "ip", "-n", l.e3, "addr", "del", "2001:db8:a3::2/64", "dev", "lan3")
	seen := statesUntilFailed(changes, 15*time.Second)
	stopFlowing()
	fl.onE2(1<<20, 300*time.Millisecond) // drain what went before the failure
	fl.onE3(1<<20, 100*time.Millisecond)
	checkFailure(t, seen)
	out, _, _ := l.d.run("route", "show", "2001:db8:f0::/48")
	if !strings.Contains(out, "via 2001:db8:a3::2 dev lan3 weight 1 dead") {
		t.Errorf("the failed gateway's path is not dead:\n%s", out)
	}
	if e2, e3 := fl.send(); e2 != 64 || e3 != 0 {
		t.Errorf("gateway e3 failed: e2 took %d flows, e3 %d; want all 64 on e2", e2, e3)
	}

	mustRun(t, "ip", "-n", l.e3, "addr", "add", "2001:db8:a3::2/64", "dev", "lan3", "nodad")
	waitUntil(t, "the path through the gateway that answers again to come alive", func() bool {
		out, _, _ := l.d.run("route", "show", "2001:db8:f0::/48")
		return !strings.Contains(out, "dead")
	})
	if e2, e3 := fl.send(); e2 == 0 || e3 == 0 || e2+e3 != 64 {
		t.Errorf("gateway e3 back: e2 took %d flows, e3 %d; want all 64 spread over both", e2, e3)
	}
}

// flows are TestGatewayFailure's 64 UDP flows (ports 7000-7063) from e1 to
// 2001:db8:f0::1, and what each gateway receives of them.
type flows struct {
	t          *testing.T
	sock       *net.UDPConn
	onE2, onE3 func(n int, wait time.Duration) [][]byte
}

func newFlows(t *testing.T, l *etherLab) *flows {
	fl := &flows{t: t, onE2: capture(t, l.e2, "eth0", isFlowPacket), onE3: capture(t, l.e3, "lan3", isFlowPacket)}
	inNetns(t, l.e1, func() {
		var err error
		if fl.sock, err = net.ListenUDP("udp6", &net.UDPAddr{IP: net.ParseIP("2001:db8:a1::2")}); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { _ = fl.sock.Close() })
	return fl
}

// send sends one packet of each flow and returns how many each gateway took.
func (fl *flows) send() (e2, e3 int) {
	if err := fl.sendEach(); err != nil {
		fl.t.Fatal(err)
	}
	return len(fl.onE2(64, 500*time.Millisecond)), len(fl.onE3(64, 300*time.Millisecond))
}

// sendEach sends one packet of each flow, and stops at a failed send.
func (fl *flows) sendEach() error {
	for i := 0; i < 64; i++ {
		if _, err := fl.sock.WriteToUDP([]byte("flow"), &net.UDPAddr{IP: net.ParseIP("2001:db8:f0::1"), Port: 7000 + i}); err != nil {
			return err
		}
	}
	return nil
}

// keepFlowing sends every flow each 20 ms until the function it returns is
// called (or the test ends).
func (fl *flows) keepFlowing() (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	stop = func() { once.Do(func() { close(done) }) }
	fl.t.Cleanup(stop)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				_ = fl.sendEach() // keeps the entry in use; what it delivers is not counted
			}
		}
	}()
	return stop
}

// A stateChange is a neighbour's new NUD state, when the monitor printed it.
type stateChange struct {
	state string
	at    time.Time
}

// monitorNeigh runs `urouter monitor neigh` and sends the state changes of
// neighbour addr as they come.
func monitorNeigh(t *testing.T, l *etherLab, addr string) <-chan stateChange {
	mon := exec.Command(plain, "--socket", l.d.sock, "monitor", "neigh")
	events, err := mon.StdoutPipe()
	if err != nil || mon.Start() != nil {
		t.Fatalf("monitor neigh: %v", err)
	}
	t.Cleanup(func() { _ = mon.Process.Kill(); _ = mon.Wait() })
	changes := make(chan stateChange, 256)
	go func() {
		sc := bufio.NewScanner(events)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) > 2 && f[0] == addr {
				changes <- stateChange{f[len(f)-1], time.Now()}
			}
		}
		close(changes)
	}()
	return changes
}

// statesUntilFailed collects the states a neighbour goes through (the same
// state twice counts once) up to FAILED, or until timeout.
func statesUntilFailed(changes <-chan stateChange, timeout time.Duration) []stateChange {
	var seen []stateChange
	end := time.After(timeout)
	for {
		select {
		case c, ok := <-changes:
			if !ok {
				return seen
			}
			if len(seen) == 0 || seen[len(seen)-1].state != c.state {
				seen = append(seen, c)
			}
			if c.state == "FAILED" {
				return seen
			}
		case <-end:
			return seen
		}
	}
}

// checkFailure: from the monitor's start to FAILED, the gateway's entry
// ends REACHABLE DELAY PROBE FAILED (it may have been in DELAY already
// when the gateway went quiet, and REACHABLE may have gone by before the
// monitor listened), DELAY as long as delay_probe and PROBE as three
// retransmissions. A timer does not fire early, so the lower bounds are
// tight; the monitor's output may come late on a loaded machine, so the
// upper ones leave room, and still tell Linux's defaults (5 s, 3 s) apart.
func checkFailure(t *testing.T, seen []stateChange) {
	t.Helper()
	var names []string
	for _, c := range seen {
		names = append(names, c.state)
	}
	n := len(seen)
	if got := strings.Join(names, " "); n < 3 || strings.Join(names[n-3:], " ") != "DELAY PROBE FAILED" ||
		n > 3 && names[n-4] != "REACHABLE" {
		t.Fatalf("the gateway's entry went %s; want it to end REACHABLE DELAY PROBE FAILED", got)
	}
	delay, probe := seen[n-2].at.Sub(seen[n-3].at), seen[n-1].at.Sub(seen[n-2].at)
	if delay < 450*time.Millisecond || delay > 1200*time.Millisecond || probe < 700*time.Millisecond || probe > 1700*time.Millisecond {
		t.Errorf("DELAY lasted %v (delay_probe 500 ms), PROBE %v (3 probes 250 ms apart)", delay, probe)
	}
	t.Logf("DELAY lasted %v, PROBE %v", delay, probe)
}

// isFlowPacket: a UDP datagram of TestGatewayFailure's flows.
func isFlowPacket(p []byte) bool {
	if len(p) < 48 || p[6] != 17 {
		return false
	}
	port := binary.BigEndian.Uint16(p[42:])
	return port >= 7000 && port < 7064
}
