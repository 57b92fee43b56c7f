// Package ndisc owns Neighbour Discovery (RFC 4861) for an Ethernet link,
// read as the kernel's net/ipv6/ndisc.c and net/core/neighbour.c are:
//
//   - the neighbour cache (cache.go, table.go, nud.go, admin.go): IPv6
//     address to MAC with Linux's NUD states, timers and knobs, the packets
//     that wait for a resolution, collection within Linux's thresholds,
//     and the bounds that keep a scan of the link's /64 from crowding out
//     the neighbours that answer (unres.go, RFC 6583);
//   - the protocol, run by one goroutine per link (nd.go): Neighbour
//     Solicitations and Advertisements (ns.go, na.go), Duplicate Address
//     Detection (dad.go), Router Solicitations and Advertisements with
//     their schedule (ra.go, radv.go), the options and groups
//     (options.go), the Redirect message the packet path sends
//     (redirect.go), and the schedule of the failed gateways' probes
//     (probe.go, Linux's rt6_probe; what a failure does to routes is the
//     router's).
//
// The cache's fast path (Table.Lookup, Entry.Fast, Table.Output for a
// valid neighbour) takes no lock and allocates nothing: an entry's state
// and MAC are one atomic word, and the cache's index is 1,024 immutable maps
// behind atomic pointers, one replaced when an entry of it comes or goes.
// Only a packet to a neighbour that is not valid takes the entry's lock.
// Solicitations are never sent from the caller: the ND goroutine runs
// Table.Run, which sends them with no lock held.
//
// ndisc talks to its link through Iface (send a packet to a MAC, the
// link's addresses, what to do with packets that waited in vain, counts);
// it never imports the packet path: dataplane imports ndisc.
package ndisc
