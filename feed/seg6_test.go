package feed

import (
	"net"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"urouter/fib6"
	"urouter/seg6"
)

// rawEncap is an encapsulation's attributes as given, for what the
// library does not encode (seg6local's flavors, FRR 9.1 on).
type rawEncap struct {
	typ int
	b   []byte
}

func (e rawEncap) Type() int                  { return e.typ }
func (e rawEncap) Decode([]byte) error        { return nil }
func (e rawEncap) Encode() ([]byte, error)    { return e.b, nil }
func (e rawEncap) String() string             { return "raw" }
func (e rawEncap) Equal(o netlink.Encap) bool { return false }
func attrBytes(typ int, v []byte) []byte      { return nl.NewRtAttr(typ, v).Serialize() }
func localEncap(action uint32) *netlink.SEG6LocalEncap {
	e := &netlink.SEG6LocalEncap{Action: int(action)}
	e.Flags[nl.SEG6_LOCAL_ACTION] = true
	return e
}

// stateOf is the SRv6 state of table id's route to dst (nil if none).
func stateOf(r interface {
	Get(uint32) *fib6.Table
}, id uint32, dst string) *seg6.State {
	t := r.Get(id)
	if t == nil {
		return nil
	}
	var st *seg6.State
	t.Dump(fib6.Filter{}, func(rt fib6.Route) bool {
		if rt.Dst == netip.MustParsePrefix(dst) {
			st = rt.Nexthop.Encap
			if rt.Object != nil {
				st = rt.Object.Load().Nexthop.Encap
			}
		}
		return true
	})
	return st
}

// TestSRv6FromZebra: zebra's SRv6 routes as rt_netlink.c encodes them
// are installed with their encapsulation or behaviour: 8.4's H.Encaps of
// one SID in a VPN's table (fill_seg6ipt_encap), its End.DT6 SID
// (SEG6_LOCAL_TABLE), End.X, a nexthop object's NHA_ENCAP (NLA_F_NESTED
// set), and 10.7's NEXT-C-SID flavors nest and multi-SID H.Encaps.Red.
func TestSRv6FromZebra(t *testing.T) {
	r, ap := testRouter(t)
	replace := unix.NLM_F_CREATE | unix.NLM_F_REPLACE
	vpn := newRoute("2001:db8:77::/48")
	vpn.table, vpn.gw, vpn.oif = 10, gw1, kidx
	vpn.encap = &netlink.SEG6Encap{Mode: nl.SEG6_IPTUN_MODE_ENCAP, Segments: []net.IP{net.ParseIP("fc00:0:2::100")}}
	dt6 := newRoute("fc00:0:1::100/128")
	dt6.oif = kidx
	dt6.encap = localEncap(nl.SEG6_LOCAL_ACTION_END_DT6)
	dt6.encap.(*netlink.SEG6LocalEncap).Table = 10
	dt6.encap.(*netlink.SEG6LocalEncap).Flags[nl.SEG6_LOCAL_TABLE] = true
	endX := newRoute("fc00:0:1::101/128")
	endX.oif = kidx
	endX.encap = localEncap(nl.SEG6_LOCAL_ACTION_END_X)
	endX.encap.(*netlink.SEG6LocalEncap).In6Addr = net.ParseIP("2001:db8:1::9")
	endX.encap.(*netlink.SEG6LocalEncap).Flags[nl.SEG6_LOCAL_NH6] = true
	flavors := attrBytes(seg6FlvOperation, u32b(seg6.FlavorNextCSID))
	flavors = append(flavors, attrBytes(seg6FlvLCBlock, []byte{48})...)
	csid := newRoute("fc00:0:1::102/128")
	csid.oif = kidx
	csid.encap = rawEncap{typ: seg6.EncapTypeSeg6Local, b: append(attrBytes(seg6LocalAction, u32b(uint32(seg6.ActionEnd))),
		attrBytes(seg6LocalFlavors|unix.NLA_F_NESTED, flavors)...)}
	red := newRoute("2001:db8:78::/48")
	red.gw, red.oif = gw1, kidx
	red.encap = &netlink.SEG6Encap{Mode: int(seg6.ModeEncapRed), Segments: []net.IP{net.ParseIP("fc00:0:2::1"), net.ParseIP("fc00:0:3::1")}}
	viaObj := newRoute("2001:db8:79::/48")
	viaObj.nhid = 20
	ap.Apply(mustDecode(t, frame(vpn.encode(unix.RTM_NEWROUTE, replace), dt6.encode(unix.RTM_NEWROUTE, replace),
		endX.encode(unix.RTM_NEWROUTE, replace), csid.encode(unix.RTM_NEWROUTE, replace), red.encode(unix.RTM_NEWROUTE, replace),
		nhObj{id: 20, gw: gw2, oif: kidx, encap: localEncap(nl.SEG6_LOCAL_ACTION_END)}.encode(unix.RTM_NEWNEXTHOP),
		viaObj.encode(unix.RTM_NEWROUTE, replace))))
	if n := ap.Stats.Rejected.Load(); n != 0 {
		t.Fatalf("rejected %d: %s", n, ap.LastError())
	}
	tables := r.Tables
	if st := stateOf(tables, 10, "2001:db8:77::/48"); st == nil || st.Encap == nil || st.Encap.Mode != seg6.ModeEncap ||
		st.Encap.Dst() != netip.MustParseAddr("fc00:0:2::100") {
		t.Errorf("the VPN route's H.Encaps: %+v", st)
	}
	if st := stateOf(tables, 254, "fc00:0:1::100/128"); st == nil || st.Local == nil || st.Local.Action != seg6.ActionEndDT6 || st.Local.Table != 10 {
		t.Errorf("the End.DT6 SID: %+v", st)
	}
	if st := stateOf(tables, 254, "fc00:0:1::101/128"); st == nil || st.Local == nil || st.Local.NH6 != netip.MustParseAddr("2001:db8:1::9") {
		t.Errorf("the End.X SID: %+v", st)
	}
	if st := stateOf(tables, 254, "fc00:0:1::102/128"); st == nil || st.Local == nil ||
		st.Local.Flavors != (seg6.Flavors{Ops: seg6.FlavorNextCSID, LBLen: 48, NFLen: 16}) {
		t.Errorf("the NEXT-C-SID SID: %+v", st)
	}
	if st := stateOf(tables, 254, "2001:db8:78::/48"); st == nil || st.Encap == nil || st.Encap.Mode != seg6.ModeEncapRed ||
		st.Encap.Len() != 40+8+16 {
		t.Errorf("H.Encaps.Red of two SIDs: %+v", st)
	}
	if st := stateOf(tables, 254, "2001:db8:79::/48"); st == nil || st.Local == nil || st.Local.Action != seg6.ActionEnd {
		t.Errorf("the route through nexthop 20 (End): %+v", st)
	}
}
