package integration

// sites are the functions of iproute2 whose keywords are probed, each
// with the command line that reaches it. The values are ones both routers
// take where urouter has the keyword; a value that does not fit the
// keyword a prefix picks is fine, as ip and urouter must refuse it alike.
// Destinations, ids and names are {n}, the probe's own, so that no line
// meets another's state.
var sites = []site{
	{fn: "ip/ip.c:cmds[]", line: "{p} zzz", flag: true},
	// ip's options -brief and -oneline, each prefix as ip's main picks it,
	// on a show both routers print alike (link and address: the kernel's
	// links are others here; TestKernelOracleBrief compares those)
	{fn: "ip/ip.c:main", line: "{p} route show table 250", flag: true, alone: true, only: set("-brief", "-oneline")},

	// route
	{fn: "ip/iproute.c:do_iproute", line: "route {p} zzz", flag: true, skip: set("restore", "showdump"), unsupported: routeCmds, differs: dumps},
	{fn: "ip/iproute.c:do_iproute", line: "route {p}", flag: true, alone: true, only: set("restore", "showdump"), unsupported: routeCmds, differs: dumps},
	{fn: "ip/iproute.c:iproute_modify", line: "route add 2001:db8:{n}::/64 dev d0 {p}", fallback: "ip/rtm_map.c:rtnl_rtntype_a2n",
		value: map[string]string{"src": "2001:db8:91::1", "via": "2001:db8:91::2", "from": "2001:db8:aa::/48",
			"to": "2001:db8:{n}::/64", "as": "2001:db8::1", "scope": "global", "tos": "0", "dsfield": "0",
			"expires": "100", "metric": "7", "priority": "7", "preference": "7", "mtu": "1400",
			"features": "ecn", "ecn": "-", "congctl": "cubic", "onlink": "-", "nexthop": "via 2001:db8:91::2",
			"protocol": "static", "table": "100", "vrf": "blue", "dev": "d0", "oif": "d0", "pref": "medium",
			"encap": "mpls 100", "ttl-propagate": "enabled", "help": "-", "nhid": "1", "lock": "-"},
		at: map[string]string{"lock": "route add 2001:db8:{n}::/64 dev d0 mtu {p} 1400",
			"low": "route add 2001:db8:{n}::/64 dev d0 pref {p}", "medium": "route add 2001:db8:{n}::/64 dev d0 pref {p}",
			"high": "route add 2001:db8:{n}::/64 dev d0 pref {p}"},
		skip: set("enabled", "disabled"), // ttl-propagate's values: lightweight tunnels
		unsupported: map[string]string{
			"as": "MPLS and IPv4 NAT", "hoplimit": "route metrics", "advmss": "route metrics", "reordering": "route metrics",
			"rtt": "route metrics", "rto_min": "route metrics", "window": "route metrics", "cwnd": "route metrics",
			"initcwnd": "route metrics", "initrwnd": "route metrics", "features": "route metrics", "quickack": "route metrics",
			"congctl": "route metrics", "rttvar": "route metrics", "ssthresh": "route metrics", "fastopen_no_cookie": "route metrics",
			"realms": "IPv4 realms", "ttl-propagate": "lightweight tunnels", "low": "route preferences", "high": "route preferences",
			"anycast": "IPv4 types"}},
	{fn: "ip/rtm_map.c:rtnl_rtntype_a2n", line: "route add {p} 2001:db8:{n}::/64 dev d0", flag: true,
		unsupported: map[string]string{"nat": "IPv4 types", "broadcast": "IPv4 types", "brd": "IPv4 types",
			"anycast": "IPv4 types", "multicast": "IPv4 types", "xresolve": "IPv4 types"}},
	{fn: "ip/iproute.c:parse_one_nh", line: "route add 2001:db8:{n}::/64 nexthop via 2001:db8:91::2 dev d0 {p}",
		value: map[string]string{"via": "2001:db8:91::2", "dev": "d0", "weight": "2", "onlink": "-", "realms": "5",
			"encap": "mpls 100", "as": "2001:db8::1", "to": "-"},
		skip:        set("to"), // the value of as (MPLS)
		unsupported: map[string]string{"realms": "IPv4 realms", "as": "MPLS"}},
	{fn: "ip/iproute.c:parse_nexthops", line: "route add 2001:db8:{n}::/64 nexthop via 2001:db8:91::2 dev d0 {p} via 2001:db8:91::3 dev d0", flag: true},
	{fn: "ip/iproute.c:iproute_list_flush_or_save", line: "route show {p} proto 177",
		value: map[string]string{"table": "100", "vrf": "blue", "cached": "-", "cloned": "-", "tos": "0", "dsfield": "0",
			"protocol": "static", "scope": "global", "type": "unicast", "dev": "d0", "oif": "d0", "iif": "d0", "mark": "1",
			"metric": "5", "priority": "5", "preference": "5", "via": "2001:db8:91::2", "src": "2001:db8:91::1", "realms": "5",
			"from": "2001:db8::/32", "root": "2001:db8::/32", "match": "2001:db8::/32", "exact": "2001:db8::/32", "to": "2001:db8::/32"},
		at: map[string]string{"all": "route show table {p} proto 177", "cache": "route show table {p} proto 177",
			"help": "route show table {p}"},
		unsupported: map[string]string{"realms": "IPv4 realms", "iif": "routes by input interface",
			"mark": "routes by mark"}},
	{fn: "ip/iproute.c:iproute_get", line: "route get 2001:db8:91::5 {p}",
		value: map[string]string{"tos": "0", "dsfield": "0", "from": "2001:db8:91::1", "iif": "d0", "mark": "1", "oif": "d0",
			"dev": "d0", "notify": "-", "connected": "-", "vrf": "blue", "uid": "0", "fibmatch": "-", "as": "2001:db8::1",
			"to": "2001:db8:91::6", "sport": "80", "dport": "80", "ipproto": "udp", "help": "-"},
		unsupported: map[string]string{"as": "MPLS"}},

	// rule
	{fn: "ip/iprule.c:do_iprule", line: "rule {p} zzz", flag: true, skip: set("restore")},
	{fn: "ip/iprule.c:do_iprule", line: "rule {p}", flag: true, alone: true, only: set("restore"),
		differs: map[string]string{"restore": dumps["restore"]}},
	{fn: "ip/iprule.c:iprule_modify", line: "rule add pref {n} {p}",
		value: map[string]string{"not": "-", "from": "2001:db8:a::/48", "to": "2001:db8:1::/48", "preference": "{n}0",
			"order": "{n}0", "priority": "{n}0", "tos": "0x10", "dsfield": "0x10", "fwmark": "1", "realms": "5",
			"protocol": "static", "tun_id": "5", "table": "100", "lookup": "100", "suppress_prefixlength": "0",
			"sup_pl": "0", "suppress_ifgroup": "5", "sup_group": "5", "dev": "d0", "iif": "d0", "oif": "d0",
			"l3mdev": "-", "uidrange": "1-2", "nat": "2001:db8::1", "map-to": "2001:db8::1", "ipproto": "tcp",
			"sport": "80", "dport": "80", "type": "unreachable", "help": "-", "goto": "1{n}", "nop": "-"},
		unsupported: map[string]string{"fwmark": "marks", "realms": "IPv4 realms", "tun_id": "tunnels",
			"suppress_ifgroup": "interface groups", "sup_group": "interface groups",
			"uidrange": "rules by user", "nat": "IPv4 NAT", "map-to": "IPv4 NAT"}},
	{fn: "ip/iprule.c:iprule_list_flush_or_save", line: "rule show {p} pref 7777",
		value: map[string]string{"preference": "7777", "order": "7777", "priority": "7777", "not": "-", "tos": "0x10",
			"dsfield": "0x10", "fwmark": "1", "dev": "d0", "iif": "d0", "oif": "d0", "l3mdev": "-", "uidrange": "1-2",
			"tun_id": "5", "lookup": "100", "table": "100", "from": "2001:db8::/32", "src": "2001:db8::/32",
			"protocol": "static", "ipproto": "tcp", "sport": "80", "dport": "80", "dst": "2001:db8::/32", "to": "2001:db8::/32"},
		at:          map[string]string{"all": "rule show protocol {p} pref 7777"},
		unsupported: map[string]string{"fwmark": "marks", "tun_id": "tunnels", "uidrange": "rules by user"}},

	// nexthop
	{fn: "ip/ipnexthop.c:do_ipnh", line: "nexthop {p} zzz", flag: true},
	{fn: "ip/ipnexthop.c:ipnh_modify", line: "nexthop add id {n} dev d0 {p}",
		value: map[string]string{"id": "{n}", "dev": "d0", "via": "2001:db8:91::2", "encap": "mpls 100", "blackhole": "-",
			"fdb": "-", "onlink": "-", "group": "1", "type": "mpath", "protocol": "static", "help": "-"},
		unsupported: map[string]string{"fdb": "bridge FDB nexthops"}},
	{fn: "ip/ipnexthop.c:parse_nh_group_type_res", line: "nexthop add id {n} group 1 type resilient {p}",
		value: map[string]string{"buckets": "8", "idle_timer": "10", "unbalanced_timer": "10"}},
	{fn: "ip/ipnexthop.c:read_nh_group_type", line: "nexthop add id {n} group 1 type {p}", flag: true},
	{fn: "ip/ipnexthop.c:ipnh_list_flush", line: "nexthop show {p} proto 177",
		value: map[string]string{"dev": "d0", "groups": "-", "master": "d0", "vrf": "blue", "id": "1", "protocol": "static",
			"fdb": "-", "help": "-"}},
	{fn: "ip/ipnexthop.c:ipnh_get", line: "nexthop get {p}", value: map[string]string{"id": "1"}},
	{fn: "ip/ipnexthop.c:do_ipnh_bucket", line: "nexthop bucket {p} zzz", flag: true},
	{fn: "ip/ipnexthop.c:ipnh_bucket_list", line: "nexthop bucket show {p}",
		value: map[string]string{"dev": "d0", "master": "d0", "vrf": "blue", "id": "1", "nhid": "1", "help": "-"}},
	{fn: "ip/ipnexthop.c:ipnh_bucket_get", line: "nexthop bucket get {p}", value: map[string]string{"id": "1", "index": "0"}},

	// neigh
	{fn: "ip/ipneigh.c:do_ipneigh", line: "neigh {p} zzz", flag: true, unsupported: map[string]string{"get": "neigh get"}},
	{fn: "ip/ipneigh.c:ipneigh_modify", line: "neigh add 2001:db8:91::{n} dev d0 {p}",
		value: map[string]string{"lladdr": "02:00:00:00:00:01", "nud": "permanent", "proxy": "2001:db8:91::{n}0",
			"help": "-", "router": "-", "use": "-", "managed": "-", "extern_learn": "-", "dev": "d0", "protocol": "static",
			"to": "2001:db8:91::{n}"},
		at: map[string]string{"null": "neigh add 2001:db8:91::{n} dev d0 lladdr {p}"},
		unsupported: map[string]string{"proxy": "proxy neighbours", "use": "neighbour flags", "managed": "neighbour flags",
			"extern_learn": "neighbour flags", "protocol": "neighbours' protocols"}},
	{fn: "ip/ipneigh.c:nud_state_a2n", line: "neigh add 2001:db8:91::{n} dev d0 lladdr 02:00:00:00:00:01 nud {p}", flag: true},
	{fn: "ip/ipneigh.c:do_show_or_flush", line: "neigh show {p} to 2001:db8:99::/64",
		value: map[string]string{"dev": "d0", "master": "d0", "vrf": "blue", "nomaster": "-", "unused": "-", "nud": "permanent",
			"proxy": "-", "protocol": "static", "to": "2001:db8:99::/64", "help": "-", "all": "-"},
		at: map[string]string{"all": "neigh show nud {p} to 2001:db8:99::/64"}},
	{fn: "ip/ipneigh.c:ipneigh_get", line: "neigh get 2001:db8:91::9 {p}",
		value: map[string]string{"dev": "d0", "proxy": "-", "help": "-", "to": "2001:db8:91::9"}, lacks: "neigh get"},

	// ntable
	{fn: "ip/ipntable.c:do_ipntable", line: "ntable {p} zzz", flag: true},
	{fn: "ip/ipntable.c:ipntable_modify", line: "ntable change name ndisc_cache dev d0 {p}",
		value: map[string]string{"name": "ndisc_cache", "dev": "d0", "thresh1": "128", "thresh2": "512", "thresh3": "1024",
			"gc_int": "30000", "base_reachable": "30000", "retrans": "1000", "gc_stale": "60000", "delay_probe": "5000",
			"queue": "101", "app_probes": "0", "ucast_probes": "3", "mcast_probes": "3", "anycast_delay": "1000",
			"proxy_delay": "800", "proxy_queue": "64", "locktime": "0"},
		unsupported: map[string]string{"app_probes": "neighbour proxies and app probes", "anycast_delay": "neighbour proxies and app probes",
			"proxy_delay": "neighbour proxies and app probes", "proxy_queue": "neighbour proxies and app probes",
			"locktime": "neighbour proxies and app probes"},
		differs: map[string]string{"thresh1": "Linux sets thresholds in the initial netns only, and the oracle's is another",
			"thresh2": "Linux sets thresholds in the initial netns only, and the oracle's is another",
			"thresh3": "Linux sets thresholds in the initial netns only, and the oracle's is another",
			"gc_int":  "Linux sets thresholds in the initial netns only, and the oracle's is another"}},
	{fn: "ip/ipntable.c:ipntable_show", line: "ntable show {p} name zzz",
		value: map[string]string{"dev": "d0", "name": "zzz"}, at: map[string]string{"none": "ntable show dev {p} name zzz"}},

	// link
	{fn: "ip/iplink.c:do_iplink", line: "link {p} zzz", flag: true,
		unsupported: map[string]string{"xstats": "link statistics", "afstats": "link statistics", "property": "alternative names",
			"replace": "link replace"}},
	{fn: "ip/iplink.c:iplink_parse", line: "link set dev d2 {p}",
		value: map[string]string{"up": "-", "down": "-", "name": "d2", "index": "5", "link": "d0", "address": "02:00:00:00:00:02",
			"broadcast": "ff:ff:ff:ff:ff:ff", "brd": "ff:ff:ff:ff:ff:ff", "txqueuelen": "1000", "qlen": "1000", "txqlen": "1000",
			"mtu": "1500", "xdpgeneric": "off", "xdpdrv": "off", "xdpoffload": "off", "xdp": "off", "netns": "uro-kw-none",
			"multicast": "on", "allmulticast": "on", "promisc": "on", "trailers": "off", "arp": "on", "carrier": "on",
			"vf": "0", "master": "d0", "vrf": "blue", "nomaster": "-", "dynamic": "on", "type": "dummy", "alias": "foo",
			"group": "default", "mode": "default", "state": "up", "numtxqueues": "2", "numrxqueues": "2", "addrgenmode": "eui64",
			"link-netns": "uro-kw-none", "link-netnsid": "5", "protodown": "off", "protodown_reason": "0 on",
			"gso_max_size": "65536", "gso_max_segs": "65535", "gro_max_size": "65536", "parentdev": "zzz", "help": "-", "dev": "d2"},
		at:          map[string]string{"on": "link set dev d2 multicast {p}", "off": "link set dev d2 multicast {p}"},
		unsupported: linkUnsupported,
		differs:     map[string]string{"type": "this kernel lacks dummy links: the netns's d2 is a veth, urouter's a dummy"}},

	// address
	{fn: "ip/ipaddress.c:do_ipaddr", line: "address {p} zzz", flag: true, skip: set("restore", "showdump"), unsupported: addrCmds},
	{fn: "ip/ipaddress.c:do_ipaddr", line: "address {p}", flag: true, alone: true, only: set("restore", "showdump"), unsupported: addrCmds},
	{fn: "ip/ipaddress.c:ipaddr_modify", line: "address add 2001:db8:{n}::1/64 dev d1 {p}",
		value: map[string]string{"peer": "2001:db8:{n}::2", "remote": "2001:db8:{n}::2", "broadcast": "2001:db8::ff",
			"brd": "2001:db8::ff", "+": "-", "-": "-", "anycast": "2001:db8::1", "scope": "global", "dev": "d1", "label": "d1",
			"metric": "5", "priority": "5", "preference": "5", "valid_lft": "forever", "preferred_lft": "forever",
			"local": "2001:db8:{n}::3/64", "help": "-"},
		at: map[string]string{"+": "address add 2001:db8:{n}::1/64 dev d1 broadcast {p}", "-": "address add 2001:db8:{n}::1/64 dev d1 broadcast {p}",
			"forever": "address add 2001:db8:{n}::1/64 dev d1 valid_lft {p}"},
		unsupported: map[string]string{"peer": "point-to-point addresses", "remote": "point-to-point addresses",
			"broadcast": "IPv4 broadcast", "brd": "IPv4 broadcast", "anycast": "anycast addresses",
			"+": "IPv4 broadcast", "-": "IPv4 broadcast"}},
	{fn: "ip/ipaddress.c:ipaddr_list_flush_or_save", line: "address show {p} label zzz",
		value: map[string]string{"to": "2001:db8::/32", "scope": "global", "up": "-", "label": "zzz", "group": "default",
			"master": "d0", "vrf": "blue", "nomaster": "-", "type": "dummy", "dev": "d0", "help": "-"},
		at:   map[string]string{"all": "address show scope {p} label zzz", "_slave": "address show type dummy{p} label zzz"},
		skip: set("_slave")},

	// monitor: each alone, as a monitor that starts would wait for events
	{fn: "ip/ipmonitor.c:do_ipmonitor", line: "monitor {p} zzz", alone: true,
		value: map[string]string{"file": "/nonexistent", "label": "-", "link": "-", "address": "-", "route": "-", "mroute": "-",
			"prefix": "-", "neigh": "-", "netconf": "-", "rule": "-", "nsid": "-", "nexthop": "-", "stats": "-", "all": "-",
			"all-nsid": "-", "help": "-", "dev": "d0"}},
}

// dumps are the commands that save and restore: urouter's dump is the
// commands that rebuild the table, as text, not iproute2's binary
// netlink dump (so `save` prints text, `restore` reads it).
var dumps = map[string]string{"save": "a text dump", "restore": "a text dump"}

// addrCmds are the address commands urouter lacks.
var addrCmds = map[string]string{"save": "address dumps", "showdump": "address dumps", "restore": "address dumps"}

// routeCmds are the route commands urouter lacks.
var routeCmds = map[string]string{"test": "route test (a kernel probe of NLM_F_EXCL without NLM_F_CREATE)",
	"showdump": "route showdump (printing a saved dump)"}

// linkUnsupported are ip link set's attributes urouter's links (TUN,
// TAP, host, dummy) do not have.
var linkUnsupported = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"link", "broadcast", "brd", "txqueuelen", "qlen", "txqlen", "xdpgeneric", "xdpdrv",
		"xdpoffload", "xdp", "netns", "multicast", "allmulticast", "promisc", "trailers", "arp", "carrier", "vf",
		"dynamic", "alias", "group", "mode", "state", "numtxqueues", "numrxqueues", "addrgenmode",
		"link-netns", "link-netnsid", "protodown", "protodown_reason", "gso_max_size", "gso_max_segs", "gro_max_size",
		"parentdev", "on", "off", "address"} {
		m[k] = "a link attribute urouter's links lack"
	}
	return m
}()

func set(ks ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range ks {
		m[k] = true
	}
	return m
}
