package decide

import (
	"net/netip"
)

// Source address selection, as Linux's ipv6_dev_get_saddr does it (RFC
// 6724 section 5, the rules Linux applies to the router's own addresses):
// the router's source towards a destination, for `route get` and for the
// packets it makes.

// LinkAddrs is one link's addresses, in the order Linux keeps them: higher
// scope first, newest first within a scope.
type LinkAddrs struct {
	Link  int32
	Addrs []netip.Prefix
}

// Addresses gives source selection the router's addresses: every link
// that has some, in index order. The slice is a published snapshot.
type Addresses interface {
	AllAddrs() []LinkAddrs
	// L3 is the VRF link i is in (Linux's l3mdev master): the VRF's
	// index and table; 0, 0 for none. A VRF is in its own.
	L3(i int32) (master int32, table uint32)
}

// Address scopes, as Linux's __ipv6_addr_src_scope gives them.
const (
	scopeNode   = 0x1 // loopback
	scopeLink   = 0x2
	scopeSite   = 0x5
	scopeGlobal = 0xe
)

// Scope is a's scope as Linux's __ipv6_addr_src_scope gives it (loopback
// 1, link-local 2, site-local 5, global 14; ULAs are global).
func Scope(a netip.Addr) int {
	switch {
	case a.IsLoopback():
		return scopeNode
	case a.IsLinkLocalUnicast():
		return scopeLink
	case a.IsMulticast():
		return int(a.As16()[1] & 0xf)
	case a.As16()[0] == 0xfe && a.As16()[1]&0xc0 == 0xc0: // fec0::/10, deprecated site-local
		return scopeSite
	}
	return scopeGlobal // ULAs included, as in Linux
}

// labels is Linux's default address label table (net/ipv6/addrlabel.c),
// longest prefix first.
var labels = []struct {
	p     netip.Prefix
	label int
}{
	{netip.MustParsePrefix("::1/128"), 0},
	{netip.MustParsePrefix("::ffff:0:0/96"), 4},
	{netip.MustParsePrefix("::/96"), 3},
	{netip.MustParsePrefix("2001::/32"), 6},
	{netip.MustParsePrefix("2001:10::/28"), 7},
	{netip.MustParsePrefix("2002::/16"), 2},
	{netip.MustParsePrefix("3ffe::/16"), 12},
	{netip.MustParsePrefix("fec0::/10"), 11},
	{netip.MustParsePrefix("fc00::/7"), 5},
	{netip.MustParsePrefix("::/0"), 1},
}

func labelOf(a netip.Addr) int {
	for _, l := range labels {
		if l.p.Contains(a) {
			return l.label
		}
	}
	return 1
}

// score is a candidate address's standing by each rule in turn; higher
// is better, the first rule that differs decides.
type score [5]int

func scoreOf(a netip.Addr, prefixLen int, link int32, dst netip.Addr, dscope, dlabel int, dev int32) score {
	s := Scope(a)
	if s >= dscope {
		s = -s
	} else {
		s -= 128
	}
	return score{
		b2i(a == dst),                      // 1: the same address
		s,                                  // 2: the smallest scope that reaches dst
		b2i(dev == 0 || link == dev),       // 5: the outgoing link
		b2i(labelOf(a) == dlabel),          // 6: the same label
		min(commonBits(a, dst), prefixLen), // 8: the longest common prefix
	}
}

func (s *score) beats(o *score) bool {
	for i := range s {
		if s[i] != o[i] {
			return s[i] > o[i]
		}
	}
	return false
}

// SourceFor returns the router's source address towards dst leaving by
// link dev (0: unknown), and false when it has none. Candidates are every
// address of the router, or only dev's for a link-local, loopback or
// multicast destination; the best by Linux's rules in order: the same
// address (1), the smallest scope that reaches dst (2), the outgoing link
// (5), the same label (6), the longest common prefix within the address's
// own prefix length (8); on a tie, the first in Linux's order. Only
// addresses of dev's L3 domain are candidates, and in a VRF those of dev
// and of the VRF itself are tried first, taken if one's scope reaches
// dst (ipv6_get_saddr_master).
func (d *Decider) SourceFor(dst netip.Addr, dev int32) (netip.Addr, bool) {
	dscope := Scope(dst)
	oifOnly := dev != 0 && (dst.IsMulticast() || dscope <= scopeLink)
	domain, _ := d.Addrs.L3(dev)
	if !oifOnly && domain != 0 {
		// in a VRF, dev's own addresses and its master's first
		// (ipv6_get_saddr_master), if one's scope reaches dst
		if a, ok := d.sourceAmong(dst, dev, func(link int32) bool { return link == dev || link == domain }); ok && Scope(a) >= dscope {
			return a, true
		}
	}
	return d.sourceAmong(dst, dev, func(link int32) bool {
		if oifOnly {
			return link == dev
		}
		m, _ := d.Addrs.L3(link)
		return m == domain // only dev's L3 domain's (__ipv6_dev_get_saddr)
	})
}

// sourceAmong is SourceFor's choice among the addresses of the links
// candidate takes.
func (d *Decider) sourceAmong(dst netip.Addr, dev int32, candidate func(link int32) bool) (netip.Addr, bool) {
	dscope := Scope(dst)
	dlabel := labelOf(dst)
	var best netip.Addr
	var bestScore score
	for _, la := range d.Addrs.AllAddrs() {
		if !candidate(la.Link) {
			continue
		}
		for _, p := range la.Addrs {
			a := p.Addr()
			if a.IsUnspecified() || a.IsMulticast() {
				continue
			}
			if sc := scoreOf(a, p.Bits(), la.Link, dst, dscope, dlabel, dev); !best.IsValid() || sc.beats(&bestScore) {
				best, bestScore = a, sc
			}
		}
	}
	return best, best.IsValid()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// commonBits is the length of the longest common prefix of a and b.
func commonBits(a, b netip.Addr) int {
	x, y := a.As16(), b.As16()
	for i := range x {
		if d := x[i] ^ y[i]; d != 0 {
			n := i * 8
			for d&0x80 == 0 {
				n++
				d <<= 1
			}
			return n
		}
	}
	return 128
}

// RouteSource is the source `route get` prints for a decision towards
// dst, as Linux's ip6_route_get_saddr: the route's preferred source if it
// has one, else the selection for the route's link.
func (d *Decider) RouteSource(r *Result, dst netip.Addr) (netip.Addr, bool) {
	if r.Route == nil {
		return netip.Addr{}, false
	}
	if src := r.Leg().PrefSrc; src.IsValid() {
		return src, true
	}
	return d.SourceFor(dst, r.Path.Link)
}

// IsLocal reports whether a is one of the router's own addresses in the
// L3 domain of link dev (0: the default domain), as Linux's
// __ipv6_chk_addr_and_flags counts only the addresses of devices with
// dev's l3mdev master.
func (d *Decider) IsLocal(a netip.Addr, dev int32) bool {
	domain, _ := d.Addrs.L3(dev)
	for _, la := range d.Addrs.AllAddrs() {
		if m, _ := d.Addrs.L3(la.Link); m != domain {
			continue
		}
		for _, p := range la.Addrs {
			if p.Addr() == a {
				return true
			}
		}
	}
	return false
}
