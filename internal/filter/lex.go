package filter

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// The lexer follows libpcap's scanner.l: the longest match wins, and of
// matches of one length the rule written first (keywords, then MAC
// addresses, numbers, dotted IPv4, IPv6, then plain names). Named
// constants such as tcp-syn and icmp6-echo are numbers, as libpcap's
// scanner makes them.

type tokKind int

const (
	tEOF  tokKind = iota
	tNum          // a number, or a named constant
	tID           // a name (\name gives the name without its backslash)
	tHID          // dotted decimal: an IPv4 address or part of one
	tHID6         // an IPv6 address
	tEID          // a MAC address
	tKW           // a keyword; text says which
	tOp           // an operator or punctuation; text says which
)

type token struct {
	kind tokKind
	text string // for a keyword, its one spelling
	raw  string // as written
	num  uint32
	addr netip.Addr
	pos  int // byte offset in the expression
}

func (t token) String() string {
	if t.kind == tEOF {
		return "end of expression"
	}
	return "'" + clip(t.raw) + "'"
}

// clip shortens what an error quotes to a readable length.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func (t token) is(kind tokKind, text string) bool { return t.kind == kind && t.text == text }
func (t token) kw(text string) bool               { return t.is(tKW, text) }
func (t token) op(text string) bool               { return t.is(tOp, text) }

// keywords are libpcap's, so that its words for other links and protocols
// give a clear error rather than an unknown name. The aliases map to one
// spelling.
var keywords = map[string]string{
	"dst": "dst", "src": "src", "host": "host", "net": "net", "mask": "mask",
	"port": "port", "portrange": "portrange", "proto": "proto",
	"protochain": "protochain", "gateway": "gateway",
	"less": "less", "greater": "greater", "byte": "byte",
	"broadcast": "broadcast", "multicast": "multicast",
	"and": "and", "or": "or", "not": "not", "len": "len", "length": "len",
	"ip6": "ip6", "icmp6": "icmp6", "tcp": "tcp", "udp": "udp", "sctp": "sctp",
	"ah": "ah", "esp": "esp",
	// IPv4 and its companions: errors here.
	"ip": "ip", "arp": "arp", "rarp": "rarp", "icmp": "icmp", "igmp": "igmp",
	"igrp": "igrp", "pim": "pim", "vrrp": "vrrp", "carp": "carp",
	// link layers and encapsulations: errors here.
	"link": "link", "ether": "ether", "ppp": "ppp", "slip": "slip", "fddi": "fddi",
	"tr": "tr", "wlan": "wlan", "radio": "radio", "vlan": "vlan", "mpls": "mpls",
	"pppoed": "pppoed", "pppoes": "pppoes", "geneve": "geneve", "llc": "llc",
	"inbound": "inbound", "outbound": "outbound", "ifindex": "ifindex",
	"atalk": "atalk", "aarp": "aarp", "decnet": "decnet", "lat": "lat", "sca": "sca",
	"moprc": "moprc", "mopdl": "mopdl", "iso": "iso", "esis": "esis", "es-is": "esis",
	"isis": "isis", "is-is": "isis", "clnp": "clnp", "stp": "stp", "ipx": "ipx",
	"netbeui": "netbeui", "type": "type", "subtype": "subtype", "dir": "dir",
	"direction": "dir", "ra": "ra", "ta": "ta",
	"addr1": "addr1", "addr2": "addr2", "addr3": "addr3", "addr4": "addr4",
	"address1": "addr1", "address2": "addr2", "address3": "addr3", "address4": "addr4",
	"on": "on", "ifname": "on", "rset": "rset", "ruleset": "rset", "rnr": "rnr",
	"rulenum": "rnr", "srnr": "srnr", "subrulenum": "srnr", "reason": "reason",
	"action": "action",
}

// constants are libpcap's named numbers (scanner.l).
var constants = map[string]uint32{
	"icmp6type": 0, "icmp6code": 1,
	"icmp6-destinationunreach": 1, "icmp6-packettoobig": 2, "icmp6-timeexceeded": 3,
	"icmp6-parameterproblem": 4, "icmp6-echo": 128, "icmp6-echoreply": 129,
	"icmp6-multicastlistenerquery": 130, "icmp6-multicastlistenerreportv1": 131,
	"icmp6-multicastlistenerdone": 132, "icmp6-routersolicit": 133,
	"icmp6-routeradvert": 134, "icmp6-neighborsolicit": 135,
	"icmp6-neighboradvert": 136, "icmp6-redirect": 137, "icmp6-routerrenum": 138,
	"icmp6-nodeinformationquery": 139, "icmp6-nodeinformationresponse": 140,
	"icmp6-ineighbordiscoverysolicit": 141, "icmp6-ineighbordiscoveryadvert": 142,
	"icmp6-multicastlistenerreportv2": 143, "icmp6-homeagentdiscoveryrequest": 144,
	"icmp6-homeagentdiscoveryreply": 145, "icmp6-mobileprefixsolicit": 146,
	"icmp6-mobileprefixadvert": 147, "icmp6-certpathsolicit": 148,
	"icmp6-certpathadvert": 149, "icmp6-multicastrouteradvert": 151,
	"icmp6-multicastroutersolicit": 152, "icmp6-multicastrouterterm": 153,
	"tcpflags": 13, "tcp-fin": 0x01, "tcp-syn": 0x02, "tcp-rst": 0x04,
	"tcp-push": 0x08, "tcp-ack": 0x10, "tcp-urg": 0x20, "tcp-ece": 0x40,
	"tcp-cwr": 0x80,
	// IPv4's ICMP names are numbers too; only an icmp[] load, refused,
	// would use them.
	"icmptype": 0, "icmpcode": 1, "icmp-echoreply": 0, "icmp-unreach": 3,
	"icmp-sourcequench": 4, "icmp-redirect": 5, "icmp-echo": 8,
	"icmp-routeradvert": 9, "icmp-routersolicit": 10, "icmp-timxceed": 11,
	"icmp-paramprob": 12, "icmp-tstamp": 13, "icmp-tstampreply": 14,
	"icmp-ireq": 15, "icmp-ireqreply": 16, "icmp-maskreq": 17, "icmp-maskreply": 18,
}

var (
	reID  = regexp.MustCompile(`^[A-Za-z0-9]([-_.A-Za-z0-9]*[.A-Za-z0-9])?`)
	reNum = regexp.MustCompile(`^(0[xX][0-9A-Fa-f]+|[0-9]+)`)
	reHID = regexp.MustCompile(`^(0[xX][0-9A-Fa-f]+|[0-9]+)(\.(0[xX][0-9A-Fa-f]+|[0-9]+)){1,3}`)
	reMAC = regexp.MustCompile(`^([0-9A-Fa-f]{1,2}(:[0-9A-Fa-f]{1,2}){5}|[0-9A-Fa-f]{1,2}(-[0-9A-Fa-f]{1,2}){5}|` +
		`[0-9A-Fa-f]{1,2}(\.[0-9A-Fa-f]{1,2}){5}|[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}|[0-9A-Fa-f]{12})`)
	reV6 = regexp.MustCompile(`^[0-9A-Fa-f:.]+`)
)

func init() {
	for _, re := range []*regexp.Regexp{reID, reNum, reHID, reMAC} {
		re.Longest()
	}
}

// operators, longest first.
var operators = []string{">=", "<=", "!=", "==", "<<", ">>", "&&", "||",
	"+", "-", "*", "/", "%", ":", "[", "]", "!", "<", ">", "(", ")", "&", "|", "^", "="}

// maxDepth bounds the parentheses open at once, and so the parser's
// backtracking, which costs the square of the depth.
const maxDepth = 64

// lex splits expr into tokens, ending with tEOF.
func lex(expr string) ([]token, error) {
	var toks []token
	i, depth := 0, 0
	for {
		for i < len(expr) && strings.IndexByte(" \t\r\n", expr[i]) >= 0 {
			i++
		}
		if i == len(expr) {
			return append(toks, token{kind: tEOF, pos: i}), nil
		}
		t, err := lexOne(expr[i:])
		if err != nil {
			return nil, err
		}
		t.pos = i
		toks = append(toks, t)
		if t.op("(") {
			if depth++; depth > maxDepth {
				return nil, fmt.Errorf("expression nested too deeply: more than %d parentheses open", maxDepth)
			}
		} else if t.op(")") {
			depth--
		}
		i += len(t.raw)
	}
}

func lexOne(s string) (token, error) {
	t, err := lexWord(s)
	if t.raw == "" {
		t.raw = t.text
	}
	return t, err
}

func lexWord(s string) (token, error) {
	if s[0] == '\\' {
		n := strings.IndexAny(s[1:], " !()\n\t")
		if n < 0 {
			n = len(s) - 1
		}
		if n == 0 {
			return token{}, fmt.Errorf("syntax error in filter expression: a lone '\\'")
		}
		return token{kind: tID, text: s[1 : 1+n], raw: s[:1+n]}, nil
	}
	// Word-like tokens: the longest of the candidates; ties by rule order.
	id := reID.FindString(s)
	num := reNum.FindString(s)
	hid := reHID.FindString(s)
	mac := reMAC.FindString(s)
	v6, addr := longestV6(s)
	best := max(len(id), len(num), len(hid), len(mac), len(v6))
	if best > 0 {
		switch {
		case len(id) == best && keywords[id] != "":
			return token{kind: tKW, text: keywords[id], raw: id}, nil
		case len(mac) == best:
			return token{kind: tEID, text: mac}, nil
		case len(num) == best:
			n, err := parseNum(num)
			return token{kind: tNum, text: num, num: n}, err
		case len(hid) == best:
			return token{kind: tHID, text: hid}, nil
		case len(v6) == best:
			return token{kind: tHID6, text: v6, addr: addr}, nil
		}
		if n, ok := constants[id]; ok {
			return token{kind: tNum, text: id, num: n}, nil
		}
		return token{kind: tID, text: id}, nil
	}
	for _, op := range operators {
		if strings.HasPrefix(s, op) {
			return token{kind: tOp, text: op}, nil
		}
	}
	return token{}, fmt.Errorf("syntax error in filter expression: unexpected %q", s[:1])
}

// maxV6Text is the longest an IPv6 address is written
// ("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255").
const maxV6Text = 45

// longestV6 is the longest prefix of s that is an IPv6 address (no zone):
// libpcap's scanner spells out every textual form, which netip parses.
func longestV6(s string) (string, netip.Addr) {
	run := reV6.FindString(s[:min(len(s), maxV6Text)])
	if !strings.Contains(run, ":") {
		return "", netip.Addr{}
	}
	for n := len(run); n >= 2; n-- {
		if a, err := netip.ParseAddr(run[:n]); err == nil && a.Is6() {
			return run[:n], a
		}
	}
	return "", netip.Addr{}
}

// parseNum reads a number as libpcap's stoulen does: 0x hex, a leading 0
// octal, else decimal, at most 32 bits.
func parseNum(s string) (uint32, error) {
	base := 10
	digits := s
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		base, digits = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
		if strings.ContainsAny(digits, "89") {
			return 0, fmt.Errorf("number %s contains non-octal digit", clip(s))
		}
	}
	n, err := strconv.ParseUint(digits, base, 32)
	if err != nil {
		return 0, fmt.Errorf("number %s overflows 32 bits", clip(s))
	}
	return uint32(n), nil
}
