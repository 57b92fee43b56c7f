package ndisc

import (
	"bytes"
	"testing"
)

// TestSetSourceLink: the kernel's RA gets the router's MAC as its source
// link-layer option: appended when it has none (a TUN's), rewritten when
// it has one, refused when its options are malformed or there is no room.
func TestSetSourceLink(t *testing.T) {
	mac := MAC{0x02, 1, 2, 3, 4, 5}
	ra := func(opts ...byte) []byte {
		m := make([]byte, 16, 64)
		m[0] = 134
		return append(m, opts...)
	}
	mtu := []byte{5, 1, 0, 0, 0, 0, 5, 0xdc}
	got, ok := SetSourceLink(ra(mtu...), mac)
	if want := append(ra(mtu...), 1, 1, 2, 1, 2, 3, 4, 5); !ok || !bytes.Equal(got, want) {
		t.Errorf("appended: %v %x, want %x", ok, got, want)
	}
	old := []byte{1, 1, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
	got, ok = SetSourceLink(ra(append(old, mtu...)...), mac)
	if want := ra(append([]byte{1, 1, 2, 1, 2, 3, 4, 5}, mtu...)...); !ok || !bytes.Equal(got, want) {
		t.Errorf("rewritten: %v %x, want %x", ok, got, want)
	}
	for name, m := range map[string][]byte{
		"zero length": ra(5, 0, 0, 0, 0, 0, 0, 0),
		"overrun":     ra(5, 2, 0, 0, 0, 0, 0, 0),
		"short":       make([]byte, 15, 64),
		"no room":     ra(mtu...)[:24:24],
		"long SLLAO":  ra(1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
	} {
		if _, ok := SetSourceLink(m, mac); ok {
			t.Errorf("%s: taken", name)
		}
	}
}
