package router

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"urouter/dataplane"
	"urouter/ndisc"
)

// The router's knobs by Linux's sysctl names (net.ipv6.conf.*,
// net.ipv6.neigh.*, net.ipv6.fib_multipath_hash_*, net.ipv6.icmp.*) and
// its own (net.ipv6.copp.*: control-plane policing, dataplane/copp.go), read
// and written as text, checked as the kernel's proc handlers check them.
// Only knobs that mean something to the router are here; what each does
// is in the tables below (sysctl_conf.go, sysctl_neigh.go) and in
// docs/sysctl.md.

// Errors of Sysctl and SetSysctl, as sysctl(8) tells them apart.
var (
	ErrNoKnob   = errors.New("No such file or directory")
	ErrBadValue = errors.New("Invalid argument")
)

// sysctls are the knobs' values, under r.mu. A link's own are made from
// the default ones when it is added, as Linux copies a new device's from
// net.ipv6.conf.default and net.ipv6.neigh.default.
type sysctls struct {
	all, dflt  ipv6Conf
	links      map[int32]*linkSysctls
	neighDflt  neighParams
	hashPolicy int64
	hashFields int64
	icmpRate   int64 // net.ipv6.icmp.ratelimit, ms
	ratemask   [4]uint64
	msgsPerSec int64
	msgsBurst  int64
	destBurst  int // ICMPv6 errors to one destination in a burst: Linux has no knob, 6
	skipNotify int64
	heldMax    int64 // net.ipv6.neigh.default.unres_total_bytes
	vrfStrict  int64 // net.vrf.strict_mode: a table is one VRF's at most
	copp       [dataplane.NumCoPPClasses]coppKnobs
}

// coppKnobs are a CoPP class's net.ipv6.copp.CLASS.rate and .burst,
// router-wide, each link's bucket taking them.
type coppKnobs struct{ rate, burst int64 }

type linkSysctls struct {
	conf ipv6Conf
	// neigh are the neigh knobs of a link with no cache (a TUN, a dummy);
	// a cache keeps its own
	neigh neighParams
	// neighSet are the neigh knobs written for the link itself: writing
	// a default no longer changes them (Linux's data_state)
	neighSet uint64
}

func newSysctls() sysctls {
	c := ipv6Conf{forwarding: 1, acceptDAD: 1, dadTransmits: 1, hopLimit: 64, mtu: dataplane.MinMTU}
	all := c
	all.acceptDAD = 0 // Linux's: a link's own says
	s := sysctls{all: all, dflt: c, links: map[int32]*linkSysctls{}, neighDflt: defaultNeighParams(),
		hashFields: hashFieldsL3, icmpRate: 100, ratemask: dataplane.DefaultRateMask, msgsPerSec: 1000, msgsBurst: 50, destBurst: 6,
		heldMax: ndisc.DefaultHeldMax}
	for i, d := range dataplane.DefaultCoPP {
		s.copp[i] = coppKnobs{rate: int64(d.Rate), burst: int64(d.Burst)}
	}
	return s
}

// Linux's fib_multipath_hash_fields bits this router hashes on; the inner
// ones (0x40 and up) are accepted and mean nothing without encapsulation.
const (
	hashFieldsL3  = 0x0007 // source, destination, next header: Linux's default
	hashFieldsAll = 0x0fff
)

// globalKnob is a knob outside conf and neigh.
type globalKnob struct {
	get func(s *sysctls) string
	set func(r *Router, v string) error
}

// intKnob is a global integer knob in [lo, hi]; apply does what it does.
func intKnob(field func(s *sysctls) *int64, lo, hi int64, apply func(r *Router)) globalKnob {
	return globalKnob{
		get: func(s *sysctls) string { return itoa64(*field(s)) },
		set: func(r *Router, v string) error {
			n, ok := parseProcInt(v)
			if !ok || n < lo || n > hi {
				return ErrBadValue
			}
			*field(&r.sys) = n
			apply(r)
			return nil
		}}
}

// globalKnobs are the knobs outside conf and neigh, by name.
var globalKnobs = withCoPPKnobs(map[string]globalKnob{
	"net.ipv6.fib_multipath_hash_policy": intKnob(func(s *sysctls) *int64 { return &s.hashPolicy }, 0, 3, (*Router).applyHash),
	"net.ipv6.fib_multipath_hash_fields": intKnob(func(s *sysctls) *int64 { return &s.hashFields }, 1, hashFieldsAll, (*Router).applyHash),
	"net.ipv6.icmp.ratelimit":            intKnob(func(s *sysctls) *int64 { return &s.icmpRate }, 0, math.MaxInt32, (*Router).applyICMP),
	"net.ipv6.icmp.ratemask": {
		get: func(s *sysctls) string { return formatBitmap(s.ratemask) },
		set: func(r *Router, v string) error {
			m, ok := parseBitmap(v)
			if !ok {
				return ErrBadValue
			}
			r.sys.ratemask = m
			r.DP.SetICMPRateMask(m)
			return nil
		}},
	// the routes a link going down or away takes with it are not told to
	// `ip monitor` (read where the router takes them: linkChanged)
	"net.ipv6.route.skip_notify_on_dev_down": intKnob(func(s *sysctls) *int64 { return &s.skipNotify }, 0, 1, func(*Router) {}),
	// Linux's global ICMP limit is IPv4's knob, and holds for ICMPv6 too
	"net.ipv4.icmp_msgs_per_sec": intKnob(func(s *sysctls) *int64 { return &s.msgsPerSec }, 0, math.MaxInt32, (*Router).applyICMP),
	"net.ipv4.icmp_msgs_burst":   intKnob(func(s *sysctls) *int64 { return &s.msgsBurst }, 0, math.MaxInt32, (*Router).applyICMP),
	// the bytes every link's cache holds for resolution, together: the
	// router's, beside the table-wide gc_thresh* (RFC 6583 6.3)
	"net.ipv6.neigh.default.unres_total_bytes": intKnob(func(s *sysctls) *int64 { return &s.heldMax }, 0, math.MaxInt32,
		func(r *Router) { r.held.SetMax(r.sys.heldMax) }),
	"net.vrf.strict_mode": {
		get: func(s *sysctls) string { return itoa64(s.vrfStrict) },
		set: (*Router).setVRFStrict,
	},
})

// withCoPPKnobs adds each CoPP class's net.ipv6.copp.CLASS.rate (packets
// a second, 0: no limit; at most one a nanosecond) and .burst (packets,
// at least one) to knobs.
func withCoPPKnobs(knobs map[string]globalKnob) map[string]globalKnob {
	for c := range dataplane.NumCoPPClasses {
		apply := func(r *Router) {
			k := r.sys.copp[c]
			r.DP.SetCoPP(c, dataplane.CoPPLimit{Rate: int(k.rate), Burst: int(k.burst)})
		}
		name := "net.ipv6.copp." + c.String()
		knobs[name+".rate"] = intKnob(func(s *sysctls) *int64 { return &s.copp[c].rate }, 0, 1e9, apply)
		knobs[name+".burst"] = intKnob(func(s *sysctls) *int64 { return &s.copp[c].burst }, 1, math.MaxInt32, apply)
	}
	return knobs
}

func (r *Router) applyHash() {
	r.Decider.SetHashPolicy(uint8(r.sys.hashPolicy), uint32(r.sys.hashFields))
}

func (r *Router) applyICMP() {
	r.DP.SetICMPRate(int(r.sys.msgsPerSec), int(r.sys.msgsBurst))
	r.DP.SetICMPDestRate(time.Duration(r.sys.icmpRate)*time.Millisecond, r.sys.destBurst)
}

// SetICMPDestBurst sets the burst of ICMPv6 errors to one destination
// (the daemon's --icmp-dest-burst; Linux's is fixed at 6).
func (r *Router) SetICMPDestBurst(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sys.destBurst = n
	r.applyICMP()
}

// Sysctl reads knob name (dots or slashes between its parts).
func (r *Router) Sysctl(name string) (string, error) {
	name = strings.ReplaceAll(name, "/", ".")
	r.mu.Lock()
	defer r.mu.Unlock()
	if g, ok := globalKnobs[name]; ok {
		return g.get(&r.sys), nil
	}
	if k, l, ok := r.linkKnob(name); ok {
		return k.get(r, l), nil
	}
	return "", ErrNoKnob
}

// SetSysctl writes value to knob name; on error nothing changed.
func (r *Router) SetSysctl(name, value string) error {
	name = strings.ReplaceAll(name, "/", ".")
	r.mu.Lock()
	defer r.mu.Unlock()
	if g, ok := globalKnobs[name]; ok {
		return g.set(r, value)
	}
	if k, l, ok := r.linkKnob(name); ok {
		return k.set(r, l, value)
	}
	return ErrNoKnob
}

// SysctlDefault is the value knob name would have without a write to it:
// a global, all or default knob's in a router just made, a link's own the
// one it took from default when it was added (its IPv6 mtu: its MTU). A
// saved configuration writes the knobs that differ from it.
func (r *Router) SysctlDefault(name string) (string, error) {
	name = strings.ReplaceAll(name, "/", ".")
	fresh := &Router{sys: newSysctls()}
	if g, ok := globalKnobs[name]; ok {
		return g.get(&fresh.sys), nil
	}
	r.mu.Lock()
	k, l, ok := r.linkKnob(name)
	r.mu.Unlock()
	switch {
	case !ok:
		return "", ErrNoKnob
	case l == nil:
		return k.get(fresh, nil), nil
	case strings.HasPrefix(name, "net.ipv6.conf.") && strings.HasSuffix(name, ".mtu"):
		return itoa64(int64(l.MTU())), nil
	}
	kind, _, _ := strings.Cut(strings.TrimPrefix(name, "net.ipv6."), ".")
	return r.Sysctl("net.ipv6." + kind + ".default" + name[strings.LastIndexByte(name, '.'):])
}

// SysctlNames are the names of every knob, sorted, as sysctl -a lists
// them.
func (r *Router) SysctlNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for n := range globalKnobs {
		names = append(names, n)
	}
	devs := []string{"all", "default"}
	for _, l := range r.Links.All() {
		devs = append(devs, strings.ReplaceAll(l.Name, ".", "/")) // sysctl's name of lan1.100: lan1/100
	}
	for _, d := range devs {
		for _, k := range confKnobs {
			names = append(names, "net.ipv6.conf."+d+"."+k.name)
		}
		if d == "all" {
			continue // Linux has no net.ipv6.neigh.all
		}
		for _, k := range neighKnobs {
			if !k.tableWide || d == "default" {
				names = append(names, "net.ipv6.neigh."+d+"."+k.name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// linkKnob resolves net.ipv6.{conf,neigh}.DEV.KNOB: the knob, and its
// link (nil for all and default; all is conf's alone).
func (r *Router) linkKnob(name string) (knobOf, *dataplane.Link, bool) {
	rest, ok := strings.CutPrefix(name, "net.ipv6.")
	if !ok {
		return nil, nil, false
	}
	kind, rest, _ := strings.Cut(rest, ".")
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return nil, nil, false
	}
	dev, knob := rest[:i], rest[i+1:]
	var l *dataplane.Link
	if dev != "all" && dev != "default" {
		if l = r.Links.ByName(dev); l == nil {
			return nil, nil, false
		}
	}
	switch kind {
	case "conf":
		if k := confKnobNamed(knob); k != nil {
			return confOf{k, dev == "all"}, l, true
		}
	case "neigh":
		if k := neighKnobNamed(knob); k != nil && dev != "all" && (!k.tableWide || dev == "default") {
			return neighOf{k}, l, true
		}
	}
	return nil, nil, false
}

// knobOf is one knob of net.ipv6.conf or .neigh, for a link or (nil) the
// default or all.
type knobOf interface {
	get(r *Router, l *dataplane.Link) string
	set(r *Router, l *dataplane.Link, v string) error
}

// linkSys returns the link's knobs, made from the defaults if new.
func (r *Router) linkSys(l *dataplane.Link) *linkSysctls {
	s := r.sys.links[l.Index]
	if s == nil {
		s = &linkSysctls{conf: r.sys.dflt, neigh: r.sys.neighDflt}
		r.sys.links[l.Index] = s
	}
	return s
}

// sysctlNewLink gives a new link the default knobs and what they do; its
// cache, if it has one, was made with its own.
func (r *Router) sysctlNewLink(l *dataplane.Link) {
	s := r.linkSys(l)
	for _, k := range confKnobs {
		if k.apply != nil {
			k.apply(r, l, s.conf)
		}
	}
}

// sysctlLinkGone forgets a link's knobs.
func (r *Router) sysctlLinkGone(l *dataplane.Link) { delete(r.sys.links, l.Index) }

// parseProcInt reads an integer as the kernel's proc_dointvec does:
// leading blanks, an optional minus, C's bases (0x hex, 0 octal); what
// follows a blank after it is ignored. It fits in an int32.
func parseProcInt(v string) (int64, bool) {
	v = strings.TrimLeft(v, " \t\n")
	neg := strings.HasPrefix(v, "-")
	if neg {
		v = v[1:]
	}
	end := strings.IndexAny(v, " \t\n")
	if end < 0 {
		end = len(v)
	}
	if end == 0 || v[0] == '+' || v[0] == '-' {
		return 0, false
	}
	u, err := strconv.ParseUint(v[:end], 0, 32)
	if err != nil || strings.Contains(v[:end], "_") {
		return 0, false
	}
	n := int64(u)
	if neg {
		n = -n
	}
	if n > math.MaxInt32 || n < math.MinInt32 {
		return 0, false
	}
	return n, true
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// parseBitmap reads a list of bits as the kernel's proc_do_large_bitmap
// does (`0-1,3-127`), each below 256; empty is none.
func parseBitmap(v string) ([4]uint64, bool) {
	var m [4]uint64
	v = strings.TrimSpace(v)
	if v == "" {
		return m, true
	}
	for _, part := range strings.Split(v, ",") {
		a, b, isRange := strings.Cut(part, "-")
		lo, err1 := strconv.ParseUint(a, 10, 8)
		hi := lo
		var err2 error
		if isRange {
			hi, err2 = strconv.ParseUint(b, 10, 8)
		}
		if err1 != nil || err2 != nil || hi < lo {
			return m, false
		}
		for i := lo; i <= hi; i++ {
			m[i/64] |= 1 << (i % 64)
		}
	}
	return m, true
}

// formatBitmap writes it back as the kernel does: ranges, ascending.
func formatBitmap(m [4]uint64) string {
	var parts []string
	for i := 0; i < 256; i++ {
		if m[i/64]&(1<<(i%64)) == 0 {
			continue
		}
		j := i
		for j+1 < 256 && m[(j+1)/64]&(1<<((j+1)%64)) != 0 {
			j++
		}
		if j > i {
			parts = append(parts, strconv.Itoa(i)+"-"+strconv.Itoa(j))
		} else {
			parts = append(parts, strconv.Itoa(i))
		}
		i = j
	}
	return strings.Join(parts, ",")
}
