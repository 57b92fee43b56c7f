package feed

import (
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// FuzzFPMDecode feeds the session's decoder and applier arbitrary bytes:
// never a crash; a stream refused as malformed applies nothing of the
// bad frame, and what decodes applies without a partial route (every
// route in the table is one a message said whole).
func FuzzFPMDecode(f *testing.F) {
	b := newRoute("2001:db8:b::/48")
	b.gw, b.oif = gw1, kidx
	c := newRoute("2001:db8:c::/48")
	c.paths = []Path{{Gateway: gw1, OIF: kidx, Weight: 1}, {Gateway: gw2, OIF: kidx, Weight: 3}}
	e := newRoute("2001:db8:a::/48")
	e.nhid = 12
	f.Add(slices.Concat(frame(nhObj{id: 10, gw: gw1, oif: kidx}.encode(unix.RTM_NEWNEXTHOP)),
		frame(nhObj{id: 12, group: []GroupEntry{{10, 1}}}.encode(unix.RTM_NEWNEXTHOP)),
		frame(e.encode(unix.RTM_NEWROUTE, 0))))
	f.Add(frame(b.encode(unix.RTM_NEWROUTE, 0), c.encode(unix.RTM_DELROUTE, 0)))
	f.Add(frame(c.encode(unix.RTM_NEWROUTE, unix.NLM_F_APPEND)))
	f.Add([]byte{1, 1, 0, 4})
	for _, e := range encaps { // routes and a path with encapsulations, refused
		x, y := b, c
		x.encap, y.pathEncap = e, []netlink.Encap{nil, e}
		f.Add(frame(x.encode(unix.RTM_NEWROUTE, 0), y.encode(unix.RTM_NEWROUTE, 0),
			nhObj{id: 10, gw: gw1, oif: kidx, encap: e}.encode(unix.RTM_NEWNEXTHOP)))
	}
	r, ap := testRouter(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, used, _, err := DecodeFrames(data, nil)
		if used > len(data) {
			t.Fatalf("used %d of %d", used, len(data))
		}
		ap.Apply(msgs)
		_ = err
		for _, line := range routes(r, 254) {
			if line == "" {
				t.Fatal("empty route")
			}
		}
	})
}
