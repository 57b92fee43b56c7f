// Package seg6 owns Segment Routing over IPv6 as Linux's seg6 and
// seg6local lightweight tunnels do it (RFC 8754, RFC 8986, RFC 9800): the
// Segment Routing Header (srh.go), a seg6 route's encapsulation (H.Encaps,
// H.Encaps.Red, H.Insert: encap.go), a seg6local route's behaviour and its
// flavors (End, End.X, End.T, End.DX6, End.DT6, End.B6.Encaps; PSP and
// NEXT-C-SID: local.go), and what each does to a packet (behave.go).
//
// The packet functions work in place on the packet's bytes and the room
// in front of them that the caller's buffer keeps: they allocate nothing
// and take no lock. What a route holds is immutable once built; a
// seg6local route's counters are atomics.
package seg6
