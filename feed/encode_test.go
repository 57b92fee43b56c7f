package feed

import (
	"encoding/binary"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// The tests' encoder: rtnetlink messages built with the library the
// decoder uses, as zebra's dplane_fpm_nl and the kernel send them.

type route struct {
	table  uint32
	dst    netip.Prefix
	metric uint32
	proto  uint8
	typ    uint8
	gw     netip.Addr
	oif    int32
	nhid   uint32
	paths  []Path
	// encap is the route's RTA_ENCAP; pathEncap[i] paths[i]'s (nil: none)
	encap     netlink.Encap
	pathEncap []netlink.Encap
}

func newRoute(dst string) route {
	return route{table: unix.RT_TABLE_MAIN, dst: netip.MustParsePrefix(dst), metric: 20, proto: unix.RTPROT_BGP, typ: unix.RTN_UNICAST}
}

func u32b(v uint32) []byte { return nl.Uint32Attr(v) }

func (r route) encode(cmd uint16, flags int) []byte {
	req := nl.NewNetlinkRequest(int(cmd), flags)
	m := nl.NewRtMsg()
	m.Family = unix.AF_INET6
	m.Dst_len = uint8(r.dst.Bits())
	m.Protocol, m.Type = r.proto, r.typ
	m.Table = unix.RT_TABLE_UNSPEC
	if r.table < 256 {
		m.Table = uint8(r.table)
	}
	req.AddData(m)
	a16 := r.dst.Addr().As16()
	req.AddData(nl.NewRtAttr(unix.RTA_DST, a16[:]))
	req.AddData(nl.NewRtAttr(unix.RTA_TABLE, u32b(r.table)))
	req.AddData(nl.NewRtAttr(unix.RTA_PRIORITY, u32b(r.metric)))
	if r.nhid != 0 {
		req.AddData(nl.NewRtAttr(rtaNhID, u32b(r.nhid)))
	}
	if r.gw.IsValid() {
		g := r.gw.As16()
		req.AddData(nl.NewRtAttr(unix.RTA_GATEWAY, g[:]))
	}
	if r.oif != 0 {
		req.AddData(nl.NewRtAttr(unix.RTA_OIF, u32b(uint32(r.oif))))
	}
	for _, a := range encapAttrs(r.encap) {
		req.AddData(a)
	}
	if len(r.paths) > 0 {
		mp := nl.NewRtAttr(unix.RTA_MULTIPATH, nil)
		for i, p := range r.paths {
			h := &nl.RtNexthop{RtNexthop: unix.RtNexthop{Ifindex: p.OIF, Hops: uint8(p.Weight - 1)}}
			g := p.Gateway.As16()
			h.Children = append(h.Children, nl.NewRtAttr(unix.RTA_GATEWAY, g[:]))
			if i < len(r.pathEncap) {
				for _, a := range encapAttrs(r.pathEncap[i]) {
					h.Children = append(h.Children, a)
				}
			}
			mp.AddChild(h)
		}
		req.AddData(mp)
	}
	return req.Serialize()
}

// encapAttrs are RTA_ENCAP_TYPE and RTA_ENCAP for e, as the library
// (and zebra) write them.
func encapAttrs(e netlink.Encap) []*nl.RtAttr {
	if e == nil {
		return nil
	}
	b, err := e.Encode()
	if err != nil {
		panic(err)
	}
	return []*nl.RtAttr{nl.NewRtAttr(unix.RTA_ENCAP_TYPE, nl.Uint16Attr(uint16(e.Type()))),
		nl.NewRtAttr(unix.RTA_ENCAP|unix.NLA_F_NESTED, b)}
}

type nhObj struct {
	id    uint32
	gw    netip.Addr
	oif   int32
	group []GroupEntry
	black bool
	encap netlink.Encap // NHA_ENCAP_TYPE, NHA_ENCAP
}

// nhmsg is struct nhmsg, which the library does not have.
type nhmsg struct{ family, proto uint8 }

func (m nhmsg) Len() int { return sizeofNhMsg }
func (m nhmsg) Serialize() []byte {
	return []byte{m.family, 0, m.proto, 0, 0, 0, 0, 0}
}

func (n nhObj) encode(cmd uint16) []byte {
	req := nl.NewNetlinkRequest(int(cmd), unix.NLM_F_CREATE|unix.NLM_F_REPLACE)
	fam := uint8(unix.AF_INET6)
	if n.group != nil {
		fam = unix.AF_UNSPEC
	}
	req.AddData(nhmsg{family: fam, proto: unix.RTPROT_ZEBRA})
	req.AddData(nl.NewRtAttr(unix.NHA_ID, u32b(n.id)))
	switch {
	case n.group != nil:
		b := make([]byte, len(n.group)*sizeofNhGroup)
		for i, e := range n.group {
			nl.NativeEndian().PutUint32(b[i*8:], e.ID)
			b[i*8+4] = uint8(e.Weight - 1)
		}
		req.AddData(nl.NewRtAttr(unix.NHA_GROUP, b))
	case n.black:
		req.AddData(nl.NewRtAttr(unix.NHA_BLACKHOLE, nil))
	case cmd == unix.RTM_NEWNEXTHOP:
		g := n.gw.As16()
		req.AddData(nl.NewRtAttr(unix.NHA_GATEWAY, g[:]))
		req.AddData(nl.NewRtAttr(unix.NHA_OIF, u32b(uint32(n.oif))))
	}
	for _, a := range encapAttrs(n.encap) { // RTA_ENCAP{,_TYPE}'s numbers differ from NHA_'s
		switch a.Type &^ unix.NLA_F_NESTED {
		case unix.RTA_ENCAP_TYPE:
			a.Type = unix.NHA_ENCAP_TYPE
		case unix.RTA_ENCAP:
			a.Type = unix.NHA_ENCAP | unix.NLA_F_NESTED
		}
		req.AddData(a)
	}
	return req.Serialize()
}

// frame wraps netlink messages into one FPM frame.
func frame(msgs ...[]byte) []byte {
	n := fpmHeaderLen
	for _, m := range msgs {
		n += len(m)
	}
	b := make([]byte, fpmHeaderLen, n)
	b[0], b[1] = fpmVersion, fpmNetlink
	binary.BigEndian.PutUint16(b[2:], uint16(n))
	for _, m := range msgs {
		b = append(b, m...)
	}
	return b
}
