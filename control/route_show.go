package control

import (
	"bufio"
	"net/netip"
	"strconv"
	"time"

	"urouter/fib6"
	"urouter/nexthop"
)

// showFilter is a parsed SELECTOR of show, flush and save.
type showFilter struct {
	fib6.Filter
	table     uint32 // 0 (none given, a parsed table never is): main; tableAll
	metric    uint32
	metricSet bool
	cached    bool         // selects nothing: the router has no cached routes (nor a tos)
	prefsrc   netip.Prefix // src: routes with a preferred source in it
	monitor   bool         // printing for a monitor: every table shows
	noLocal   bool         // local routes are not shown (`vrf NAME`)
}

func (f *showFilter) selects(r *fib6.Attrs) bool {
	return !f.cached && (!f.metricSet || r.Metric == f.metric) && (!f.noLocal || r.Type != fib6.Local) &&
		(!f.prefsrc.IsValid() || r.PrefSrc.IsValid() && f.prefsrc.Contains(r.PrefSrc))
}

// parseSelector reads a SELECTOR in iproute2's order of checks
// (iproute_list_flush_or_save).
func (s *Session) parseSelector(args [][]byte) (*showFilter, *cmdErr) {
	f := &showFilter{}
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		var err *cmdErr
		switch {
		case matches(w, "table"):
			err = f.parseTable(&ws)
		case matches(w, "vrf"):
			var v []byte
			if v, err = ws.next(); err == nil {
				f.table, err = s.vrfTable(v)
				f.noLocal = true // iproute2's typemask for vrf: no local routes
			}
		case matches(w, "cached") || matches(w, "cloned"):
			f.cached = true // the router keeps no cached routes
		case is(w, "tos") || matches(w, "dsfield"):
			err = f.parseTos(&ws)
		case matches(w, "protocol"):
			err = f.parseProto(&ws)
		case matches(w, "scope"):
			var v []byte
			if v, err = ws.next(); err == nil && !is(v, "all") && !is(v, "global") && !is(v, "universe") && !is(v, "0") {
				err = invarg("invalid \"scope\"\n", v)
			}
		case matches(w, "type"):
			err = f.parseType(&ws)
		case is(w, "dev") || is(w, "oif"):
			err = s.parseDev(f, &ws)
		case is(w, "iif"), is(w, "mark"), matches(w, "realms"):
			return nil, unsupported(w)
		case matches(w, "metric") || matches(w, "priority") || is(w, "preference"):
			f.metric, err = ws.nextUint32("metric")
			f.metricSet = true
		case is(w, "via"):
			var v []byte
			if v, err = ws.nextVia(); err == nil {
				f.Gateway, err = parseAddr(v)
			}
		case is(w, "src"):
			var v []byte
			if v, err = ws.next(); err == nil {
				f.prefsrc, err = parsePrefix(v)
			}
		case matches(w, "from"):
			err = f.parseFrom(&ws)
		default:
			err = f.parsePrefix(&ws, w)
		}
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (s *Session) parseDev(f *showFilter, ws *argv) *cmdErr {
	v, err := ws.next()
	if err != nil {
		return err
	}
	l, err := s.routeLink(v)
	if err != nil {
		return err
	}
	f.Link = l.Index // never 0
	return nil
}

func (f *showFilter) parseTable(ws *argv) *cmdErr {
	v, err := ws.next()
	if err != nil {
		return err
	}
	t, ok := parseTable(v, true)
	switch {
	case ok:
	case is(v, "cache"):
		f.cached = true
		return nil
	case is(v, "help"):
		return routeUsage()
	default:
		if n, num := parseUint32(v); num && n == 0 {
			t = tableAll // iproute2's table 0 is every table
			break
		}
		return invarg("table id value is invalid\n", v)
	}
	f.table = t
	return nil
}

// parseTos reads `tos DSFIELD`: the router's routes have none (Linux
// has no IPv6 route by traffic class), so any other than 0 selects none.
func (f *showFilter) parseTos(ws *argv) *cmdErr {
	v, err := ws.next()
	if err != nil {
		return err
	}
	ds, ok := parseDSField(v)
	if !ok {
		return invarg("TOS value is invalid\n", v)
	}
	f.cached = f.cached || ds != 0
	return nil
}

func (f *showFilter) parseProto(ws *argv) *cmdErr {
	v, err := ws.next()
	if err != nil || is(v, "all") {
		return err
	}
	p, ok := parseProto(v)
	if !ok {
		return invarg("invalid \"protocol\"\n", v)
	}
	f.Proto = p
	return nil
}

func (f *showFilter) parseType(ws *argv) *cmdErr {
	v, err := ws.next()
	if err != nil {
		return err
	}
	t, ok := parseType(v)
	if !ok {
		return invarg("node type value is invalid\n", v)
	}
	if t == 0 {
		f.cached = true // a type the router has no routes of
	}
	f.Type = t
	return nil
}

// parseFrom reads `from [root|match|exact] PREFIX`.
func (f *showFilter) parseFrom(ws *argv) *cmdErr {
	v, err := ws.next()
	if err != nil {
		return err
	}
	if matches(v, "root") || matches(v, "match") || matches(v, "exact") {
		if v, err = ws.next(); err != nil {
			return err
		}
	}
	f.Src, err = parsePrefix(v)
	return err
}

// parsePrefix reads the word that is no keyword: `[to] [root|match|exact]
// PREFIX`, exact by default, all for every prefix.
func (f *showFilter) parsePrefix(ws *argv, w []byte) *cmdErr {
	if matches(w, "to") {
		v, err := ws.next()
		if err != nil {
			return err
		}
		w = v
	}
	var target *netip.Prefix
	switch {
	case matches(w, "root"):
		target = &f.Root
	case matches(w, "match"):
		target = &f.Match
	case matches(w, "exact"):
		target = &f.Exact
	}
	if target != nil {
		v, err := ws.next()
		if err != nil {
			return err
		}
		w = v
	} else {
		target = &f.Exact
	}
	if matches(w, "help") {
		return routeUsage()
	}
	if is(w, "all") {
		return nil // everything
	}
	p, err := parsePrefix(w)
	if err != nil {
		return err
	}
	*target = p
	return nil
}

// tables returns the tables a selector names; main by default.
func (s *Session) tables(f *showFilter) ([]*fib6.Table, *cmdErr) {
	switch {
	case f.table == tableAll:
		return s.r.Tables.All(), nil
	case f.table != 0:
		t := s.r.Tables.Get(f.table)
		if t == nil {
			return nil, &cmdErr{msg: "Error: ipv6: FIB table does not exist.\nDump terminated", code: 2}
		}
		return []*fib6.Table{t}, nil
	}
	return []*fib6.Table{s.r.Tables.Main()}, nil
}

// selection parses a selector and finds its tables; the session's open
// transaction is published first, so that what it shows is what it did.
func (s *Session) selection(args [][]byte) (*showFilter, []*fib6.Table, *cmdErr) {
	f, err := s.parseSelector(args)
	if err != nil {
		return nil, nil, err
	}
	ts, err := s.tables(f)
	if err != nil {
		return nil, nil, err
	}
	s.commit()
	return f, ts, nil
}

func (s *Session) routeShow(args [][]byte, flush bool) *cmdErr {
	f, ts, err := s.selection(args)
	if err != nil {
		return err
	}
	if flush {
		if len(args) == 0 {
			return &cmdErr{msg: "\"ip route flush\" requires arguments.", code: 1}
		}
		n := 0
		for _, t := range ts {
			if !f.cached {
				n += t.Flush(f.Filter)
			}
		}
		s.flushed(n)
		return nil
	}
	defer s.bigOut(ts)()
	p := s.printer(f)
	p.begin()
	for _, t := range ts {
		p.table = t.ID()
		p.cache = printCache{} // what it prints names the table
		t.DumpAttrs(f.Filter, func(dst netip.Prefix, a *fib6.Attrs) bool {
			if f.selects(a) {
				p.addAttrs(dst, a)
			}
			return true
		})
	}
	p.end()
	return nil
}

// bigOut gives a show of many routes a big output buffer, so that it goes
// out in frames of bigFrame bytes (one write and one read each), not of
// the session's WriteBuf, and returns what ends it. The session's own
// buffer is emptied first: a write as large as it goes through it
// whole.
func (s *Session) bigOut(ts []*fib6.Table) func() {
	n := 0
	for _, t := range ts {
		n += t.Len()
	}
	if n < bigFrame/64 {
		return func() {}
	}
	s.flush()
	small := s.out
	s.out = bufio.NewWriterSize(small, bigFrame)
	return func() {
		_ = s.out.Flush() // into small, whose own flush reports
		s.out = small
	}
}

// bigFrame is the frame of a long show: a dump of a full table is ~14 MB.
const bigFrame = 256 << 10

// routeSave writes the selected routes as commands that a batch, a config
// file or `route restore` turns back into the same routes. Routes the
// router derives from its addresses (proto kernel) are left out: the
// `address add` commands bring them back.
func (s *Session) routeSave(args [][]byte) *cmdErr {
	f, ts, err := s.selection(args)
	if err != nil {
		return err
	}
	var b []byte
	for _, t := range ts {
		var last fib6.Route
		first := true
		t.Dump(f.Filter, func(r fib6.Route) bool {
			if r.Proto == fib6.ProtoKernel || !f.selects(&r.Attrs) {
				return true
			}
			verb := "route add "
			if !first && r.Dst == last.Dst && r.Src == last.Src && r.Metric == last.Metric {
				verb = "route append "
			}
			first, last = false, r
			b = append(b[:0], verb...)
			b = s.appendRouteSpec(b, t.ID(), r)
			b = append(b, '\n')
			s.out.Write(b)
			return true
		})
	}
	return nil
}

// appendRouteSpec writes r in the words of `route add`.
func (s *Session) appendRouteSpec(b []byte, table uint32, r fib6.Route) []byte {
	if r.Type != fib6.Unicast {
		b = append(append(b, r.Type.String()...), ' ')
	}
	b = appendDst(b, r.Dst)
	if r.Src.IsValid() {
		b = r.Src.AppendTo(append(b, " from "...))
	}
	if r.Object != nil {
		b = strconv.AppendUint(append(b, " nhid "...), uint64(r.Object.ID()), 10)
	}
	b = s.appendPath(s.appendEncap(b, r.Nexthop.Encap), r.Nexthop, false)
	b = append(append(b, " table "...), tableString(table)...)
	b = append(append(b, " proto "...), protoString(r.Proto)...)
	b = strconv.AppendUint(append(b, " metric "...), uint64(r.Metric), 10)
	if r.Nexthop.Flags&nexthop.OnLink != 0 {
		b = append(b, " onlink"...)
	}
	if r.MTU != 0 {
		b = strconv.AppendUint(append(b, " mtu "...), uint64(r.MTU), 10)
	}
	if r.PrefSrc.IsValid() {
		b = r.PrefSrc.AppendTo(append(b, " src "...))
	}
	if r.Expires != 0 {
		b = strconv.AppendInt(append(b, " expires "...), max(0, (r.Expires-time.Now().UnixNano())/1e9), 10)
	}
	if r.Group != nil { // the paths end the command
		for _, m := range r.Group.Members() {
			b = s.appendPath(s.appendEncap(append(b, " nexthop"...), m.Encap), m.Nexthop, true)
			b = strconv.AppendUint(append(b, " weight "...), uint64(m.Weight), 10)
		}
	}
	return b
}

// appendPath writes a path as `via A dev D`; onlink with it if withFlags
// (a route's own onlink comes later in its words).
func (s *Session) appendPath(b []byte, nh nexthop.Nexthop, withFlags bool) []byte {
	if nh.Gateway.IsValid() {
		b = nh.Gateway.AppendTo(append(b, " via "...))
	}
	if l := s.r.Links.ByIndex(nh.Link); l != nil && nh.Link != 0 {
		b = append(append(b, " dev "...), l.Name...)
	}
	if withFlags && nh.Flags&nexthop.OnLink != 0 {
		b = append(b, " onlink"...)
	}
	return b
}

// flushed reports a flush of n entries as ip -s does (one round: the
// router deletes them at once).
func (s *Session) flushed(n int) {
	if s.opt.Stats == 0 {
		return
	}
	if n == 0 {
		s.out.WriteString("Nothing to flush.\n")
		return
	}
	s.out.WriteString("\n*** Round 1, deleting " + strconv.Itoa(n) + " entries ***\n*** Flush is complete after 1 round ***\n")
}
