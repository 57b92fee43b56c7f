package feed

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Attributes golang.org/x/sys does not name.
const (
	rtaNhID       = 30 // RTA_NH_ID
	nhaFDB        = 11 // NHA_FDB
	nhaResGroup   = 12 // NHA_RES_GROUP
	nhaGroupRes   = 1  // NEXTHOP_GRP_TYPE_RES
	sizeofNhMsg   = 8  // struct nhmsg
	sizeofNhGroup = unix.SizeofNexthopGrp
	nlaTypeMask   = 0x3fff // NLA_TYPE_MASK: without NLA_F_NESTED and NLA_F_NET_BYTEORDER
)

// skipCached is the Skip of a cached (RTM_F_CLONED) route, which no table
// holds.
const skipCached = "a cached route"

// Kind is what a message asks.
type Kind uint8

const (
	RouteAdd Kind = iota + 1
	RouteDel
	NexthopAdd
	NexthopDel
	Other // a message this feed does not apply (counted)
)

// Msg is one decoded rtnetlink message.
type Msg struct {
	Kind  Kind
	Flags uint16 // NLM_F_*
	// Skip says why a message of a kind this feed applies is passed over
	// (an IPv4 route, a route type urouter has no use for); "" applies it.
	Skip    string
	Route   RouteMsg
	Nexthop NexthopMsg
}

// Path is one path of a route: a gateway and the kernel's interface index.
type Path struct {
	Gateway netip.Addr
	OIF     int32
	Weight  uint32 // rtnh_hops + 1
	OnLink  bool
	// Encap: the path asks for a lightweight tunnel (RTA_ENCAP or
	// RTA_ENCAP_TYPE: SRv6, MPLS...), which urouter does not do; EncapType
	// is its LWTUNNEL_ENCAP_* (0 if not said).
	Encap     bool
	EncapType uint16
	EncapRaw  []byte // RTA_ENCAP's payload, copied
}

// RouteMsg is an RTM_NEWROUTE or RTM_DELROUTE.
type RouteMsg struct {
	Table    uint32
	Dst, Src netip.Prefix
	Type     uint8 // RTN_*
	Proto    uint8
	Metric   uint32
	Path            // a single path (RTA_GATEWAY, RTA_OIF)
	Paths    []Path // RTA_MULTIPATH
	NhID     uint32 // RTA_NH_ID
	PrefSrc  netip.Addr
	MTU      uint32
}

// NexthopMsg is an RTM_NEWNEXTHOP or RTM_DELNEXTHOP.
type NexthopMsg struct {
	ID        uint32
	Family    uint8
	Proto     uint8
	Gateway   netip.Addr
	OIF       int32
	OnLink    bool
	Blackhole bool
	Group     []GroupEntry
	Resilient bool
	Encap     bool   // NHA_ENCAP or NHA_ENCAP_TYPE (encap.go, seg6.go)
	EncapType uint16 // LWTUNNEL_ENCAP_*
	EncapRaw  []byte // NHA_ENCAP's payload, copied
}

// GroupEntry is one member of a nexthop group: an id and its weight.
type GroupEntry struct {
	ID     uint32
	Weight uint32 // 1..256
}

// ErrMalformed wraps every reason a message is refused as malformed.
var ErrMalformed = errors.New("malformed rtnetlink message")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// Decode appends the rtnetlink messages of b (whole netlink messages,
// back to back) to out. Nothing is appended unless all of b decodes. The
// headers are read in place: syscall.ParseNetlinkMessage returns a new
// slice per call, one allocation per route when zebra sends a message a
// frame.
func Decode(b []byte, out []Msg) ([]Msg, error) {
	// The library's parsers slice past the end of a buffer whose last
	// message or attribute is not padded; netlink pads every one.
	if len(b)%unix.NLMSG_ALIGNTO != 0 {
		return out, malformed("%d bytes is not a whole number of aligned messages", len(b))
	}
	n := len(out)
	for off := 0; off < len(b); {
		if len(b)-off < unix.NLMSG_HDRLEN {
			return out[:n], malformed("%d bytes after the last message", len(b)-off)
		}
		var m syscall.NetlinkMessage
		m.Header = *(*syscall.NlMsghdr)(unsafe.Pointer(&b[off]))
		size := int(m.Header.Len)
		if size < unix.NLMSG_HDRLEN || size > len(b)-off {
			return out[:n], malformed("message length %d of %d bytes", size, len(b)-off)
		}
		m.Data = b[off+unix.NLMSG_HDRLEN : off+size]
		off += min(nlmAlign(size), len(b)-off)
		out = append(out, Msg{})
		if err := decodeOne(&m, &out[len(out)-1]); err != nil {
			return out[:n], err
		}
	}
	return out, nil
}

func nlmAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

func decodeOne(m *syscall.NetlinkMessage, msg *Msg) error {
	msg.Flags = m.Header.Flags
	switch m.Header.Type {
	case unix.RTM_NEWROUTE, unix.RTM_DELROUTE:
		msg.Kind = RouteAdd
		if m.Header.Type == unix.RTM_DELROUTE {
			msg.Kind = RouteDel
		}
		skip, err := decodeRoute(m.Data, &msg.Route)
		switch t := msg.Route.Type; {
		case skip != "" || err != nil:
		case msg.Route.Proto == unix.RTPROT_KERNEL:
			// connected and link-local routes (zebra sends them too): the
			// router derives its own from its addresses
			skip = "the kernel's own route"
		case msg.Kind == RouteAdd && t != unix.RTN_UNICAST && t != unix.RTN_BLACKHOLE && t != unix.RTN_UNREACHABLE && t != unix.RTN_PROHIBIT:
			skip = "route type " + strconv.Itoa(int(t)) // local, anycast, multicast...; a deletion says 0
		}
		msg.Skip = skip
		return err
	case unix.RTM_NEWNEXTHOP, unix.RTM_DELNEXTHOP:
		msg.Kind = NexthopAdd
		if m.Header.Type == unix.RTM_DELNEXTHOP {
			msg.Kind = NexthopDel
		}
		skip, err := decodeNexthop(m.Data, &msg.Nexthop)
		msg.Skip = skip
		return err
	}
	msg.Kind, msg.Skip = Other, "message type "+strconv.Itoa(int(m.Header.Type))
	return nil
}

// attrs walks a message's attributes. nl.ParseRouteAttr does the same
// but returns a new slice per message (four allocations and ~560 bytes a
// route on a full table), which halved the rate a table loads at; and it
// slices past the end of a buffer whose last attribute is not padded.
type attrs struct {
	b   []byte
	typ uint16
	val []byte
	err error
}

func attrsOf(b []byte) attrs {
	a := attrs{b: b}
	if len(b)%unix.RTA_ALIGNTO != 0 {
		a.err = malformed("attributes of %d bytes are not aligned", len(b))
	}
	return a
}

// next moves to the next attribute; false at the end or on an error.
func (a *attrs) next() bool {
	if a.err != nil || len(a.b) == 0 {
		return false
	}
	if len(a.b) < unix.SizeofRtAttr {
		a.err = malformed("attribute header of %d bytes", len(a.b))
		return false
	}
	n := int(nl.NativeEndian().Uint16(a.b))
	if n < unix.SizeofRtAttr || n > len(a.b) {
		a.err = malformed("attribute length %d of %d bytes", n, len(a.b))
		return false
	}
	a.typ = nl.NativeEndian().Uint16(a.b[2:]) & nlaTypeMask
	a.val = a.b[unix.SizeofRtAttr:n]
	a.b = a.b[min(len(a.b), (n+unix.RTA_ALIGNTO-1)&^(unix.RTA_ALIGNTO-1)):]
	return true
}

func addr16(v []byte, what string) (netip.Addr, error) {
	if len(v) != 16 {
		return netip.Addr{}, malformed("%s of %d bytes", what, len(v))
	}
	return netip.AddrFrom16([16]byte(v)), nil
}

func u32(v []byte, what string) (uint32, error) {
	if len(v) != 4 {
		return 0, malformed("%s of %d bytes", what, len(v))
	}
	return nl.NativeEndian().Uint32(v), nil
}

func decodeRoute(b []byte, r *RouteMsg) (string, error) {
	if len(b) < unix.SizeofRtMsg {
		return "", malformed("rtmsg of %d bytes", len(b))
	}
	h := nl.DeserializeRtMsg(b)
	r.Table, r.Type, r.Proto = uint32(h.Table), h.Type, h.Protocol
	if h.Family != unix.AF_INET6 {
		return fmt.Sprintf("address family %d", h.Family), nil
	}
	if h.Dst_len > 128 || h.Src_len > 128 {
		return "", malformed("prefix length %d/%d", h.Dst_len, h.Src_len)
	}
	dst, src := netip.IPv6Unspecified(), netip.IPv6Unspecified()
	var err error
	for as := attrsOf(b[unix.SizeofRtMsg:]); as.next() || as.err != nil; {
		if as.err != nil {
			return "", as.err
		}
		v := as.val
		switch as.typ {
		case unix.RTA_DST:
			dst, err = addr16(v, "RTA_DST")
		case unix.RTA_SRC:
			src, err = addr16(v, "RTA_SRC")
		case unix.RTA_TABLE:
			r.Table, err = u32(v, "RTA_TABLE")
		case unix.RTA_PRIORITY:
			r.Metric, err = u32(v, "RTA_PRIORITY")
		case unix.RTA_GATEWAY:
			r.Gateway, err = addr16(v, "RTA_GATEWAY")
		case unix.RTA_OIF:
			var i uint32
			i, err = u32(v, "RTA_OIF")
			r.OIF = int32(i)
		case unix.RTA_PREFSRC:
			r.PrefSrc, err = addr16(v, "RTA_PREFSRC")
		case rtaNhID:
			r.NhID, err = u32(v, "RTA_NH_ID")
		case unix.RTA_MULTIPATH:
			r.Paths, err = decodeMultipath(v)
		case unix.RTA_METRICS:
			r.MTU, err = decodeMTU(v)
		case unix.RTA_ENCAP, unix.RTA_ENCAP_TYPE:
			err = decodeEncap(as.typ, v, &r.Path)
		}
		if err != nil {
			return "", err
		}
	}
	r.Dst = netip.PrefixFrom(dst, int(h.Dst_len))
	r.Src = netip.PrefixFrom(src, int(h.Src_len))
	if h.Src_len == 0 {
		r.Src = netip.Prefix{}
	}
	r.OnLink = h.Flags&unix.RTNH_F_ONLINK != 0
	if h.Flags&unix.RTM_F_CLONED != 0 {
		return skipCached, nil
	}
	return "", nil
}

// decodeMultipath reads RTA_MULTIPATH: rtnexthop headers, each followed by
// its own attributes.
func decodeMultipath(b []byte) ([]Path, error) {
	var ps []Path
	for len(b) > 0 {
		if len(b) < unix.SizeofRtNexthop {
			return nil, malformed("rtnexthop of %d bytes", len(b))
		}
		h := nl.DeserializeRtNexthop(b)
		n := int(h.RtNexthop.Len)
		if n < unix.SizeofRtNexthop || n > len(b) {
			return nil, malformed("rtnexthop length %d", n)
		}
		p := Path{OIF: h.Ifindex, Weight: uint32(h.Hops) + 1, OnLink: h.Flags&unix.RTNH_F_ONLINK != 0}
		for as := attrsOf(b[unix.SizeofRtNexthop:n]); as.next() || as.err != nil; {
			if as.err != nil {
				return nil, as.err
			}
			var err error
			switch as.typ {
			case unix.RTA_GATEWAY:
				p.Gateway, err = addr16(as.val, "RTA_GATEWAY")
			case unix.RTA_ENCAP, unix.RTA_ENCAP_TYPE:
				err = decodeEncap(as.typ, as.val, &p)
			}
			if err != nil {
				return nil, err
			}
		}
		ps = append(ps, p)
		b = b[min(len(b), (n+unix.RTA_ALIGNTO-1)&^(unix.RTA_ALIGNTO-1)):]
	}
	if len(ps) == 0 {
		return nil, malformed("RTA_MULTIPATH without a path")
	}
	return ps, nil
}

// decodeEncap notes RTA_ENCAP or RTA_ENCAP_TYPE on p, RTA_ENCAP's
// payload copied (the message's buffer is the reader's).
func decodeEncap(typ uint16, v []byte, p *Path) error {
	p.Encap = true
	if typ == unix.RTA_ENCAP {
		p.EncapRaw = append([]byte(nil), v...)
	}
	if typ == unix.RTA_ENCAP_TYPE {
		if len(v) != 2 {
			return malformed("RTA_ENCAP_TYPE of %d bytes", len(v))
		}
		p.EncapType = nl.NativeEndian().Uint16(v)
	}
	return nil
}

// decodeMTU reads RTAX_MTU out of RTA_METRICS.
func decodeMTU(b []byte) (uint32, error) {
	as := attrsOf(b)
	for as.next() {
		if as.typ == unix.RTAX_MTU {
			return u32(as.val, "RTAX_MTU")
		}
	}
	return 0, as.err
}

func decodeNexthop(b []byte, n *NexthopMsg) (string, error) {
	if len(b) < sizeofNhMsg {
		return "", malformed("nhmsg of %d bytes", len(b))
	}
	n.Family, n.Proto = b[0], b[2]
	n.OnLink = nl.NativeEndian().Uint32(b[4:8])&unix.RTNH_F_ONLINK != 0
	skip := ""
	var err error
	for as := attrsOf(b[sizeofNhMsg:]); as.next() || as.err != nil; {
		if as.err != nil {
			return "", as.err
		}
		v := as.val
		switch as.typ {
		case unix.NHA_ID:
			n.ID, err = u32(v, "NHA_ID")
		case unix.NHA_OIF:
			var i uint32
			i, err = u32(v, "NHA_OIF")
			n.OIF = int32(i)
		case unix.NHA_GATEWAY:
			switch len(v) {
			case 4:
				skip = "IPv4 gateway"
			default:
				n.Gateway, err = addr16(v, "NHA_GATEWAY")
			}
		case unix.NHA_BLACKHOLE:
			n.Blackhole = true
		case unix.NHA_GROUP:
			n.Group, err = decodeGroup(v)
		case unix.NHA_GROUP_TYPE:
			if len(v) != 2 {
				err = malformed("NHA_GROUP_TYPE of %d bytes", len(v))
			}
			n.Resilient = err == nil && nl.NativeEndian().Uint16(v) == nhaGroupRes
		case unix.NHA_ENCAP:
			n.Encap, n.EncapRaw = true, append([]byte(nil), v...)
		case unix.NHA_ENCAP_TYPE:
			if len(v) != 2 {
				err = malformed("NHA_ENCAP_TYPE of %d bytes", len(v))
				break
			}
			n.Encap, n.EncapType = true, nl.NativeEndian().Uint16(v)
		case nhaFDB:
			skip = "fdb nexthop"
		}
		if err != nil {
			return "", err
		}
	}
	if n.ID == 0 {
		return "", malformed("nexthop without NHA_ID")
	}
	if n.Family == unix.AF_INET && !n.Blackhole && n.Group == nil {
		skip = "address family 2"
	}
	return skip, nil
}

func decodeGroup(b []byte) ([]GroupEntry, error) {
	if len(b) == 0 || len(b)%sizeofNhGroup != 0 {
		return nil, malformed("NHA_GROUP of %d bytes", len(b))
	}
	g := make([]GroupEntry, len(b)/sizeofNhGroup)
	for i := range g {
		e := b[i*sizeofNhGroup:]
		g[i] = GroupEntry{ID: nl.NativeEndian().Uint32(e), Weight: uint32(e[4]) + 1}
	}
	return g, nil
}
