// Package control owns the command language: iproute2's words, grammar,
// output and errors (ip's global options, -batch, -force, -json,
// -pretty, -details, -stats), run by a Session on the lines of an
// io.Reader; it opens no socket and no file. The rooms around it: the
// daemon's side (control/server: the socket, a connection's session,
// the monitors' hub, capture's stream, the config file), the client
// (control/client), the wire between them (control/wire) and the state
// file (control/statefile).
//
// control has no policy of its own: it parses a command, calls the router
// (package router), a table's transaction or the rule set's, and prints
// what comes back as ip prints it. A command is parsed and validated, and
// everything it needs allocated, before it takes any lock. A session
// tells its caller what it holds (Holding, Pacer, SealDue), so that it
// never holds a transaction while it waits on its client, in either
// direction, nor a thread (see control/server's pausingConn).
//
// Its objects are ip's address, link, monitor, neighbour, nexthop (with
// its buckets), ntable, route, rule, sr and vrf, sysctl(8)'s knobs, and urouter's
// own ra (Router Advertisements), fpm (zebra's FPM feed) and mirror
// (kernel tables followed).
//
// Each object's command goes through up to three stages, each in a file
// named for it: OBJECT_parse.go reads its words in iproute2's order of
// checks, OBJECT_modify.go holds the command's dispatch and applies a
// change, OBJECT_show.go selects and prints. What an object keeps from
// one line of a batch to the next (the route's memo of words, links,
// gateways and paths checked) is in a parser of its own (routeParser,
// ruleParser), not in the session.
//
//	session.go                    a session: lines in, the object picked, the transactions
//	host.go                       a session as its caller runs it: made, attached to a
//	                              daemon, asked what it holds; a config read as a batch
//	batch_ahead.go, batch_shape.go  a long batch read and parsed ahead; a run of route
//	                              lines that differ in their destination added at once
//	args.go, errors.go, names.go  words, iproute2's errors, its names of protocols and tables
//	help.go                       urouter's usage and each object's, which the client prints too
//	output.go                     the printer: text and JSON from the same calls
//	addr_parse.go, addr_format.go a batch's prefixes parsed fast; a destination printed
//	route_parse.go                route add/del/...'s words, the route parser's memo
//	route_modify.go, route_gateway.go  route's commands, a route checked and applied; its
//	                              gateway checked as Linux's ip6_validate_gw
//	route_legs.go                 a multipath route's paths: parsed, checked, grouped
//	route_show.go, route_print.go, route_print_fast.go  route show/flush/save: the
//	                              selector, the printer, the cache of routes printed alike
//	route_get.go, route_explain.go route get, and -d's explanation of the decision
//	route_encap.go, route_seg6local.go  a path's encap seg6 and encap seg6local: their
//	                              words (iproute_lwtunnel.c's), Linux's checks, the printer
//	sr.go                         sr tunsrc: the source of SRv6's outer headers
//	nexthop_{parse,modify,show}.go, nexthop_bucket.go  nexthop objects and buckets
//	rule_{parse,modify,show}.go   rules
//	link_{parse,modify,show}.go   links (TUN, TAP, host, dummy)
//	link_vlan.go                  VLAN links: type vlan's words, 8021q's refusals, -d's line
//	link_vrf.go                   VRFs: type vrf's words, vrf.c's refusals, master and
//	                              nomaster, the vrf selectors, -d's lines, vrf show
//	address_{modify,show}.go      the router's addresses
//	address_select.go             address show/flush's and link show's selector
//	neigh_{parse,modify,show}.go  the Ethernet links' neighbours
//	ntable_{modify,show}.go       the neighbour tables' knobs
//	ra_{modify,show}.go           Router Advertisements
//	sysctl.go                     sysctl(8): the router's knobs by Linux's names
//	save.go, save_chunks.go       save: the configuration as the commands that make it
//	                              (each VRF member's master: link_vrf.go); the routes
//	                              held back, in chunks
//	apply.go                      apply: a config read on paper, its changes tried on
//	                              paper, then run as one record
//	apply_plan.go, apply_change.go  apply's plan: save's lines keyed, what differs
//	                              changed in place, made again or undone, in load order
//	feeds.go                      fpm show, mirror show
//	monitor.go                    ip monitor: its words, its events and their printer
//	capture.go, trace.go          capture's words and filter; trace add and show
//	status.go                     status: whether the router is ready, and why not; the VRFs
//	record.go                     what the state file (package statefile) is given: lines, effects, the replay
package control
