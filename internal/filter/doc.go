// Package filter owns tcpdump's filter language (pcap-filter(7)) for the
// router's packets: raw IPv6, the buffer starting at the IPv6 header (what
// libpcap calls DLT_RAW). Compile turns an expression into classic BPF in
// pure Go, and Match runs it without allocating, locking or panicking, on
// any input.
//
// A compiled program gives libpcap's verdict for its expression on every
// IPv6 packet, and rejects a packet that is not IPv6: the program is
// libpcap's "ip6 and (EXPR)" (filter_test.go runs libpcap's own programs
// beside ours). The empty expression accepts everything. A load past the
// end of the packet rejects it, as in the kernel, so the verdict on a
// truncated packet depends on which loads a program makes: the code
// generator makes libpcap's, and the optimizer (opt.go) skips the tests
// libpcap's optimizer skips.
//
// What it never does: resolve names (no DNS, no /etc/services or
// /etc/protocols: a host is a literal IPv6 address; the service and
// protocol names it knows are in names.go, Debian's), or compile IPv4 and
// link-layer primitives, which are errors here rather than tests that
// never match. Where it departs from libpcap on purpose:
//   - tcp[], udp[] and sctp[] read from byte 40 of an IPv6 packet whose
//     next header is that protocol, as libpcap's icmp6[] does (libpcap's
//     are IPv4 only: on IPv6 they never match).
//   - a bare IPv6 address with no qualifiers to carry is a host (libpcap:
//     a syntax error, or "invalid qualifier against IPv6 address"), and
//     \icmp6 names protocol 58 (libpcap: "unknown ip proto").
//   - a constant expression that divides by zero rejects the packet at
//     run time (libpcap's optimizer refuses it), and an expression that
//     can never match compiles (libpcap: "expression rejects all packets").
//   - at most 64 parentheses stand open at once.
//
// And where it departs without meaning to: libpcap's optimizer also moves
// tests (its and/or pull-ups); on a truncated packet a composition of
// primitives can then be decided by libpcap where ours reaches a load past
// the end and rejects (two in a thousand random compositions, each on a
// packet shorter than its header says).
//
// The files go in the order an expression meets them: lex.go, parse.go
// and parse_arith.go, prim.go (an id under its qualifiers), gen.go
// (primitives) and arith.go (relations), opt.go, layout.go (labels to
// offsets), vm.go (the interpreter); filter.go is the API.
//
// It imports nothing of the router's: the capture and trace commands
// compile their filters with it, and the packet path runs the compiled
// programs through the Filter they were given.
package filter
