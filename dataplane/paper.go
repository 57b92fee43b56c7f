package dataplane

import (
	"fmt"
	"net"

	"urouter/dataplane/port"
	"urouter/ndisc"
)

// Links on paper (port's paper devices): a router made of them is loaded
// with a config to read back what it says, and never forwards.

// PaperTAP is OpenTAP's link on paper.
func PaperTAP(o port.TAPOptions, eo EtherOptions) (port.Device, error) {
	mac := randomMAC()
	if len(eo.MAC) == 6 {
		mac = ndisc.MAC(eo.MAC)
	}
	return newEther("tap", port.PaperFrames(o), mac, eo)
}

// PaperHost is OpenHost's link on paper: the interface's MAC and MTU as
// it has them now, if it is there, and nothing of it taken.
func PaperHost(dev string, eo EtherOptions) (port.Device, int, error) {
	mac, mtu := randomMAC(), 0
	if ifi, err := net.InterfaceByName(dev); err == nil && len(ifi.HardwareAddr) == 6 {
		mac, mtu = ndisc.MAC(ifi.HardwareAddr), ifi.MTU
	}
	given := len(eo.MAC) == 6
	if given {
		mac = ndisc.MAC(eo.MAC)
	}
	e, err := newEther("host", port.PaperHost(dev), mac, eo)
	if err != nil {
		return nil, 0, err
	}
	e.give = !given
	return e, mtu, nil
}

// Paper reports whether the mirror is on paper.
func (m *Mirror) Paper() bool { return m.port == nil }

// SetPaperMirror gives link l a mirror on paper: its name and kind, no
// kernel interface (ClearMirror takes it as it takes a real one).
func (dp *Dataplane) SetPaperMirror(l *Link, kname, kind string) error {
	if _, isEther := l.hw.(*ether); kind == MirrorTAP && !isEther {
		return ErrMirrorKind
	}
	for _, o := range dp.Links.All() {
		if m := o.Mirror(); m != nil && m.Name == kname && o != l {
			return fmt.Errorf("%s: %w", kname, ErrLinkExists) // as the kernel's name is taken
		}
	}
	m := &Mirror{Name: kname, Kind: kind, link: l, done: make(chan struct{})}
	m.closing.Store(true) // nothing is given a mirror on paper (see enter)
	l.mirror.Store(m)
	return nil
}
