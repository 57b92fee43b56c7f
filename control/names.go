package control

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"urouter/fib6"
)

// The names iproute2 knows for route protocols (/etc/iproute2/rt_protos
// as shipped with iproute2 6.x), route types, tables and preferences.

var protoNames = sync.OnceValue(func() map[fib6.Proto]string {
	return map[fib6.Proto]string{
		0: "unspec", 1: "redirect", 2: "kernel", 3: "boot", 4: "static",
		8: "gated", 9: "ra", 10: "mrt", 11: "zebra", 12: "bird", 13: "dnrouted",
		14: "xorp", 15: "ntk", 16: "dhcp", 18: "keepalived", 42: "babel",
		99: "openr", 186: "bgp", 187: "isis", 188: "ospf", 189: "rip", 192: "eigrp",
	}
})

var protoByName = sync.OnceValue(func() map[string]fib6.Proto { return invert(protoNames()) })

func protoString(p fib6.Proto) string {
	if s, ok := protoNames()[p]; ok {
		return s
	}
	return strconv.Itoa(int(p))
}

func parseProto(b []byte) (fib6.Proto, bool) {
	if p, ok := protoByName()[string(b)]; ok {
		return p, true
	}
	n, err := strconv.ParseUint(string(b), 0, 8)
	return fib6.Proto(n), err == nil
}

// parseType reads a route type word as iproute2's rtnl_rtntype_a2n does,
// abbreviations included ("u" is unreachable, "bl" blackhole). known says
// iproute2 knows the word; t is 0 for types this router does not have
// (broadcast, anycast, multicast, nat, xresolve).
func parseType(w []byte) (t fib6.Type, known bool) {
	switch {
	case is(w, "local"):
		return fib6.Local, true
	case is(w, "nat"), matches(w, "broadcast"), is(w, "brd"), matches(w, "anycast"), matches(w, "multicast"):
		return 0, true
	case matches(w, "prohibit"):
		return fib6.Prohibit, true
	case matches(w, "unreachable"):
		return fib6.Unreachable, true
	case matches(w, "blackhole"):
		return fib6.Blackhole, true
	case matches(w, "xresolve"):
		return 0, true
	case matches(w, "unicast"):
		return fib6.Unicast, true
	case is(w, "throw"):
		return fib6.Throw, true
	}
	return 0, false
}

var tableNames = map[uint32]string{fib6.TableDefault: "default", fib6.TableMain: "main", fib6.TableLocal: "local"}

func tableString(id uint32) string {
	if s, ok := tableNames[id]; ok {
		return s
	}
	return strconv.FormatUint(uint64(id), 10)
}

// tableAll is "table all" in show and flush.
const tableAll = ^uint32(0)

func parseTable(b []byte, allowAll bool) (uint32, bool) {
	switch string(b) {
	case "main":
		return fib6.TableMain, true
	case "local":
		return fib6.TableLocal, true
	case "default":
		return fib6.TableDefault, true
	case "all":
		return tableAll, allowAll
	}
	n, ok := parseUint32(b)
	return n, ok && n > 0
}

func invert[K comparable, V comparable](m map[K]V) map[V]K {
	out := make(map[V]K, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// dsfieldNames() are the names rtnl_dsfield_n2a prints: iproute2 6.1's
// rt_dsfield.
var dsfieldNames = sync.OnceValue(func() map[uint8]string {
	return func() map[uint8]string {
		m := map[uint8]string{0xb8: "EF"}
		for c := 1; c <= 4; c++ {
			for d := 1; d <= 3; d++ {
				m[uint8(c<<5|d<<3)] = "AF" + strconv.Itoa(c) + strconv.Itoa(d)
			}
		}
		for c := 1; c <= 7; c++ {
			m[uint8(c<<5)] = "CS" + strconv.Itoa(c)
		}
		return m
	}()
})

func dsfieldString(d uint8) string {
	if s, ok := dsfieldNames()[d]; ok {
		return s
	}
	b := []byte("0x")
	if d < 0x10 {
		b = append(b, '0')
	}
	return string(strconv.AppendUint(b, uint64(d), 16))
}

// ipprotoString is inet_proto_n2a: the protocol's name in /etc/protocols,
// else ipproto-N.
func ipprotoString(p uint8) string {
	if s, ok := protocolNames()[p]; ok {
		return s
	}
	return "ipproto-" + strconv.Itoa(int(p))
}

var protocolNames = sync.OnceValue(func() map[uint8]string {
	m := map[uint8]string{}
	data, err := os.ReadFile("/etc/protocols")
	if err != nil {
		for name, n := range ipProtos() {
			if name == strings.ToLower(name) {
				m[n] = name
			}
		}
		return m
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if n, err := strconv.ParseUint(f[1], 10, 8); err == nil {
			if _, seen := m[uint8(n)]; !seen {
				m[uint8(n)] = f[0]
			}
		}
	}
	return m
})

// parsePref reads `pref` as iproute2 does (low, medium, high or a number)
// and takes what the kernel makes medium: any number but high's 1 and
// low's 3.
func parsePref(v []byte) *cmdErr {
	switch {
	case is(v, "low"), is(v, "high"):
		return unsupported(v)
	case is(v, "medium"):
		return nil
	}
	n, err := strconv.ParseUint(str(v), 0, 8)
	if err != nil {
		return badValue("pref", v)
	}
	if n == 1 || n == 3 {
		return unsupported(v)
	}
	return nil
}
