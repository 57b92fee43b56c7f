package filter

// Names libpcap looks up in /etc/services and /etc/protocols, fixed here
// so a filter means the same on every machine. The services are Debian's
// netbase entries (a name known for one transport only matches that
// transport, as libpcap's pcap_nametoport gives); bfd is not in netbase.

// Transports a named port is known for.
const (
	overTCP = 1 << iota
	overUDP
	overBoth = overTCP | overUDP
)

type service struct {
	port uint16
	over int
}

var services = map[string]service{
	"ftp-data": {20, overTCP}, "ftp": {21, overTCP}, "ssh": {22, overTCP},
	"telnet": {23, overTCP}, "smtp": {25, overTCP}, "domain": {53, overBoth},
	"bootps": {67, overUDP}, "bootpc": {68, overUDP}, "tftp": {69, overUDP},
	"http": {80, overTCP}, "www": {80, overTCP}, "ntp": {123, overUDP},
	"snmp": {161, overBoth}, "snmp-trap": {162, overBoth}, "bgp": {179, overTCP},
	"https": {443, overBoth}, "syslog": {514, overUDP},
	"dhcpv6-client": {546, overUDP}, "dhcpv6-server": {547, overUDP},
	"bfd": {3784, overUDP}, "bfd-echo": {3785, overUDP},
}

// protocols are /etc/protocols' names of IP protocols, and icmp6, which
// is not there (libpcap says "unknown ip proto 'icmp6'").
var protocols = map[string]uint32{
	"ip": 0, "hopopt": 0, "icmp": 1, "igmp": 2, "ipencap": 4, "st": 5, "tcp": 6,
	"egp": 8, "igp": 9, "pup": 12, "udp": 17, "hmp": 20, "xns-idp": 22,
	"rdp": 27, "iso-tp4": 29, "dccp": 33, "xtp": 36, "ddp": 37, "idpr-cmtp": 38,
	"ipv6": 41, "ipv6-route": 43, "ipv6-frag": 44, "idrp": 45, "rsvp": 46,
	"gre": 47, "esp": 50, "ah": 51, "skip": 57, "ipv6-icmp": 58, "icmp6": 58,
	"ipv6-nonxt": 59, "ipv6-opts": 60, "rspf": 73, "vmtp": 81, "eigrp": 88,
	"ospf": 89, "ax.25": 93, "ipip": 94, "etherip": 97, "encap": 98,
	"pim": 103, "ipcomp": 108, "vrrp": 112, "l2tp": 115, "isis": 124,
	"sctp": 132, "fc": 133, "mobility-header": 135, "udplite": 136,
	"mpls-in-ip": 137, "manet": 138, "hip": 139, "shim6": 140, "wesp": 141,
	"rohc": 142, "ethernet": 143,
}

// IP protocol numbers the code generator uses.
const (
	protoHopOpts  = 0
	protoTCP      = 6
	protoUDP      = 17
	protoRouting  = 43
	protoFragment = 44
	protoESP      = 50
	protoAH       = 51
	protoICMPv6   = 58
	protoNoNext   = 59
	protoDstOpts  = 60
	protoSCTP     = 132
)

// transports are the protocols with a name in the language.
var transports = map[string]uint32{"tcp": protoTCP, "udp": protoUDP, "sctp": protoSCTP,
	"icmp6": protoICMPv6, "ah": protoAH, "esp": protoESP}
