package integration

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The container image (make image) run as containerlab runs a node:
// podman from Debian, with the repository's container/containers.conf
// (runc, cgroupfs, no default ulimits: what these machines need), the
// container started with no network, its interfaces made on the host and
// moved in after it starts.

var (
	imageOnce sync.Once
	imageErr  error
	imageOut  []byte
)

// needImage builds urouter:latest from this tree (make image) once per
// run, and returns the podman settings file.
func needImage(t *testing.T) string {
	t.Helper()
	needRoot(t)
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatal("podman is not installed (.ci/run installs podman and runc)")
	}
	conf, err := filepath.Abs("../container/containers.conf")
	if err != nil {
		t.Fatal(err)
	}
	imageOnce.Do(func() {
		cmd := exec.Command("make", "-C", "..", "image")
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
		imageOut, imageErr = cmd.CombinedOutput()
	})
	if imageErr != nil {
		t.Fatalf("make image: %v\n%s", imageErr, imageOut)
	}
	return conf
}

// ctLab is the image between two hosts: A (2001:db8:f1::2, on the
// container's eth1) and B (2001:db8:f2::2, on its eth2).
type ctLab struct {
	t          *testing.T
	conf       string // CONTAINERS_CONF
	name, vol  string
	a, b       string
	hostA      string
	hostB      string
	routerConf string
}

const ctConf = `link add lan1 type host dev eth1
link add lan2 type host dev eth2
link set lan1 up
link set lan2 up
address add 2001:db8:f1::1/64 dev lan1
address add 2001:db8:f2::1/64 dev lan2
route add 2001:db8:77::/48 via 2001:db8:f2::2 dev lan2
`

// newCTLab starts the container (podman run's runArgs, the daemon's
// daemonArgs after the image's) with ctConf as its config and a volume for
// its state; the test's end removes them.
func newCTLab(t *testing.T, runArgs, daemonArgs []string) *ctLab {
	c := &ctLab{t: t, conf: needImage(t), a: newNetns(t, "cta"), b: newNetns(t, "ctb"),
		hostA: "2001:db8:f1::2", hostB: "2001:db8:f2::2"}
	c.name = "urouter-test-" + strings.TrimPrefix(filepath.Base(c.a), "cta-")
	c.vol = c.name + "-state"
	c.routerConf = filepath.Join(t.TempDir(), "urouter.conf")
	if err := os.WriteFile(c.routerConf, []byte(ctConf), 0o644); err != nil {
		t.Fatal(err)
	}
	c.podman("rm", "-f", "-t", "0", c.name)
	c.podman("volume", "rm", "-f", c.vol)
	t.Cleanup(func() {
		c.podman("rm", "-f", "-t", "0", c.name)
		c.podman("volume", "rm", "-f", c.vol)
	})
	args := append([]string{"run", "-d", "--name", c.name, "--network", "none", "--privileged",
		"-v", c.routerConf + ":/etc/urouter/urouter.conf:ro", "-v", c.vol + ":/var/lib/urouter"}, runArgs...)
	if out, st := c.podman(append(append(args, "urouter:latest"), daemonArgs...)...); st != 0 {
		t.Fatalf("podman run: %s", out)
	}
	waitUntil(t, "the daemon answers", c.answers)
	return c
}

// answers reports whether the daemon in the container answers (ready or
// not).
func (c *ctLab) answers() bool {
	_, st := c.urouter("status")
	return st == 0 || st == 1
}

// podmanCmd is podman with the lab's settings.
func (c *ctLab) podmanCmd(args ...string) *exec.Cmd {
	cmd := exec.Command("podman", args...)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+c.conf, "DISABLE_HC_SYSTEMD=true")
	return cmd
}

// podman runs podman with the lab's settings: its output and status.
func (c *ctLab) podman(args ...string) (string, int) {
	out, err := c.podmanCmd(args...).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out) + string(ee.Stderr), ee.ExitCode()
	} else if err != nil {
		return err.Error(), -1
	}
	return string(out), 0
}

// urouter runs the client inside the container, as `podman exec R urouter`.
func (c *ctLab) urouter(args ...string) (string, int) {
	return c.podman(append([]string{"exec", c.name, "urouter"}, args...)...)
}

func (c *ctLab) pid() int {
	out, _ := c.podman("inspect", "-f", "{{.State.Pid}}", c.name)
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	return pid
}

// healthy runs the image's health check.
func (c *ctLab) healthy() bool { _, st := c.podman("healthcheck", "run", c.name); return st == 0 }

// wire gives the container interface dev, a veth whose other end is host
// ns's eth0 (address addr/64, the router gw): made on the host, moved into
// the container's namespace and renamed there, as containerlab does.
func (c *ctLab) wire(ns, dev, addr, gw string) {
	t := c.t
	tmp := fmt.Sprintf("ct%d", time.Now().UnixNano()%1e9)
	pid := strconv.Itoa(c.pid())
	runCmd("ip", "-n", ns, "link", "del", "eth0")
	mustRun(t, "ip", "link", "add", tmp, "type", "veth", "peer", "name", "eth0", "netns", ns)
	mustRun(t, "ip", "link", "set", tmp, "netns", "/proc/"+pid+"/ns/net")
	mustRun(t, "nsenter", "-t", pid, "-n", "ip", "link", "set", tmp, "name", dev)
	mustRun(t, "nsenter", "-t", pid, "-n", "ip", "link", "set", dev, "up")
	mustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0")
	mustRun(t, "ip", "-n", ns, "addr", "add", addr+"/64", "dev", "eth0", "nodad")
	mustRun(t, "ip", "-n", ns, "link", "set", "eth0", "up")
	mustRun(t, "ip", "-n", ns, "route", "replace", "2001:db8::/32", "via", gw)
}

func (c *ctLab) wireA() { c.wire(c.a, "eth1", c.hostA, "2001:db8:f1::1") }
func (c *ctLab) wireB() { c.wire(c.b, "eth2", c.hostB, "2001:db8:f2::1") }

// ping reports whether ns reaches dst (two echoes, one answered will do).
func ping(ns, dst string) bool {
	_, _, st := runCmd("ip", "netns", "exec", ns, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "1", dst)
	return st == 0
}

// readyAgain waits for a container just (re)started: not ready, its
// config back (from the state volume) and waiting for eth1 and eth2; then
// wires them, and it turns healthy and forwards both ways.
func (c *ctLab) readyAgain(when string) {
	t := c.t
	out, st := c.urouter("status")
	if st != 1 || !strings.Contains(out, "link lan1 waits for its interface eth1") || c.healthy() {
		t.Errorf("%s, before its interfaces: status %d\n%s", when, st, out)
	}
	if out, _ := c.urouter("-6", "route", "show", "2001:db8:77::/48"); !strings.Contains(out, "via 2001:db8:f2::2 dev lan2") {
		t.Errorf("%s: the configuration is not back: %q", when, out)
	}
	c.wireA()
	c.wireB()
	waitUntil(t, when+": healthy", c.healthy)
	if !ping(c.a, c.hostB) || !ping(c.b, c.hostA) {
		t.Errorf("%s: no forwarding both ways", when)
	}
}

// TestContainer: the image built from this tree, run as containerlab runs
// it, is healthy only once eth1 and eth2 are moved in, forwards both ways,
// resumes within 2 s with no command given when an interface is deleted
// and made again (its routes and addresses as they were), and comes back
// from `podman restart` and from SIGKILL with its configuration from the
// state volume.
func TestContainer(t *testing.T) {
	parallel(t)
	c := newCTLab(t, nil, nil)
	out, st := c.urouter("status")
	if st != 1 || !strings.Contains(out, "link lan1 waits for its interface eth1") || c.healthy() {
		t.Fatalf("started without its interfaces: healthy %v, status %d\n%s", c.healthy(), st, out)
	}
	if out, _ := c.urouter("link", "show", "lan1"); !strings.Contains(out, "state NOTPRESENT") {
		t.Errorf("link show of a link waiting: %s", out)
	}
	c.wireA()
	waitUntil(t, "lan1 attached", func() bool { out, _ := c.urouter("status"); return !strings.Contains(out, "lan1 waits") })
	if c.healthy() {
		t.Error("healthy with eth2 not moved in")
	}
	c.wireB()
	waitUntil(t, "healthy with eth1 and eth2", c.healthy)
	if !ping(c.a, c.hostB) || !ping(c.b, c.hostA) {
		t.Fatal("no forwarding both ways")
	}

	c.replug()

	// B's veth down: lan2 has no carrier, which status tells, healthy still
	mustRun(t, "ip", "-n", c.b, "link", "set", "eth0", "down")
	waitUntil(t, "lan2 without carrier", func() bool { out, _ := c.urouter("link", "show", "lan2"); return strings.Contains(out, "NO-CARRIER") })
	if out, st := c.urouter("status"); st != 0 || !strings.Contains(out, "no carrier: lan2") || !c.healthy() {
		t.Errorf("a neighbour down made the router unhealthy: status %d\n%s", st, out)
	}

	if out, st := c.podman("restart", "-t", "2", c.name); st != 0 {
		t.Fatalf("podman restart: %s", out)
	}
	waitUntil(t, "the daemon answers after restart", c.answers)
	c.readyAgain("after podman restart")

	if out, st := c.podman("kill", "-s", "KILL", c.name); st != 0 {
		t.Fatalf("podman kill: %s", out)
	}
	if out, st := c.podman("start", c.name); st != 0 {
		t.Fatalf("podman start: %s", out)
	}
	waitUntil(t, "the daemon answers after SIGKILL", c.answers)
	c.readyAgain("after SIGKILL and start")
}

// replug deletes eth1 under traffic (B pings A) and makes it again: A
// reaches B again within 2 s of the new eth1, with no command to the
// router, and lan1's routes and addresses are what they were.
func (c *ctLab) replug() {
	t := c.t
	routes, _ := c.urouter("-6", "route")
	addrs, _ := c.urouter("address", "show", "lan1")
	pings := startIn(t, c.b, "ping", "-6", "-i", "0.05", "-W", "1", c.hostA)
	defer pings.stop()
	waitUntil(t, "B's pings answered", func() bool { return strings.Contains(pings.out.String(), "bytes from") })
	mustRun(t, "nsenter", "-t", strconv.Itoa(c.pid()), "-n", "ip", "link", "del", "eth1")
	waitUntil(t, "lan1 waiting", func() bool { out, _ := c.urouter("link", "show", "lan1"); return strings.Contains(out, "NOTPRESENT") })
	answered := strings.Count(pings.out.String(), "bytes from")
	c.wireA()
	start := time.Now()
	waitUntil(t, "A to reach B after eth1 came back", func() bool { return ping(c.a, c.hostB) })
	took := time.Since(start)
	waitUntil(t, "B's pings answered again", func() bool { return strings.Count(pings.out.String(), "bytes from") > answered })
	t.Logf("eth1 deleted and made again: A reached B %v after, B's pings answered again", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("forwarding resumed %v after eth1 came back, want within 2 s", took)
	}
	if now, _ := c.urouter("-6", "route"); now != routes {
		t.Errorf("routes before:\n%s\nafter:\n%s", routes, now)
	}
	if now, _ := c.urouter("address", "show", "lan1"); now != addrs {
		t.Errorf("lan1's addresses before:\n%s\nafter:\n%s", addrs, now)
	}
}

// memoryLimit is what the daemon's log says it took of the container's.
var memoryLimit = regexp.MustCompile(`memory limit (\d+) MiB`)

// groupsRefused is `fpm` saying that groups were refused for want of room.
var groupsRefused = regexp.MustCompile(`pending-overflow [1-9]`)

// fpmGroup is an FPM frame of one RTM_NEWNEXTHOP: group id of members m
// and m+1, as zebra sends a group.
func fpmGroup(id, m uint32) []byte {
	b := make([]byte, 4+16+8+8+20)
	b[0], b[1] = 1, 1 // FPM version 1, netlink
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	n := b[4:]
	binary.NativeEndian.PutUint32(n[0:], uint32(len(n)))
	binary.NativeEndian.PutUint16(n[4:], unix.RTM_NEWNEXTHOP)
	binary.NativeEndian.PutUint16(n[6:], unix.NLM_F_REQUEST|unix.NLM_F_CREATE|unix.NLM_F_REPLACE)
	a := n[24:] // after the nlmsghdr and the nhmsg (AF_UNSPEC: a group)
	binary.NativeEndian.PutUint16(a[0:], 8)
	binary.NativeEndian.PutUint16(a[2:], unix.NHA_ID)
	binary.NativeEndian.PutUint32(a[4:], id)
	binary.NativeEndian.PutUint16(a[8:], 20)
	binary.NativeEndian.PutUint16(a[10:], unix.NHA_GROUP)
	binary.NativeEndian.PutUint32(a[12:], m)   // weight 0: 1
	binary.NativeEndian.PutUint32(a[20:], m+1) // its struct nexthop_grp is 8 bytes
	return b
}

// fpmGroupFlood connects to the FPM port inside namespace of process pid
// and sends n groups whose members never come.
func fpmGroupFlood(t *testing.T, pid, n int) {
	h, err := netns.GetFromPid(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Close() }()
	var conn net.Conn
	inNetnsHandle(t, h, func() {
		if conn, err = net.Dial("tcp", "127.0.0.1:2620"); err != nil {
			t.Fatal(err)
		}
	})
	defer func() { _ = conn.Close() }()
	w := bufio.NewWriterSize(conn, 1<<16)
	for i := range uint32(n) {
		if _, err := w.Write(fpmGroup(1_000_000+i, 10_000_000+2*i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestContainerMemory: the image run with --memory 128m takes its Go
// memory limit from the cgroup, and under the hostile tests' floods (an
// ND scan of a LAN, a million FPM groups refused at the bound) it is not
// killed, stays under the limit and still forwards.
func TestContainerMemory(t *testing.T) {
	measures(t)
	c := newCTLab(t, []string{"--memory", "128m"}, []string{"--fpm", "127.0.0.1:2620"})
	c.wireA()
	c.wireB()
	// not healthy: no zebra connects to its FPM port
	waitUntil(t, "lan1 and lan2 attached", func() bool { out, _ := c.urouter("status"); return !strings.Contains(out, "waits") })
	logs, _ := c.podmanCmd("logs", c.name).CombinedOutput() // the daemon's log is its stderr
	m := memoryLimit.FindSubmatch(logs)
	if m == nil || string(m[1]) != "102" {
		t.Fatalf("the daemon did not take 80%% of the 128 MiB limit (102 MiB): %s", logs)
	}
	pid := c.pid()
	var peak int64
	stop := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Go(func() {
		for {
			peak = max(peak, vmRSS(pid))
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	send := floodSender(t, c.a, false)
	sent, took := send(floodRate, 5*time.Second, true)
	fpmGroupFlood(t, pid, 1_000_000)
	waitUntil(t, "the groups refused", func() bool {
		out, _ := c.urouter("fpm")
		return groupsRefused.MatchString(out)
	})
	close(stop)
	sampled.Wait()
	out, _ := c.podman("inspect", "-f", "{{.State.Running}} {{.State.OOMKilled}}", c.name)
	t.Logf("ND scan %d datagrams in %v, 1M FPM groups: RSS peak %d MiB of 128 MiB; running, OOM-killed: %s",
		sent, took.Round(time.Millisecond), peak>>10, strings.TrimSpace(out))
	if strings.TrimSpace(out) != "true false" || pid != c.pid() {
		t.Fatalf("the container did not live through the floods: %s", out)
	}
	if peak >= 128<<10 {
		t.Errorf("RSS peaked at %d MiB, over the container's 128 MiB", peak>>10)
	}
	if !ping(c.a, c.hostB) || !ping(c.b, c.hostA) {
		t.Error("no forwarding after the floods")
	}
}
