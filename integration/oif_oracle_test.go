package integration

// oifOracle are the commands TestKernelOracleRules asks a second pair
// (with linkLocal's routes), in order: lookups with an output link, as
// Linux chooses among a prefix's routes for them (strict without a
// source, preferring with one), input ones by their link (lo too), and
// the checks of route add that depend on the same lookups.
var oifOracle = []string{
	// a strict lookup that a longer prefix gives nothing backtracks into
	// a prefix with source routes, and sees its plain routes
	"route add 2001:db8::/32 via 2001:db8:91::2 dev d0 metric 2048 table 30",
	"route add throw 2001:db8:4::/48 table 30",
	"route add unreachable 2001:db8::/32 from 2001:db8:91::/64 table 30",
	"route add default dev d0 metric 10 table 30",
	"rule add pref 91 to 2001:db8:4::/47 lookup 30",
	"route get 2001:db8:4:2::2 oif d0", "route get 2001:db8:4:2::2 oif d1", "route get 2001:db8:5::1 oif d0",
	"route get 2001:db8:4:2::2 from 2001:db8:91::5 oif d0", "route get 2001:db8:4:2::2 from 2001:db8:91::5 oif d1",
	"route get 2001:db8:4:2::2 iif lo", "route get 2001:db8:4:2::2 iif d0", "route get 2001:db8:4:2::2 oif lo",
	// routes of one metric: a reject one (on lo) first
	"route add prohibit 2001:db8:1::/48 metric 10", "route append 2001:db8:1::/48 dev d1 metric 10",
	"route add 2001:db8:1::/48 dev d0 metric 20",
	"route get 2001:db8:1::1", "route get 2001:db8:1::1 oif d1", "route get 2001:db8:1::1 oif d0",
	"route get 2001:db8:1::1 oif lo", "route get 2001:db8:1::1 from 2001:db8:a::1 oif d0",
	"route get 2001:db8:1::1 from 2001:db8:a::1 oif d1", "route get 2001:db8:1::1 iif d1", "route get 2001:db8:1::1 iif d0",
	"route get 2001:db8:1::1 iif lo", "route get 2001:db8:1::1 iif lo oif d1", "-j route get 2001:db8:1::1 oif d1",
	"route get fibmatch 2001:db8:1::1 oif d1", "route get fibmatch 2001:db8:1::1 oif d0",
	// link-local, loopback and multicast destinations: strict, also with a
	// source or an iif
	"route get fe80::5", "route get fe80::5 oif d1", "route get fe80::5 iif d1", "route get fe80::5 from 2001:db8:a::1 oif d1",
	"route get fe80::5 iif lo", "route get fe80::5 oif lo", "route get ::1 from 2001:db8:a::1", "route get ::1 from 2001:db8:a::1 oif d0",
	"route get ::1 oif lo", "route get ::1 iif d0", "route add ff00::/8 dev d1 table 5", "rule add pref 5 to ff00::/8 lookup 5",
	"route get ff02::1 iif d1", "route get ff02::1 oif d1", "route get ff02::1 oif d0", "route get ff02::1 iif d0",
	"route get fibmatch ff02::1 iif d1",
	// a multipath route: the path out of the link asked for
	"route add 2001:db8:e::/48 nexthop via 2001:db8:91::2 dev d0 nexthop via 2001:db8:92::2 dev d1",
	"route get 2001:db8:e::1 oif d1", "route get 2001:db8:e::1 oif d0", "route get 2001:db8:e::1 oif lo",
	// route add: an onlink gateway reached through main by a route out of
	// another link, and appends that Linux finds duplicates
	"route add 2001:db8:50::/48 via 2001:db8:92::7 dev d0 onlink", "route add 2001:db8:50::/48 via 2001:db8:93::7 dev d0 onlink",
	"route add 2001:db8:93::/64 dev d1", "route add 2001:db8:51::/48 via 2001:db8:93::7 dev d0 onlink",
	"route add 2001:db8:51::/48 via 2001:db8:91::1 dev d0 onlink", "route add unreachable 2001:db8:52::/48",
	"route append prohibit 2001:db8:52::/48", "route append 2001:db8:52::/48 dev d0", "route append 2001:db8:52::/48 dev d0",
	"route add 2001:db8:53::/48 via 2001:db8:93::7 dev d1", "route add 2001:db8:54::/48 via 2001:db8:93::7 dev d0",
	"route show 2001:db8:50::/48", "route show 2001:db8:52::/48", "route show 2001:db8:53::/48",
}
