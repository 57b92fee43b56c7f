package integration

import (
	"bufio"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// What the tests measure of hosts and processes: a ping's first answer,
// ping's summary, a process's resident memory, the machine's.

// firstReply opens an ICMPv6 socket in namespace ns and returns a
// function that sends dst an echo request every gap until the first
// reply, for up to d, and returns how long after the first request that
// reply came (0: none). Unlike ping(8) timed from outside, it does not
// count the start of a process.
func firstReply(t testing.TB, ns, dst string) func(gap, d time.Duration) time.Duration {
	var fd int
	inNetns(t, ns, func() {
		var err error
		if fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { _ = unix.Close(fd) })
	to := &unix.SockaddrInet6{Addr: netip.MustParseAddr(dst).As16()}
	return func(gap, d time.Duration) time.Duration {
		const id = 0x6583
		buf := make([]byte, 1500)
		start := time.Now()
		for seq := 0; time.Since(start) < d; seq++ {
			// the kernel fills in an ICMPv6 raw socket's checksum
			req := []byte{128, 0, 0, 0, id >> 8, id & 0xff, byte(seq >> 8), byte(seq), 'n', 'd'}
			_ = unix.Sendto(fd, req, 0, to) // one lost is what the next is for
			next := start.Add(time.Duration(seq+1) * gap)
			for wait := time.Until(next); wait > 0; wait = time.Until(next) {
				tv := unix.NsecToTimeval(max(int64(wait), int64(time.Microsecond)))
				_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv) // a timeout not set is a longer wait, no wrong answer
				n, from, err := unix.Recvfrom(fd, buf, 0)
				if err != nil {
					continue
				}
				if f, ok := from.(*unix.SockaddrInet6); ok && f.Addr == to.Addr && n >= 8 && buf[0] == 129 &&
					buf[4] == id>>8 && buf[5] == id&0xff {
					return time.Since(start)
				}
			}
		}
		return 0
	}
}

// pingCounts reads ping's summary: transmitted and received.
func pingCounts(out string) (sent, got int) {
	m := regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`).FindStringSubmatch(out)
	if m == nil {
		return 0, 0
	}
	sent, _ = strconv.Atoi(m[1])
	got, _ = strconv.Atoi(m[2])
	return sent, got
}

// vmRSS is process pid's resident set in kB (0 for no process).
func vmRSS(pid int) int64 {
	if pid == 0 {
		return 0
	}
	return statusField("/proc/"+strconv.Itoa(pid)+"/status", "VmRSS")
}

// meminfo is a field of /proc/meminfo in kB.
func meminfo(field string) int64 { return statusField("/proc/meminfo", field) }

// statusField reads "FIELD: N kB" from a file of /proc.
func statusField(path, field string) int64 {
	fh, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer func() { _ = fh.Close() }()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == field {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
