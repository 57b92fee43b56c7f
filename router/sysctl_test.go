package router

import (
	"errors"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"urouter/dataplane"
	"urouter/dataplane/port"
	"urouter/ndisc"
)

// TestSysctlNeighDefault: writing net.ipv6.neigh.default.KNOB changes it
// on every link that has not set its own, as Linux's
// neigh_copy_dflt_parms; a new link starts from default. (A netns, where
// the kernel oracle runs, has no net.ipv6.neigh.default.)
func TestSysctlNeighDefault(t *testing.T) {
	r := New()
	d0, err := r.AddDummy("d0", 1500)
	must(t, err)
	_, err = r.AddDummy("d1", 1500)
	must(t, err)
	set := func(name, v string) {
		t.Helper()
		must(t, r.SetSysctl(name, v))
	}
	get := func(name string) string {
		t.Helper()
		v, err := r.Sysctl(name)
		must(t, err)
		return v
	}
	set("net.ipv6.neigh.d1.ucast_solicit", "7")
	set("net.ipv6.neigh.default.ucast_solicit", "5")
	if a, b := get("net.ipv6.neigh.d0.ucast_solicit"), get("net.ipv6.neigh.d1.ucast_solicit"); a != "5" || b != "7" {
		t.Errorf("after default=5: d0 %s (want 5), d1 %s (set itself to 7)", a, b)
	}
	set("net.ipv6.neigh.default.gc_thresh3", "64") // the whole table's: every link's
	if v := get("net.ipv6.neigh.d1.unres_qlen"); v != "101" {
		t.Errorf("d1 unres_qlen %s", v)
	}
	if _, err := r.Sysctl("net.ipv6.neigh.d1.gc_thresh3"); !errors.Is(err, ErrNoKnob) {
		t.Errorf("a link's gc_thresh3: %v, want no such knob (it is default's)", err)
	}
	_, err = r.AddDummy("d2", 1500)
	must(t, err)
	if v := get("net.ipv6.neigh.d2.ucast_solicit"); v != "5" {
		t.Errorf("a new link's ucast_solicit %s, want default's 5", v)
	}
	must(t, r.DeleteLink(d0))
	if _, err := r.Sysctl("net.ipv6.conf.d0.hop_limit"); !errors.Is(err, ErrNoKnob) {
		t.Errorf("a deleted link's knob: %v", err)
	}
	names := r.SysctlNames()
	if !slices.IsSorted(names) || !slices.Contains(names, "net.ipv6.conf.d2.keep_addr_on_down") ||
		!slices.Contains(names, "net.ipv6.neigh.default.gc_thresh1") || slices.Contains(names, "net.ipv6.neigh.all.ucast_solicit") {
		t.Errorf("sysctl -a lists %v", names)
	}
}

// TestSysctlValues: integers as proc_dointvec reads them, bit lists as
// proc_do_large_bitmap reads and writes them.
func TestSysctlValues(t *testing.T) {
	for v, want := range map[string]int64{"0": 0, "-3": -3, "0x10": 16, "010": 8, " 7 ": 7, "5 6": 5, "2147483647": 2147483647} {
		if n, ok := parseProcInt(v); !ok || n != want {
			t.Errorf("%q: %d %v, want %d", v, n, ok, want)
		}
	}
	for _, v := range []string{"", "abc", "+3", "2147483648", "1_0", "12x", "-"} {
		if n, ok := parseProcInt(v); ok {
			t.Errorf("%q read as %d", v, n)
		}
	}
	for v, want := range map[string]string{"0-1,3-127": "0-1,3-127", "3,1,128": "1,3,128", "": "", "255": "255", "4-4": "4"} {
		m, ok := parseBitmap(v)
		if got := formatBitmap(m); !ok || got != want {
			t.Errorf("%q: %q %v, want %q", v, got, ok, want)
		}
	}
	for _, v := range []string{"256", "3-1", "a", "1,,2"} {
		if _, ok := parseBitmap(v); ok {
			t.Errorf("%q taken as a bit list", v)
		}
	}
}

// TestSysctlNeighFlood: RFC 6583's knobs are a link's, under its
// net.ipv6.neigh directory, and reach its cache; unres_total_bytes is the
// router's, in default; accept_untracked_na takes 0 to 2, as Linux's.
func TestSysctlNeighFlood(t *testing.T) {
	needTAP(t)
	r := New()
	l, err := r.AddTAP("t0", port.TAPOptions{}, dataplane.EtherOptions{Neigh: ndisc.DefaultParams()})
	must(t, err)
	defer func() { must(t, r.DeleteLink(l)) }()
	for k, v := range map[string]string{"unres_max": "100", "unres_src_max": "7", "solicit_rate": "50", "solicit_burst": "5"} {
		must(t, r.SetSysctl("net.ipv6.neigh.t0."+k, v))
		if got, err := r.Sysctl("net.ipv6.neigh.t0." + k); err != nil || got != v {
			t.Errorf("%s: %q %v, want %s", k, got, err, v)
		}
		if err := r.SetSysctl("net.ipv6.neigh.t0."+k, "-1"); !errors.Is(err, ErrBadValue) {
			t.Errorf("%s=-1: %v, want invalid", k, err)
		}
	}
	if p := l.Neigh().Params(); p.UnresMax != 100 || p.UnresSrcMax != 7 || p.SolicitRate != 50 || p.SolicitBurst != 5 {
		t.Errorf("the cache's knobs: %+v", p)
	}
	must(t, r.SetSysctl("net.ipv6.neigh.default.unres_total_bytes", "65536"))
	if r.HeldMax() != 65536 {
		t.Errorf("unres_total_bytes did not reach the caches: %d", r.HeldMax())
	}
	if _, err := r.Sysctl("net.ipv6.neigh.t0.unres_total_bytes"); !errors.Is(err, ErrNoKnob) {
		t.Errorf("a link's unres_total_bytes: %v, want no such knob (it is the router's)", err)
	}
	for v, ok := range map[string]bool{"0": true, "1": true, "2": true, "3": false, "-1": false} {
		err := r.SetSysctl("net.ipv6.conf.t0.accept_untracked_na", v)
		if ok != (err == nil) {
			t.Errorf("accept_untracked_na=%s: %v", v, err)
		}
	}
}

// needTAP skips a test that opens a TAP where it cannot (not root).
func needTAP(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a TAP")
	}
}

// TestSysctlCoPP: the CoPP knobs read their defaults, set the
// dataplane's limits, refuse a bad value without changing anything, and
// are listed.
func TestSysctlCoPP(t *testing.T) {
	r := New()
	for name, want := range map[string]string{"net.ipv6.copp.nd.rate": "2000", "net.ipv6.copp.nd.burst": "1000",
		"net.ipv6.copp.routing.rate": "1000000", "net.ipv6.copp.routing.burst": "100000",
		"net.ipv6.copp.isis.rate": "2000", "net.ipv6.copp.isis.burst": "1000",
		"net.ipv6.copp.lldp.rate": "100", "net.ipv6.copp.lldp.burst": "100",
		"net.ipv6.copp.echo.rate": "1000", "net.ipv6.copp.echo.burst": "1000",
		"net.ipv6.copp.other.rate": "2000", "net.ipv6.copp.other.burst": "2000"} {
		if v, err := r.Sysctl(name); err != nil || v != want {
			t.Errorf("%s: %q %v, want %q", name, v, err, want)
		}
		if !slices.Contains(r.SysctlNames(), name) {
			t.Errorf("sysctl -a leaves out %s", name)
		}
	}
	must(t, r.SetSysctl("net.ipv6.copp.echo.rate", "50"))
	must(t, r.SetSysctl("net.ipv6.copp.echo.burst", "0x10"))
	if got := r.DP.CoPP(dataplane.CoPPEcho); got != (dataplane.CoPPLimit{Rate: 50, Burst: 16}) {
		t.Errorf("echo's limit %+v", got)
	}
	for _, bad := range [][2]string{{"net.ipv6.copp.echo.rate", "-1"}, {"net.ipv6.copp.echo.rate", "abc"},
		{"net.ipv6.copp.echo.rate", "1000000001"}, {"net.ipv6.copp.echo.burst", "0"}, {"net.ipv6.copp.echo.burst", ""}} {
		if err := r.SetSysctl(bad[0], bad[1]); !errors.Is(err, ErrBadValue) {
			t.Errorf("%s=%q: %v, want Invalid argument", bad[0], bad[1], err)
		}
	}
	if v, _ := r.Sysctl("net.ipv6.copp.echo.rate"); v != "50" || r.DP.CoPP(dataplane.CoPPEcho).Rate != 50 {
		t.Errorf("after bad values echo.rate reads %s, the dataplane has %+v", v, r.DP.CoPP(dataplane.CoPPEcho))
	}
	if err := r.SetSysctl("net.ipv6.copp.bogus.rate", "5"); !errors.Is(err, ErrNoKnob) {
		t.Errorf("a class that is not: %v", err)
	}
}

// TestNtableKnobsAreTheLinks: what `ntable change` sets on a link is its
// own, as a write of its net.ipv6.neigh.LINK knob: a later write of
// default's leaves it, and changes the rest.
func TestNtableKnobsAreTheLinks(t *testing.T) {
	needTAP(t)
	r := New()
	l, err := r.AddTAP("t1", port.TAPOptions{}, dataplane.EtherOptions{Neigh: ndisc.DefaultParams()})
	must(t, err)
	defer func() { must(t, r.DeleteLink(l)) }()
	p := l.Neigh().Params()
	p.UcastProbes = 7
	must(t, r.SetNeighParams(l, p))
	must(t, r.SetSysctl("net.ipv6.neigh.default.ucast_solicit", "5"))
	must(t, r.SetSysctl("net.ipv6.neigh.default.mcast_solicit", "4"))
	if got := l.Neigh().Params(); got.UcastProbes != 7 || got.McastProbes != 4 {
		t.Errorf("after ntable's ucast_probes 7 and default's 5 and 4: ucast %d (want 7), mcast %d (want 4)", got.UcastProbes, got.McastProbes)
	}
	p.UcastProbes = -1
	if err := r.SetNeighParams(l, p); err == nil || l.Neigh().Params().UcastProbes != 7 {
		t.Errorf("a bad knob: %v, ucast %d", err, l.Neigh().Params().UcastProbes)
	}
}

// TestChangeNeighThroughTheTable: `ntable change` sets a knob in its
// field's unit (milliseconds, packets) through the sysctls' table, with
// their bounds, and Check's complaints before the bounds'.
func TestChangeNeighThroughTheTable(t *testing.T) {
	needTAP(t)
	r := New()
	l, err := r.AddTAP("t1", port.TAPOptions{}, dataplane.EtherOptions{Neigh: ndisc.DefaultParams()})
	must(t, err)
	defer func() { must(t, r.DeleteLink(l)) }()
	must(t, r.ChangeNeigh(l, []NeighChange{{"gc_stale_time", 4500}, {"unres_qlen", 7}, {"gc_interval", 2000}}))
	p := l.Neigh().Params()
	if p.GCStale != 4500*time.Millisecond || p.QueueLen != 7 || p.QueueBytes != 7*unresFrame || p.GCInterval != 2*time.Second {
		t.Errorf("gc_stale %v queue %d/%d gc_int %v, want 4.5s 7/%d 2s", p.GCStale, p.QueueLen, p.QueueBytes, p.GCInterval, 7*unresFrame)
	}
	if v, _ := r.Sysctl("net.ipv6.neigh.t1.gc_stale_time"); v != "4" {
		t.Errorf("gc_stale_time reads %s, want 4", v)
	}
	for _, c := range []NeighChange{{"gc_thresh3", math.MaxInt32 + 1}, {"gc_interval", 0}, {"unres_qlen", math.MaxInt32/unresFrame + 1}} {
		var bad *NeighValueError
		if err := r.ChangeNeigh(l, []NeighChange{{"ucast_solicit", 9}, c}); !errors.As(err, &bad) || bad.Change != 1 {
			t.Errorf("%s %d: %v, want the second change's value refused", c.Knob, c.V, err)
		}
	}
	if err := r.ChangeNeigh(l, []NeighChange{{"retrans_time_ms", 0}}); err == nil || errors.As(err, new(*NeighValueError)) {
		t.Errorf("retrans 0: %v, want Check's complaint", err)
	}
	if err := r.ChangeNeigh(l, []NeighChange{{"bogus", 1}}); !errors.Is(err, ErrNoKnob) {
		t.Errorf("a knob that is not: %v", err)
	}
	if got := l.Neigh().Params(); got != p {
		t.Errorf("refused changes changed the cache:\n%+v\nwant\n%+v", got, p)
	}
}

// TestHeldBudgetIsTheRouters: unres_total_bytes is each router's own: a
// write of one router's leaves another's, and a new router starts from
// the default, not from the last one's.
func TestHeldBudgetIsTheRouters(t *testing.T) {
	a, b := New(), New()
	must(t, a.SetSysctl("net.ipv6.neigh.default.unres_total_bytes", "65536"))
	c := New()
	for i, r := range []*Router{b, c} {
		if v, _ := r.Sysctl("net.ipv6.neigh.default.unres_total_bytes"); r.HeldMax() != ndisc.DefaultHeldMax || v != strconv.Itoa(ndisc.DefaultHeldMax) {
			t.Errorf("router %d: unres_total_bytes %s, its caches' bound %d; want the default %d", i, v, r.HeldMax(), ndisc.DefaultHeldMax)
		}
	}
	if a.HeldMax() != 65536 {
		t.Errorf("the router written: %d, want 65536", a.HeldMax())
	}
}
