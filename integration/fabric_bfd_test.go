package integration

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"urouter/internal/racebuild"
)

const bfdPrefix = "2001:db8:e000::/64"

// TestBFD: R peers over numbered eBGP with P1 and P2, each session
// watched by BFD (300 ms, multiplier 3); both peers announce one prefix,
// P2's path made longer so that the traffic takes P1's. The BFD sessions
// come up and stay up while TCP crosses R and R's address on P1's link is
// flooded. Then P1 goes silent (its link stays up): with BFD, R moves the
// prefix to P2 within a second and a 10 ms ping loses at most 100
// replies; without BFD it waits for the hold time (6 s) and loses more.
// P1's link cut instead (`ip link set eth0 down` in P1) is told by the
// veth's carrier, with or without BFD: in urouter mode urouter makes the
// link's mirror dormant, and zebra and bgpd act on it as on a kernel
// interface that lost its carrier; at most 100 replies lost either way.
func TestBFD(t *testing.T) {
	measures(t)
	inModes(t, func(t *testing.T, kernel bool, fig func(string, any)) {
		lostBFD := -1
		t.Run("bfd", func(t *testing.T) {
			l := newBFDLab(t, kernel, true)
			fig("BGP and BFD up after", time.Since(l.started))
			l.underLoad(fig)
			lost, outage := l.failover(5*time.Second, l.silence)
			fig("P1 silent, BFD: replies lost of a 10 ms ping", lost)
			fig("P1 silent, BFD: longest outage", outage)
			if lost > 100 {
				t.Errorf("with BFD %d replies lost (%v without an answer), want at most 100", lost, outage)
			}
			lostBFD = lost
			l.linkCut(fig, "BFD")
		})
		// A lab of its own: BFD taken off a running lab's sessions takes
		// them down (the other side's session dies with it).
		t.Run("hold-time", func(t *testing.T) {
			l := newBFDLab(t, kernel, false)
			lost, outage := l.failover(15*time.Second, l.silence)
			fig("P1 silent, no BFD: replies lost of a 10 ms ping", lost)
			fig("P1 silent, no BFD: longest outage", outage)
			if lostBFD >= 0 && lost <= lostBFD {
				t.Errorf("without BFD %d replies lost, with BFD %d: BFD made no difference", lost, lostBFD)
			}
			l.linkCut(fig, "no BFD")
		})
	})
}

// newBFDLab is the lab with numbered eBGP between R and each peer, the
// sessions watched by BFD if bfd, up, and R's route to the prefix both
// peers announce through P1 (P2's path made longer).
func newBFDLab(t *testing.T, kernel, bfd bool) *fabricLab {
	l := newFabricLab(t, kernel, fabricOpts{base: "ubfd", peers: 2, numbered: true})
	l.shows = []string{"show bgp ipv6 unicast summary", "show bgp ipv6 unicast", "show bfd peers", "show bfd peers counters"}
	l.writeZebra("", "")
	var per []string
	daemons := []string{"bgpd"}
	if bfd {
		per, daemons = []string{"bfd profile fast"}, []string{"bfdd", "bgpd"}
	}
	l.router.write("bgpd", bgpConf(65000, "network 2001:db8:d3::/64", per,
		[2]string{bfdPeer(1), "remote-as 65001"}, [2]string{bfdPeer(2), "remote-as 65002"}))
	l.router.write("bfdd", bfdConf)
	for i, p := range l.peers {
		mustRun(t, "ip", "-n", p.ns, "addr", "add", "2001:db8:e000::1/128", "dev", "lo")
		af, routeMap := "network "+bfdPrefix, ""
		if i == 1 {
			af += fmt.Sprintf("\n  neighbor 2001:db8:d%d::1 route-map longer out", i+1)
			routeMap = "route-map longer permit 10\n set as-path prepend 65002 65002\n"
		}
		p.write("bgpd", bgpConf(65001+i, af, per, [2]string{fmt.Sprintf("2001:db8:d%d::1", i+1), "remote-as 65000"})+routeMap)
		p.write("bfdd", bfdConf)
	}
	l.startFRR(daemons...)
	l.waitFor("both BGP sessions Established (and their BFD sessions up)", 30*time.Second, func() bool {
		up := l.router.bfdUp()
		return l.router.established(bfdPeer(1), bfdPeer(2)) && (!bfd || up[bfdPeer(1)] && up[bfdPeer(2)])
	})
	l.waitFor("the route through P1", 10*time.Second, func() bool { return l.bfdPath() == l.dev(1) })
	return l
}

// bfdPeer is peer i's address on its link to R.
func bfdPeer(i int) string { return fmt.Sprintf("2001:db8:d%d::2", i) }

// underLoad: for 5 s TCP crosses R from H to P1 while a host on P1's
// link floods R's address there (echo requests and SYNs from an address
// of its own, 10,000 of each a second: ten and five times CoPP's echo and
// other limits; 4,000 against a race-built daemon, which reads some
// 45,000 packets a second); R's BFD sessions, on that link too, stay up throughout: what
// comes in for them is CoPP's routing class, which the flood's classes do
// not touch. (A flood past what R's reader takes overflows the socket,
// which drops blindly, BFD's packets with the rest: ARCHITECTURE's CoPP.)
func (l *fabricLab) underLoad(fig func(string, any)) {
	t := l.t
	srv := startIn(t, l.peers[0].ns, "iperf3", "-s", "-1")
	defer srv.stop()
	l.waitFor("iperf3 to listen", 5*time.Second, func() bool {
		o, _, _ := runCmd("ip", "netns", "exec", l.peers[0].ns, "ss", "-Htln", "sport", "= :5201")
		return strings.Contains(o, "5201")
	})
	const flooder = "2001:db8:d1::66"
	mustRun(t, "ip", "-n", l.peers[0].ns, "addr", "add", flooder+"/64", "dev", "eth0", "nodad")
	before := l.router.bfdDowns()
	rate := 10000
	if racebuild.Enabled {
		rate = 4000
	}
	f := startFloodIn(t, l.peers[0].ns, flooder, "2001:db8:d1::1", rate)
	o, e, st := runCmd("ip", "netns", "exec", l.h, "iperf3", "-c", bfdPeer(1), "-t", "5", "-J")
	close(f.done)
	f.wg.Wait()
	secs := time.Since(f.start).Seconds()
	bps, ok := iperfReceived(o)
	if st != 0 || !ok {
		t.Fatalf("iperf3 across R: %s%s\n%s", o, e, l.state())
	}
	fig("TCP across R under the flood (Gbit/s)", fmt.Sprintf("%.2f", bps/1e9))
	fig("the flood on P1's link: echo + SYN a second", fmt.Sprintf("%.0f + %.0f", float64(f.echoes.Load())/secs, float64(f.syns.Load())/secs))
	if after, up := l.router.bfdDowns(), l.router.bfdUp(); !up[bfdPeer(1)] || !up[bfdPeer(2)] || !maps.Equal(before, after) {
		t.Fatalf("a BFD session went down under load: session-down %v before, %v after\n%s", before, after, l.state())
	}
}

// bfdConf is bfdd's: the profile the sessions use, 300 ms each way and
// three missed (FRR's defaults, written out for what the test relies on).
const bfdConf = "bfd\n profile fast\n  receive-interval 300\n  transmit-interval 300\n  detect-multiplier 3\n exit\nexit\n"

// bfdPath is the link R's route to the BFD test's prefix leaves by, "" if
// none or more than one.
func (l *fabricLab) bfdPath() string {
	nhs := l.nexthops("bgp", bfdPrefix)
	if len(nhs) != 1 {
		return ""
	}
	return strings.Fields(nhs[0])[2]
}

// silence makes P1 silent, and returns what lets it speak again: its
// every route lookup for what it sends ends in a blackhole rule (what it
// receives is delivered by the local table first), its link and R's stay
// up.
func (l *fabricLab) silence() (restore func()) {
	p1 := l.peers[0].ns
	mustRun(l.t, "ip", "-n", p1, "-6", "rule", "add", "pref", "1", "blackhole")
	return func() { mustRun(l.t, "ip", "-n", p1, "-6", "rule", "del", "pref", "1") }
}

// cutLink takes P1's end of its link down, and returns what brings it up.
func (l *fabricLab) cutLink() (restore func()) {
	p1 := l.peers[0].ns
	mustRun(l.t, "ip", "-n", p1, "link", "set", "eth0", "down")
	return func() { mustRun(l.t, "ip", "-n", p1, "link", "set", "eth0", "up") }
}

// linkCut waits for the route through P1 again (after a failover), cuts
// P1's link, and checks the failover's loss.
func (l *fabricLab) linkCut(fig func(string, any), with string) {
	l.t.Helper()
	l.waitFor("R's route through P1 again", 20*time.Second, func() bool { return l.bfdPath() == l.dev(1) })
	lost, outage := l.failover(5*time.Second, l.cutLink)
	fig("P1's link cut, "+with+": replies lost", lost)
	fig("P1's link cut, "+with+": longest outage", outage)
	if lost > 100 {
		l.t.Errorf("P1's link cut, %s: %d replies lost (%v without an answer), want at most 100", with, lost, outage)
	}
}

// failover cuts P1 off (cut) while the host pings the BFD test's prefix
// every 10 ms, waits (up to limit) for R to move the route to P2 and the
// ping to be answered again, then restores P1. It returns how many
// replies were lost, and the longest run of them as a time.
func (l *fabricLab) failover(limit time.Duration, cut func() (restore func())) (lost int, outage time.Duration) {
	l.t.Helper()
	ping := startIn(l.t, l.h, "ping", "-6", "-i", "0.01", "2001:db8:e000::1")
	time.Sleep(300 * time.Millisecond) // answered before the cut
	restore := cut()
	l.waitFor("R's route through P2 after P1 was cut off", limit, func() bool { return l.bfdPath() == l.dev(2) })
	l.waitFor("the ping's answers through P2", 5*time.Second, func() bool {
		_, _, st := runCmd("ip", "netns", "exec", l.h, "ping", "-6", "-c", "1", "-W", "0.5", "2001:db8:e000::1")
		return st == 0
	})
	time.Sleep(200 * time.Millisecond) // the 10 ms ping's own answers come again (those in flight at its end count lost)
	restore()
	_ = syscall.Kill(ping.cmd.Process.Pid, syscall.SIGINT) // ping's summary is printed on SIGINT
	_ = ping.cmd.Wait()                                    // ended by a signal
	sent, got, gap := pingSummary(ping.out.String())
	if sent == 0 {
		l.t.Fatalf("the 10 ms ping printed no summary:\n%s", ping.out)
	}
	return sent - got, time.Duration(gap) * 10 * time.Millisecond
}

var (
	pingTotals = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`)
	pingSeq    = regexp.MustCompile(`bytes from \S+ icmp_seq=(\d+) `)
)

// pingSummary is what a ping printed: packets sent, replies received,
// and the longest run of sequence numbers without a reply.
func pingSummary(out string) (sent, got, gap int) {
	if m := pingTotals.FindStringSubmatch(out); m != nil {
		sent, _ = strconv.Atoi(m[1])
		got, _ = strconv.Atoi(m[2])
	}
	var seqs []int
	for _, m := range pingSeq.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		seqs = append(seqs, n)
	}
	slices.Sort(seqs)
	for i := 1; i < len(seqs); i++ {
		gap = max(gap, seqs[i]-seqs[i-1]-1)
	}
	if len(seqs) > 0 { // and the runs before the first and after the last (sequence numbers from 1)
		gap = max(gap, seqs[0]-1, sent-seqs[len(seqs)-1])
	}
	return sent, got, gap
}

// bfdUp is which of the node's BFD peers are up, by address.
func (n *frrNode) bfdUp() map[string]bool {
	var peers []struct {
		Peer   string `json:"peer"`
		Status string `json:"status"`
	}
	up := map[string]bool{}
	if n.json("show bfd peers json", &peers) == nil {
		for _, p := range peers {
			up[p.Peer] = p.Status == "up"
		}
	}
	return up
}

// bfdDowns is how many times each of the node's BFD sessions went down.
func (n *frrNode) bfdDowns() map[string]int {
	var peers []struct {
		Peer string `json:"peer"`
		Down int    `json:"session-down"`
	}
	downs := map[string]int{}
	if err := n.json("show bfd peers counters json", &peers); err != nil {
		n.t.Fatal(err)
	}
	for _, p := range peers {
		downs[p.Peer] = p.Down
	}
	return downs
}
