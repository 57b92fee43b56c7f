package control

// The sr object (iproute2's ipseg6.c): the source of SRv6's outer
// headers. HMAC keys are refused: urouter signs and checks none, so a
// route with an HMAC is refused too.

func srUsage() *cmdErr {
	return parseErr(`Usage: ip sr { COMMAND | help }
          ip sr hmac show
          ip sr hmac set KEYID ALGO
          ip sr tunsrc show
          ip sr tunsrc set ADDRESS
where  ALGO := { sha1 | sha256 }`)
}

// srCmd is `ip sr` (do_seg6).
func (s *Session) srCmd(args [][]byte) *cmdErr {
	if len(args) == 0 || matches(args[0], "help") {
		return srUsage()
	}
	if !matches(args[0], "hmac") && !matches(args[0], "tunsrc") {
		return invarg("unknown", args[0])
	}
	if len(args) < 2 {
		return incomplete()
	}
	switch {
	case matches(args[0], "hmac"):
		if matches(args[1], "show") || matches(args[1], "set") {
			return unsupported([]byte("sr hmac"))
		}
	case matches(args[0], "tunsrc"):
		switch {
		case matches(args[1], "show"):
			w := s.newPrinter()
			w.begin()
			w.openObject("")
			w.addr("tunsrc", "tunsrc addr %s\n", s.r.DP.TunnelSource())
			w.closeObject()
			w.end()
			return nil
		case matches(args[1], "set"):
			if len(args) < 3 {
				return incomplete()
			}
			a, err := parseAddr(args[2])
			if err != nil {
				return err
			}
			s.r.DP.SetTunnelSource(a)
			return nil
		}
		return invarg("unknown", args[1])
	}
	return invarg("unknown", args[0])
}

// tunsrc writes sr tunsrc set, when it is set.
func (sv *saver) tunsrc() {
	if a := sv.s.r.DP.TunnelSource(); !a.IsUnspecified() {
		sv.line("sr", "sr", "tunsrc", "set", a.String())
	}
}
