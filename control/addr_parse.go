package control

import "net/netip"

// parsePrefixFast parses the one form a batch's prefixes take, hex groups
// and at most one "::", with or without a decimal /length, at a few
// times netip's speed (a full table's batch has 160,000 of them). It
// reports false for anything else (dotted quads, zones, a malformed
// word), which netip then parses or refuses as before: what it accepts,
// netip accepts as the same prefix, and what it refuses is refused (or
// accepted) by netip alone, with the same error.
func parsePrefixFast(b []byte) (netip.Prefix, bool) {
	var a [16]byte
	n := 0         // bytes of a written
	ellipsis := -1 // where "::" stands in a
	i := 0
	if len(b) >= 2 && b[0] == ':' && b[1] == ':' {
		ellipsis, i = 0, 2
	}
	for i < len(b) && b[i] != '/' {
		if n == 16 {
			return netip.Prefix{}, false
		}
		v, j := 0, i
		for ; j < len(b) && j-i < 5; j++ {
			d := unhex[b[j]]
			if d > 15 {
				break
			}
			v = v<<4 | int(d)
		}
		if j == i || j-i > 4 {
			return netip.Prefix{}, false
		}
		a[n], a[n+1] = byte(v>>8), byte(v)
		n += 2
		i = j
		if i == len(b) || b[i] == '/' {
			break
		}
		if b[i] != ':' {
			return netip.Prefix{}, false
		}
		i++
		if i < len(b) && b[i] == ':' {
			if ellipsis >= 0 {
				return netip.Prefix{}, false
			}
			ellipsis = n
			i++
		} else if i == len(b) || b[i] == '/' {
			return netip.Prefix{}, false // a single ':' at the end
		}
	}
	switch {
	case ellipsis < 0 && n != 16, ellipsis >= 0 && n == 16:
		return netip.Prefix{}, false
	case ellipsis >= 0:
		k := n - ellipsis
		copy(a[16-k:], a[ellipsis:n])
		clear(a[ellipsis : 16-k])
	}
	bits := 128
	if i < len(b) { // b[i] is '/'
		d := b[i+1:]
		if len(d) == 0 || len(d) > 3 || d[0] == '0' && len(d) > 1 {
			return netip.Prefix{}, false
		}
		bits = 0
		for _, c := range d {
			if c < '0' || c > '9' {
				return netip.Prefix{}, false
			}
			bits = bits*10 + int(c-'0')
		}
		if bits > 128 {
			return netip.Prefix{}, false
		}
	}
	return netip.PrefixFrom(netip.AddrFrom16(a), bits), true
}

// unhex is a hex digit's value, 255 for a byte that is none.
var unhex = func() (t [256]uint8) {
	for i := range t {
		t[i] = 255
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = uint8(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = uint8(c - 'a' + 10)
		t[c-'a'+'A'] = uint8(c - 'a' + 10)
	}
	return t
}()
