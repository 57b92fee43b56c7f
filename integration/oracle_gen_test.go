package integration

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// oracleGen draws rules, routes and flows from a few values each, so
// that they meet often: several routes for one prefix (of other metrics,
// or appended at the same one) on either link, reject routes among them,
// source-specific ones, gateways on the other link's subnet, multipath
// routes, link-local, multicast and host prefixes, and flows that mostly
// ask for an output link (lo too), with and without a source, as a packet
// of the router's own or coming in by a link (lo too).
type oracleGen struct{ rnd *rand.Rand }

func (g oracleGen) pick(xs ...string) string { return xs[g.rnd.IntN(len(xs))] }

func (g oracleGen) routes(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		if g.rnd.IntN(12) == 0 {
			out = append(out, g.multipath())
			continue
		}
		dst := g.pick("2001:db8::/32", "default", fmt.Sprintf("2001:db8:%d::/48", g.rnd.IntN(8)),
			fmt.Sprintf("2001:db8:%d:%d::/64", g.rnd.IntN(8), g.rnd.IntN(3)))
		if g.rnd.IntN(15) == 0 {
			dst = g.pick("fe80::/64", "ff00::/8", fmt.Sprintf("2001:db8:%d:%d::%d/128", g.rnd.IntN(8), g.rnd.IntN(3), 1+g.rnd.IntN(9)))
		}
		if g.rnd.IntN(10) == 0 { // source-specific (Linux's subtrees)
			dst += " from " + g.pick("2001:db8:a::/48", "2001:db8:a::/64", "2001:db8:91::/64")
		}
		typ := g.pick("", "", "", "throw ", "unreachable ", "prohibit ", "blackhole ")
		how := ""
		if typ == "" {
			how = g.pick(" via 2001:db8:91::2 dev d0", " via 2001:db8:92::2 dev d1", " dev d0", " dev d1",
				" via 2001:db8:92::7 dev d0 onlink", " via 2001:db8:91::7 dev d1 onlink")
		}
		// an append without a gateway puts a second route beside one of
		// the same metric (with gateways it would make a multipath route,
		// whose member the flow hash picks, each router with its own seed)
		verb := "add "
		if !strings.Contains(how, "via") && g.rnd.IntN(3) == 0 {
			verb = "append "
		}
		metric := g.pick("", "", "", " metric 10", " metric 2048")
		out = append(out, "route "+verb+typ+dst+how+metric+" table "+g.pick("10", "20", "30", "main"))
	}
	return out
}

// multipath is a route of two paths, one on each link, under
// 2001:db8:e::/48, where only flows with an oif and no source go: a
// strict lookup takes the path on its link, whatever the hash.
func (g oracleGen) multipath() string {
	paths := []string{" nexthop via 2001:db8:91::2 dev d0", " nexthop via 2001:db8:92::2 dev d1"}
	if g.rnd.IntN(2) == 0 {
		paths[0], paths[1] = paths[1], paths[0]
	}
	w := g.pick("", "", " weight 3")
	dst := g.pick("2001:db8:e::/48", fmt.Sprintf("2001:db8:e:%d::/64", g.rnd.IntN(3)))
	return "route add " + dst + g.pick("", " metric 10", " metric 2048") + " table " + g.pick("10", "20", "30", "main") +
		paths[0] + w + paths[1]
}

func (g oracleGen) rules(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		w := []string{"rule add"}
		pref := 1 + g.rnd.IntN(150)
		if g.rnd.IntN(6) > 0 {
			w = append(w, fmt.Sprintf("pref %d", pref))
		}
		maybe := func(k int, s string) {
			if g.rnd.IntN(k) == 0 {
				w = append(w, s)
			}
		}
		maybe(8, "not")
		maybe(3, "from "+g.pick("2001:db8:a::/48", "2001:db8:b::/48", "2001:db8::/32", "2001:db8:91::/64"))
		maybe(4, "to "+g.pick("2001:db8:1::/48", "2001:db8:2::/48", "2001:db8::/33", "2001:db8:3:1::/64", "2001:db8:e::/48"))
		maybe(4, "iif "+g.pick("d0", "d1", "lo", "nosuch"))
		maybe(5, "oif "+g.pick("d0", "d1", "d1", "lo"))
		if g.rnd.IntN(4) == 0 {
			w = append(w, "ipproto "+g.pick("udp", "tcp"))
			maybe(2, "sport "+g.pick("1000-2000", "53", "80"))
			maybe(2, "dport "+g.pick("1000-2000", "53", "80", "3000-4000"))
		}
		maybe(8, "tos "+g.pick("0x10", "0x20"))
		switch g.rnd.IntN(10) {
		case 0:
			w = append(w, fmt.Sprintf("goto %d", pref+1+g.rnd.IntN(30)))
		case 1:
			w = append(w, "nop")
		case 2: // a reject rule selects, or it decides every flow after it
			if len(w) < 3 {
				w = append(w, "to "+g.pick("2001:db8:1::/48", "2001:db8:2::/48", "2001:db8:3:1::/64"))
			}
			w = append(w, g.pick("unreachable", "prohibit", "blackhole"))
		default:
			if len(w) < 3 && g.rnd.IntN(2) == 0 {
				w = append(w, "from "+g.pick("2001:db8:a::/48", "2001:db8:b::/48"))
			}
			w = append(w, "lookup "+g.pick("10", "20", "30", "main", "local", "40"))
			maybe(4, "suppress_prefixlength "+g.pick("0", "32", "48", "63"))
		}
		out = append(out, strings.Join(w, " "))
	}
	return out
}

// flows are route gets, most of them with an oif: strict lookups (no
// source, or a link-local, multicast or loopback destination), loose
// ones (a source), and input lookups (an iif, lo included).
func (g oracleGen) flows(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		if g.rnd.IntN(10) == 0 { // the multipath routes, strictly
			out = append(out, fmt.Sprintf("route get 2001:db8:e:%d::%d oif %s", g.rnd.IntN(4), 1+g.rnd.IntN(9), g.pick("d0", "d1")))
			continue
		}
		dst := fmt.Sprintf("2001:db8:%d:%d::%d", g.rnd.IntN(8), g.rnd.IntN(3), 1+g.rnd.IntN(9))
		if g.rnd.IntN(6) == 0 {
			dst = g.pick("2001:db8:91::1", "2001:db8:92::1", "2001:db8:91::5", "2001:db8:92::5",
				"fe80::5", "fe80::1", "ff02::1", "ff05::2", "::1", "2001:db8:ffff::1")
		}
		w := []string{"route get " + dst}
		if g.rnd.IntN(3) == 0 {
			w = append(w, "from "+g.pick("2001:db8:a::1", "2001:db8:b::7", "2001:db8:91::1", "2001:db8:c::1", "2001:db8:92::1"))
		}
		switch g.rnd.IntN(10) {
		case 0:
			w = append(w, "iif "+g.pick("d0", "d1"))
		case 1:
			w = append(w, "iif lo")
			if g.rnd.IntN(2) == 0 {
				w = append(w, "oif "+g.pick("d0", "d1"))
			}
		case 2, 3, 4, 5, 6, 7, 8:
			w = append(w, "oif "+g.pick("d0", "d1", "d0", "d1", "lo"))
		}
		if g.rnd.IntN(3) == 0 {
			w = append(w, "ipproto "+g.pick("udp", "tcp"), "sport "+g.pick("1500", "53", "80", "9"), "dport "+g.pick("1500", "53", "80", "3500"))
		}
		if g.rnd.IntN(5) == 0 {
			w = append(w, "tos "+g.pick("0x10", "0x20", "0x21"))
		}
		out = append(out, strings.Join(w, " "))
	}
	return out
}
