// Package feed owns the routes other programs give urouter: rtnetlink
// route and nexthop messages (RTM_NEWROUTE, RTM_DELROUTE, RTM_NEWNEXTHOP,
// RTM_DELNEXTHOP), from FRR's zebra over FPM (fpm.go) or from a kernel
// table followed through rtnetlink (kernel.go), decoded with
// vishvananda/netlink's nl package (decode.go) and applied to the router's
// tables and nexthop registry as transactions (apply.go; the nexthop
// objects, and groups waiting for their members, in nexthops.go). It
// remembers what it installed, so a new session replaces the last one's
// routes by mark and sweep, without a moment where they are missing.
// SRv6's encapsulations (seg6, seg6local) are read into the path's state
// as zebra encodes them (seg6.go); routes and nexthops with any other
// (MPLS, ip6...), or an SRv6 one Linux would refuse, are refused and
// counted, and take away what they replace (encap.go); log lines a peer
// or a table could repeat without end are held to a few (logs.go).
//
// feed imports router, fib6, nexthop and seg6; it is imported by control (to
// print it), metrics (to report it) and the binary (to start it).
package feed
