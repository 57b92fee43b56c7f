package control

import (
	"strconv"
	"strings"

	"urouter/seg6"
)

// parseSeg6Local reads `action ACTION [OPTIONS] [count]`
// (parse_encap_seg6local): every option once, the SRH built once all
// are read, for End.B6.Encaps without the destination's room.
func parseSeg6Local(ws *argv) (*encapReq, *cmdErr) {
	e := &encapReq{local: true}
	l := &e.l
	var segs []byte
	srh := false
	seen := map[string]bool{}
	for ; ws.i < len(ws.args); ws.i++ {
		key := string(ws.args[ws.i])
		if !seg6localKeys[key] {
			break
		}
		if key == "count" {
			if seen[key] {
				return nil, duparg2(key, ws.args[ws.i])
			}
			seen[key], l.Counted = true, true
			continue
		}
		v, err := ws.next()
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, duparg2(key, v)
		}
		seen[key] = true
		if key == "srh" {
			if segs, err = parseLocalSRH(ws, v, &e.hmac); err != nil {
				return nil, err
			}
			srh = true
			continue
		}
		if err := e.parseLocalOption(ws, key, v); err != nil {
			return nil, err
		}
	}
	ws.i--
	if l.Action == 0 {
		return nil, parseErr("Missing action type")
	}
	if srh {
		var err *cmdErr
		if l.SRH, err = parseSRH(segs, e.hmac, l.Action == seg6.ActionEndB6Encaps); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// seg6localKeys are parse_encap_seg6local's keywords.
var seg6localKeys = map[string]bool{"action": true, "table": true, "vrftable": true, "nh4": true, "nh6": true,
	"iif": true, "oif": true, "count": true, "flavors": true, "srh": true, "endpoint": true}

// parseLocalOption reads option key's value v.
func (e *encapReq) parseLocalOption(ws *argv, key string, v []byte) *cmdErr {
	l := &e.l
	var ok bool
	switch key {
	case "action":
		for a, n := range seg6.ActionNames {
			if n != "" && n == string(v) {
				l.Action = seg6.Action(a)
			}
		}
		if l.Action == 0 {
			return badValue("action", v)
		}
	case "table":
		if l.Table, ok = parseTable(v, false); !ok {
			return invarg("invalid table id\n", v)
		}
	case "vrftable":
		if l.VRFTable, ok = parseTable(v, false); !ok {
			return invarg("invalid vrf table id\n", v)
		}
	case "nh4":
		return unsupported([]byte("nh4")) // an IPv4 nexthop: End.DX4, which urouter has not
	case "nh6":
		a, err := parseAddr(v)
		if err != nil {
			return err
		}
		l.NH6 = a
	case "iif":
		e.iif = v
	case "oif":
		e.oif = v
	case "flavors":
		return parseFlavors(ws, v, &l.Flavors)
	case "endpoint":
		return unsupported([]byte("endpoint")) // End.BPF
	}
	return nil
}

// parseLocalSRH reads `srh segs S1,... [hmac ID]` from v, "segs".
func parseLocalSRH(ws *argv, v []byte, hmac *uint32) ([]byte, *cmdErr) {
	if string(v) != "segs" {
		return nil, invarg("missing \"segs\" attribute for srh\n", v)
	}
	segs, err := ws.next()
	if err != nil {
		return nil, err
	}
	if ws.i+1 < len(ws.args) && string(ws.args[ws.i+1]) == "hmac" {
		ws.i++
		h, err := ws.next()
		if err != nil {
			return nil, err
		}
		*hmac, _ = parseUint32(h)
	}
	return segs, nil
}

// parseFlavors reads `flavors F1,F2 [lblen N] [nflen N]`
// (seg6local_parse_flavors): known flavors once each; the lengths only
// after next-csid. Each length given is sent, else the kernel's default.
func parseFlavors(ws *argv, v []byte, f *seg6.Flavors) *cmdErr {
	names := map[string]uint32{"psp": seg6.FlavorPSP, "usp": seg6.FlavorUSP, "usd": seg6.FlavorUSD,
		"next-csid": seg6.FlavorNextCSID}
	if len(v) == 0 {
		return invarg("invalid \"flavors\" attribute\n", v)
	}
	for _, s := range strings.Split(string(v), ",") {
		bit, ok := names[strings.ToLower(s)]
		if s == "" {
			continue
		}
		if !ok || f.Ops&bit != 0 {
			return invarg("invalid \"flavors\" attribute\n", v)
		}
		f.Ops |= bit
	}
	if f.Ops&seg6.FlavorNextCSID == 0 {
		return nil
	}
	f.LBLen, f.NFLen = seg6.DefaultLBLen, seg6.DefaultNFLen
	for _, k := range [2]string{"lblen", "nflen"} {
		if ws.i+1 >= len(ws.args) || string(ws.args[ws.i+1]) != k {
			continue
		}
		ws.i++
		n, err := ws.next()
		if err != nil {
			return err
		}
		b, ok := parseUint8(n)
		if !ok {
			what := map[string]string{"lblen": "locator-block length", "nflen": "locator-node function length"}[k]
			return invarg("\""+what+"\" value is invalid\n", n)
		}
		if k == "lblen" {
			f.LBLen = b
		} else {
			f.NFLen = b
		}
	}
	return nil
}

// parseUint8 is get_u8 (base 0: 0x hex, 0 octal).
func parseUint8(b []byte) (uint8, bool) {
	n, err := strconv.ParseUint(string(b), 0, 8)
	return uint8(n), err == nil
}
