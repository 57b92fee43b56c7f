// Package rules owns policy routing: the ordered rules (`ip rule`) that
// choose which table a packet is looked up in (an l3mdev rule: the table
// of the packet's VRF), or decide it outright.
//
// A rule set is an immutable snapshot (Set) behind an atomic pointer, with
// a writer lock of its own (Registry); no other lock is taken when rules
// change, and nothing is walked but the rules. Each snapshot is compiled
// when it is published into a classifier (classify.go) that finds the
// next rule a packet matches without trying the rules that cannot match,
// in the rules' order exactly. The routing decision (package decide) walks
// a snapshot through a Cursor and never locks; rules never imports decide,
// dataplane or control.
package rules

import (
	"net/netip"
	"syscall"

	"urouter/fib6"
)

// Action is what a rule does with a packet it matches (Linux's FR_ACT_*).
type Action uint8

const (
	ToTable     Action = 1 // look the packet up in Table
	Goto        Action = 2 // go on at the first rule of preference Goto
	Nop         Action = 3 // nothing: go on with the next rule
	Blackhole   Action = 6 // drop silently
	Unreachable Action = 7 // Network is unreachable
	Prohibit    Action = 8 // administratively prohibited
)

// PortRange is a range of transport ports, both ends included; the zero
// value is any port.
type PortRange struct{ Lo, Hi uint16 }

// Set reports whether the range selects.
func (p PortRange) Set() bool { return p != PortRange{} }

func (p PortRange) contains(port uint16) bool { return p.Lo <= port && port <= p.Hi }

// Rule is one policy rule. A zero selector field selects everything.
type Rule struct {
	Pref uint32
	// Invert (`not`) turns the selectors' verdict round.
	Invert bool
	// Src and Dst select by prefix; a prefix of length 0 (or none) is all.
	Src, Dst netip.Prefix
	// Iif and Oif are link names, matched by the index of the link that
	// has the name (a rule may name a link that does not exist yet).
	Iif, Oif     string
	IPProto      uint8
	Sport, Dport PortRange
	DSField      uint8 // the traffic class without its ECN bits
	Protocol     uint8 // who made the rule (`proto`)
	Action       Action
	Table        uint32 // for ToTable
	Target       uint32 // for Goto: a preference above Pref
	// SuppressPrefixLen, when Suppress is set, makes a ToTable rule pass
	// over routes of that prefix length or shorter.
	SuppressPrefixLen int32
	Suppress          bool
	// L3mdev (`l3mdev`) selects the packets of a VRF and looks them up
	// in its table (Linux's FRA_L3MDEV: l3mdev_fib_rule_match).
	L3mdev bool
}

// Packet is what rules look at.
type Packet struct {
	Dst, Src [16]byte // a Src of all zeros is none (a lookup without a source)
	// Iif is the link the packet came in by, 0 for the router's own
	// packets, which rules see as coming in by the loopback (Linux's iif
	// lo), NoIif for a lookup that comes in by none (Linux's check of a
	// gateway); Oif is the link a lookup asks to leave by, 0 for any.
	Iif, Oif     int32
	Proto        uint8 // the transport protocol (the last next header)
	Sport, Dport uint16
	DSField      uint8 // the traffic class
	// L3Table is the table of the VRF the flow is in (its Oif's if it
	// has one, else its Iif's: Linux's l3mdev_update_flow), 0 for none;
	// an l3mdev rule matches it and looks it up.
	L3Table uint32
}

// NoIif is the Iif of a lookup that comes in by no link: no `iif` rule
// matches it.
const NoIif int32 = -2

// Error is a refused change, with Linux's errno and message.
type Error = fib6.Error

func invalid(msg string) error { return &Error{Errno: syscall.EINVAL, Msg: msg} }

var (
	// ErrExists: an equal rule is there ("File exists").
	ErrExists = &Error{Errno: syscall.EEXIST}
	// ErrNotFound: no rule matches ("No such file or directory").
	ErrNotFound = &Error{Errno: syscall.ENOENT}
)

// check refuses a rule Linux's fib_nl2rule and fib6_rule_configure
// refuse.
func (r *Rule) check() error {
	if r.Sport.Set() {
		if err := CheckPorts(r.Sport, true); err != nil {
			return err
		}
	}
	if r.Dport.Set() {
		if err := CheckPorts(r.Dport, false); err != nil {
			return err
		}
	}
	switch r.Action {
	case ToTable:
		if r.L3mdev && r.Table != 0 {
			return invalid("l3mdev and table are mutually exclusive.")
		}
		if r.Table == 0 && !r.L3mdev {
			return invalid("Invalid table.")
		}
	case Goto:
		if r.Target <= r.Pref {
			return invalid("Backward goto not supported.")
		}
	case Nop, Blackhole, Unreachable, Prohibit:
	default:
		return invalid("Invalid action.")
	}
	if r.DSField&3 != 0 {
		return invalid("Invalid dsfield (tos): ECN bits must be 0.")
	}
	return nil
}

// CheckPorts refuses a port range given as sport (or dport, if !src) that
// Linux's fib_rule_port_range_valid refuses: a port 0 (so 0-0, which as a
// PortRange selects nothing), an end of 65535, a range that runs
// backwards.
func CheckPorts(p PortRange, src bool) error {
	if p.Lo == 0 || p.Hi == 65535 || p.Lo > p.Hi {
		if src {
			return invalid("Invalid sport range.")
		}
		return invalid("Invalid dport range.")
	}
	return nil
}

// srcBits and dstBits are the prefix lengths, 0 for all.
func (r *Rule) srcBits() int { return max(0, r.Src.Bits()) }
func (r *Rule) dstBits() int { return max(0, r.Dst.Bits()) }

// sameAs is Linux's rule_exists: what makes an added rule a duplicate.
// As in Linux, a source or destination of length 0 and a dsfield of 0 in
// the new rule match any, and `not` and the goto target are not compared.
func (r *Rule) sameAs(n *Rule) bool {
	return r.Action == n.Action && r.Table == n.Table && r.Pref == n.Pref &&
		r.Iif == n.Iif && r.Oif == n.Oif && r.suppress() == n.suppress() && r.Protocol == n.Protocol &&
		r.IPProto == n.IPProto && r.Sport == n.Sport && r.Dport == n.Dport && r.L3mdev == n.L3mdev && r.prefixesMatch(n)
}

// Selector is what `rule del` names: the fields set select, the others
// match any rule (Linux's rule_find).
type Selector struct {
	Rule
	PrefSet bool // Pref selects (a preference was given)
}

func (s *Selector) selects(r *Rule) bool {
	n := &s.Rule
	return (n.Action == 0 || r.Action == n.Action) && (n.Table == 0 || r.Table == n.Table) &&
		(!s.PrefSet || r.Pref == n.Pref) && (n.Iif == "" || r.Iif == n.Iif) &&
		(n.Oif == "" || r.Oif == n.Oif) && (!n.Suppress || r.suppress() == n.suppress()) &&
		(n.IPProto == 0 || r.IPProto == n.IPProto) && (n.Protocol == 0 || r.Protocol == n.Protocol) &&
		(!n.Sport.Set() || r.Sport == n.Sport) && (!n.Dport.Set() || r.Dport == n.Dport) &&
		(!n.L3mdev || r.L3mdev) && r.prefixesMatch(n)
}

// prefixesMatch is fib6_rule_compare: n's source, destination and dsfield,
// where given, equal r's.
func (r *Rule) prefixesMatch(n *Rule) bool {
	if b := n.srcBits(); b != 0 && (r.srcBits() != b || r.Src.Addr() != n.Src.Addr()) {
		return false
	}
	if b := n.dstBits(); b != 0 && (r.dstBits() != b || r.Dst.Addr() != n.Dst.Addr()) {
		return false
	}
	return n.DSField == 0 || r.DSField == n.DSField
}

func (r *Rule) suppress() int64 {
	if !r.Suppress {
		return -1
	}
	return int64(r.SuppressPrefixLen)
}
