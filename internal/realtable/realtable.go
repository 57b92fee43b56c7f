// Package realtable loads the project's copy of a real full routing table
// (testdata/prefixes.txt.gz, see testdata's notice) for tests and
// benchmarks: its 160,147 IPv6 prefixes.
package realtable

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// IPv6 is how many IPv6 prefixes the table has.
const IPv6 = 160147

// Load returns the table's IPv6 prefixes, in the file's order.
func Load() ([]netip.Prefix, error) {
	_, here, _, _ := runtime.Caller(0)
	f, err := os.Open(filepath.Join(filepath.Dir(here), "..", "..", "testdata", "prefixes.txt.gz"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: a close loses nothing
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var ps []netip.Prefix
	for s := bufio.NewScanner(z); s.Scan(); {
		line := strings.TrimSpace(s.Text())
		if !strings.Contains(line, ":") {
			continue // IPv4
		}
		p, err := netip.ParsePrefix(line)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	if len(ps) != IPv6 {
		return nil, fmt.Errorf("real table: %d IPv6 prefixes, want %d", len(ps), IPv6)
	}
	return ps, nil
}

// MustLoad is Load for tests: any error is fatal.
func MustLoad(tb interface{ Fatal(...any) }) []netip.Prefix {
	ps, err := Load()
	if err != nil {
		tb.Fatal(err)
	}
	return ps
}
