package control

import (
	"net/netip"
)

// appendDst writes a route's destination as iproute2 does: "default",
// an address alone for a /128, else the prefix.
func appendDst(b []byte, p netip.Prefix) []byte {
	switch {
	case p.Bits() == 0:
		return append(b, "default"...)
	case p.Bits() == 128:
		return appendAddr(b, p.Addr())
	}
	b = appendAddr(b, p.Addr())
	bits := p.Bits()
	if bits >= 100 {
		return append(b, '/', '1', byte('0'+bits/10%10), byte('0'+bits%10))
	}
	if bits >= 10 {
		return append(b, '/', byte('0'+bits/10), byte('0'+bits%10))
	}
	return append(b, '/', byte('0'+bits))
}

// appendAddr is a.AppendTo(b) for the IPv6 addresses a dump prints on
// every line, at about twice its speed: the address is written into an
// array and appended once, not a byte at a time. IPv4-mapped addresses
// (written with a dotted quad) and zones are netip's.
func appendAddr(b []byte, a netip.Addr) []byte {
	if !a.Is6() || a.Is4In6() || a.Zone() != "" {
		return a.AppendTo(b)
	}
	x := a.As16()
	var g [8]uint16
	for i := range g {
		g[i] = uint16(x[2*i])<<8 | uint16(x[2*i+1])
	}
	// RFC 5952: the longest run of two or more zero groups, the first of
	// equals, becomes "::"
	zs, ze := 8, 8
	for i := 0; i < 8; {
		if g[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && g[j] == 0 {
			j++
		}
		if j-i >= 2 && j-i > ze-zs {
			zs, ze = i, j
		}
		i = j
	}
	var out [39]byte
	n := 0
	for i := 0; i < 8; i++ {
		if i == zs {
			out[n], out[n+1] = ':', ':'
			n += 2
			i = ze - 1
			continue
		}
		if i > 0 && i != ze {
			out[n] = ':'
			n++
		}
		v := g[i]
		switch {
		case v >= 0x1000:
			out[n] = hexDigit[v>>12]
			n++
			fallthrough
		case v >= 0x100:
			out[n] = hexDigit[v>>8&0xf]
			n++
			fallthrough
		case v >= 0x10:
			out[n] = hexDigit[v>>4&0xf]
			n++
		}
		out[n] = hexDigit[v&0xf]
		n++
	}
	return append(b, out[:n]...)
}

const hexDigit = "0123456789abcdef"
