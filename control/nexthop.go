package control

import (
	"net/netip"
	"strconv"
	"syscall"

	"urouter/fib6"
	"urouter/nexthop"
)

// The nexthop object: ip nexthop { add | replace | del | get | show |
// list | flush | bucket }, with ipnexthop.c's grammar, output and errors.

func nexthopUsage() *cmdErr {
	return parseErr(`Usage: ip nexthop { list | flush } [ protocol ID ] SELECTOR
       ip nexthop { add | replace } id ID NH [ protocol ID ]
       ip nexthop { get | del } id ID
       ip nexthop bucket list BUCKET_SELECTOR
       ip nexthop bucket get id ID index INDEX
SELECTOR := [ id ID ] [ dev DEV ] [ vrf NAME ] [ master DEV ]
            [ groups ] [ fdb ]
BUCKET_SELECTOR := SELECTOR | [ nhid ID ]
NH := { blackhole | [ via ADDRESS ] [ dev DEV ] [ onlink ]
        [ encap ENCAPTYPE ENCAPHDR ] |
        group GROUP [ fdb ] [ type TYPE [ TYPE_ARGS ] ] }
GROUP := [ <id[,weight]>/<id[,weight]>/... ]
TYPE := { mpath | resilient }
TYPE_ARGS := [ RESILIENT_ARGS ]
RESILIENT_ARGS := [ buckets BUCKETS ] [ idle_timer IDLE ]
                  [ unbalanced_timer UNBALANCED ]
ENCAPTYPE := [ mpls ]
ENCAPHDR := [ MPLSLABEL ]`)
}

func (s *session) nexthopCmd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.nexthopShow(nil, false)
	}
	w, rest := args[0], args[1:]
	switch {
	case is(w, "add"), is(w, "create"):
		return s.nexthopModify(rest, false)
	case is(w, "replace"), is(w, "change"), is(w, "chg"):
		return s.nexthopModify(rest, true)
	case is(w, "delete"), is(w, "del"):
		return s.nexthopDel(rest)
	case matches(w, "list"), matches(w, "show"), is(w, "lst"):
		return s.nexthopShow(rest, false)
	case is(w, "get"):
		return s.nexthopGet(rest)
	case matches(w, "flush"):
		return s.nexthopShow(rest, true)
	case matches(w, "bucket"):
		return s.nexthopBucket(rest)
	case matches(w, "help"):
		return nexthopUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip nexthop help\".", w)
}

// parseNhID reads an id as get_unsigned does: up to 2^32-1.
func parseNhID(v []byte) (uint32, *cmdErr) {
	n, err := strconv.ParseUint(str(v), 0, 32)
	if err != nil {
		return 0, invarg("invalid id value", v)
	}
	return uint32(n), nil
}

func (s *session) nexthopModify(args [][]byte, replace bool) *cmdErr {
	sp := nexthop.Spec{}
	var dev []byte
	blackhole, typeSet := false, false
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch {
		case is(w, "id"):
			v, err := ws.next()
			if err != nil {
				return err
			}
			if sp.ID, err = parseNhID(v); err != nil {
				return err
			}
		case is(w, "dev"):
			v, err := ws.next()
			if err != nil {
				return err
			}
			if s.r.Links.ByName(str(v)) == nil {
				return invarg("Device does not exist\n", v)
			}
			dev = v
		case is(w, "via"):
			v, err := ws.nextVia()
			if err != nil {
				return err
			}
			a, perr := netip.ParseAddr(str(v))
			if perr != nil || a.Zone() != "" {
				return invarg("invalid address", v)
			}
			sp.Gateway = a
		case is(w, "blackhole"):
			blackhole = true
		case is(w, "onlink"):
			sp.Flags |= nexthop.OnLink
		case is(w, "group"):
			v, err := ws.next()
			if err != nil {
				return err
			}
			if sp.Group, err = parseGroup(v); err != nil {
				return err
			}
		case is(w, "type"):
			v, err := ws.next()
			if err != nil {
				return err
			}
			switch {
			case is(v, "mpath"):
				sp.Type = nexthop.Mpath
			case is(v, "resilient"):
				sp.Type = nexthop.ResilientType
				if err := parseResArgs(&sp, &ws); err != nil {
					return err
				}
			default:
				return badValue("type", v)
			}
			typeSet = true
		case matches(w, "protocol"):
			v, err := ws.next()
			if err != nil {
				return err
			}
			p, ok := parseProto(v)
			if !ok {
				return invarg("invalid protocol value", v)
			}
			sp.Proto = uint8(p)
		case is(w, "fdb"), is(w, "encap"), is(w, "vrf"), is(w, "master"):
			return unsupported(w)
		case matches(w, "help"):
			return nexthopUsage()
		default:
			return invarg("", w)
		}
	}
	_ = typeSet
	switch {
	case sp.IsGroup():
		if blackhole || sp.Gateway.IsValid() || dev != nil || s.opt.inet6 { // a group is AF_UNSPEC
			return extack("Invalid family for group.")
		}
	case blackhole:
		if sp.Gateway.IsValid() || dev != nil {
			return extack("Blackhole attribute can not be used with gateway, oif, encap or fdb.")
		}
		sp.Flags |= nexthop.Blackhole
	case dev == nil:
		if !sp.Gateway.IsValid() && !s.opt.inet6 {
			return extack("Invalid address family.")
		}
		return extack("Device attribute required for non-blackhole and non-fdb nexthops.")
	}
	sp.Family = nexthop.FamilyInet
	if s.opt.inet6 || sp.Gateway.Is6() {
		sp.Family = nexthop.FamilyInet6
	}
	if sp.IsGroup() {
		sp.Family = nexthop.FamilyUnspec
	}
	if dev != nil {
		l, err := s.link(dev)
		if err != nil {
			return err
		}
		sp.Link = l.Index
		if err := s.checkNexthopGateway(&sp); err != nil {
			return err
		}
	}
	if _, err := s.r.Nexthops.Add(sp, replace); err != nil {
		return rejected(err)
	}
	return nil
}

// checkNexthopGateway validates a nexthop's gateway on its link as Linux's
// nh_create_ipv6 (through fib6_nh_init) does.
func (s *session) checkNexthopGateway(sp *nexthop.Spec) *cmdErr {
	gw := sp.Gateway
	if !gw.IsValid() {
		return nil
	}
	if !gw.Is6() || gw.Is4In6() {
		return extack("Nexthop has invalid gateway.")
	}
	if gw.IsMulticast() || gw.IsUnspecified() {
		return extack("Invalid gateway address.")
	}
	if gw.IsLoopback() || s.r.Decider.IsLocal(gw) {
		return extack("Gateway can not be a local address.")
	}
	rt := fib6.Route{}
	rt.Nexthop = sp.Nexthop
	return s.checkGateway(&rt, fib6.TableMain, s.r.Tables.Main())
}

// parseGroup reads `A[,W]/B[,W]...`.
func parseGroup(v []byte) ([]nexthop.Entry, *cmdErr) {
	var out []nexthop.Entry
	for _, part := range splitBytes(v, '/') {
		id, w := part, []byte(nil)
		if i := indexByte(part, ','); i >= 0 {
			id, w = part[:i], part[i+1:]
		}
		n, err := strconv.ParseUint(str(id), 0, 32)
		if err != nil || len(id) == 0 {
			return nil, badValue("group", id)
		}
		e := nexthop.Entry{ID: uint32(n), Weight: 1}
		if w != nil {
			wn, err := strconv.ParseUint(str(w), 0, 32)
			if err != nil || wn == 0 || wn > nexthop.MaxWeight {
				return nil, invarg("\"weight\" is invalid\n", w)
			}
			e.Weight = uint32(wn)
		}
		out = append(out, e)
	}
	return out, nil
}

func parseResArgs(sp *nexthop.Spec, ws *argv) *cmdErr {
	for ws.i+1 < len(ws.args) {
		w := ws.args[ws.i+1]
		var dst *uint32
		var set *bool
		max := uint64(1<<32 - 1)
		switch {
		case is(w, "buckets"):
			dst, set, max = &sp.Buckets, &sp.BucketsSet, nexthop.MaxBuckets
		case is(w, "idle_timer"):
			dst, set, max = &sp.IdleTimer, &sp.IdleSet, 42949671
		case is(w, "unbalanced_timer"):
			dst, set, max = &sp.UnbalancedTimer, &sp.UnbSet, 42949671
		default:
			return nil
		}
		ws.i++
		v, err := ws.next()
		if err != nil {
			return err
		}
		n, perr := strconv.ParseUint(str(v), 0, 32)
		if perr != nil || n > max {
			return invarg("invalid "+str(w)+" value", v)
		}
		*dst, *set = uint32(n), true
	}
	return nil
}

func splitBytes(b []byte, sep byte) [][]byte {
	var out [][]byte
	for {
		i := indexByte(b, sep)
		if i < 0 {
			return append(out, b)
		}
		out = append(out, b[:i])
		b = b[i+1:]
	}
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func (s *session) nexthopDel(args [][]byte) *cmdErr {
	id, err := s.nexthopIDArg(args)
	if err != nil {
		return err
	}
	if err := s.r.DeleteNexthop(id); err != nil {
		return rejected(err)
	}
	return nil
}

// nexthopIDArg reads the `id ID` that del and get take.
func (s *session) nexthopIDArg(args [][]byte) (uint32, *cmdErr) {
	var id uint32
	seen := false
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		if !is(w, "id") {
			return 0, invarg("", w)
		}
		v, err := ws.next()
		if err != nil {
			return 0, err
		}
		if id, err = parseNhID(v); err != nil {
			return 0, err
		}
		seen = true
	}
	if !seen {
		return 0, extack("Nexthop id is missing.")
	}
	return id, nil
}

func (s *session) nexthopGet(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return nexthopUsage()
	}
	id, err := s.nexthopIDArg(args)
	if err != nil {
		return err
	}
	o := s.r.Nexthops.Get(id)
	if o == nil {
		return answers(syscall.ENOENT)
	}
	p := s.nhPrinter()
	p.begin()
	p.print(o.Load())
	p.end()
	return nil
}

// nhFilter is a show, flush or bucket selector.
type nhFilter struct {
	id     uint32
	idSet  bool
	link   int32
	groups bool
	proto  uint8
	proto2 bool
	nhid   uint32 // bucket show nhid
}

func (f *nhFilter) selects(v *nexthop.Version) bool {
	switch {
	case f.idSet && v.ID != f.id:
		return false
	case f.groups && !v.IsGroup():
		return false
	case f.link != 0 && (v.IsGroup() || v.Link != f.link):
		return false
	case f.proto2 && v.Proto != f.proto:
		return false
	}
	return true
}

func (s *session) parseNhFilter(args [][]byte, buckets bool) (*nhFilter, *cmdErr) {
	f := &nhFilter{}
	ws := argv{args: args}
	for ; ws.i < len(args); ws.i++ {
		w := args[ws.i]
		switch {
		case is(w, "id"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			if f.id, err = parseNhID(v); err != nil {
				return nil, err
			}
			f.idSet = true
		case is(w, "dev"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			l := s.r.Links.ByName(str(v))
			if l == nil {
				return nil, invarg("Device does not exist\n", v)
			}
			f.link = l.Index
		case is(w, "groups"):
			f.groups = true
		case is(w, "fdb"):
		case buckets && is(w, "nhid"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			if f.nhid, err = parseNhID(v); err != nil {
				return nil, err
			}
		case matches(w, "protocol"):
			v, err := ws.next()
			if err != nil {
				return nil, err
			}
			p, ok := parseProto(v)
			if !ok {
				return nil, invarg("invalid protocol value", v)
			}
			f.proto, f.proto2 = uint8(p), true
		case is(w, "vrf"), is(w, "master"):
			return nil, unsupported(w)
		case matches(w, "help"):
			return nil, nexthopUsage()
		default:
			return nil, invarg("", w)
		}
	}
	return f, nil
}

func (s *session) nexthopShow(args [][]byte, flush bool) *cmdErr {
	f, err := s.parseNhFilter(args, false)
	if err != nil {
		return err
	}
	if flush {
		n := s.r.FlushNexthops(f.selects)
		if n == 0 {
			s.out.WriteString("Nothing to flush\n")
		} else {
			s.out.WriteString("Flushed " + strconv.Itoa(n) + " nexthops\n")
		}
		return nil
	}
	if f.idSet && !f.groups && f.link == 0 && !f.proto2 {
		return s.nexthopGet(args)
	}
	p := s.nhPrinter()
	p.begin()
	for _, v := range s.r.Nexthops.List() {
		if f.selects(v) {
			p.print(v)
		}
	}
	p.end()
	return nil
}

func (s *session) nexthopBucket(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.bucketShow(nil, false)
	}
	w, rest := args[0], args[1:]
	switch {
	case matches(w, "list"), matches(w, "show"), is(w, "lst"):
		return s.bucketShow(rest, false)
	case is(w, "get"):
		return s.bucketShow(rest, true)
	case matches(w, "help"):
		return nexthopUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip nexthop help\".", w)
}

// bucketShow prints resilient groups' buckets (get: one, by `id G index
// I`).
func (s *session) bucketShow(args [][]byte, get bool) *cmdErr {
	index := -1
	if get {
		var rest [][]byte
		for i := 0; i < len(args); i++ {
			if is(args[i], "index") && i+1 < len(args) {
				n, err := strconv.ParseUint(str(args[i+1]), 0, 16)
				if err != nil {
					return invarg("invalid index value", args[i+1])
				}
				index = int(n)
				i++
				continue
			}
			rest = append(rest, args[i])
		}
		args = rest
		if index < 0 {
			return nexthopUsage()
		}
	}
	f, err := s.parseNhFilter(args, true)
	if err != nil {
		return err
	}
	var objs []*nexthop.Object
	if f.idSet {
		o := s.r.Nexthops.Get(f.id)
		if o == nil {
			return answers(syscall.ENOENT)
		}
		if v := o.Load(); !v.IsGroup() || v.Type != nexthop.ResilientType {
			return &cmdErr{msg: "Error: Nexthop group not of type resilient.\nDump terminated", code: 2}
		}
		objs = append(objs, o)
	} else {
		for _, v := range s.r.Nexthops.List() {
			if v.IsGroup() && v.Type == nexthop.ResilientType {
				if o := s.r.Nexthops.Get(v.ID); o != nil {
					objs = append(objs, o)
				}
			}
		}
	}
	var j *jsonw
	if s.opt.json {
		j = &jsonw{w: s.out, pretty: s.opt.pretty}
		j.startArray()
	}
	for _, o := range objs {
		ids, idle, _ := s.r.Nexthops.Buckets(o)
		if get && index >= len(ids) {
			return extack("Bucket index out of bounds.")
		}
		for i, nh := range ids {
			if get && i != index || f.nhid != 0 && nh != f.nhid {
				continue
			}
			if f.link != 0 {
				if m := s.r.Nexthops.Get(nh); m == nil || m.Load().Link != f.link {
					continue
				}
			}
			secs := strconv.FormatFloat(float64(idle[i]/10)/100, 'f', -1, 64)
			if j != nil {
				j.startObject()
				j.uint("id", uint64(o.ID()))
				j.name("bucket")
				j.startObject()
				j.uint("index", uint64(i))
				j.name("idle_time")
				j.raw(secs)
				j.uint("nhid", uint64(nh))
				j.endObject()
				j.strings("flags", nil)
				j.endObject()
				continue
			}
			s.out.WriteString("id " + strconv.FormatUint(uint64(o.ID()), 10) + " index " + strconv.Itoa(i) +
				" idle_time " + secs + " nhid " + strconv.FormatUint(uint64(nh), 10) + " \n")
		}
	}
	if j != nil {
		j.endArray()
		s.out.WriteByte('\n')
	}
	return nil
}

// nhPrinter prints nexthop objects as ipnexthop.c's print_nexthop does.
type nhPrinter struct {
	s *session
	j *jsonw
}

func (s *session) nhPrinter() *nhPrinter {
	p := &nhPrinter{s: s}
	if s.opt.json {
		p.j = &jsonw{w: s.out, pretty: s.opt.pretty}
	}
	return p
}

func (p *nhPrinter) begin() {
	if p.j != nil {
		p.j.startArray()
	}
}

func (p *nhPrinter) end() {
	if p.j != nil {
		p.j.endArray()
		p.s.out.WriteByte('\n')
	}
}

func (p *nhPrinter) devName(link int32) string {
	if l := p.s.r.Links.ByIndex(link); l != nil {
		return l.Name
	}
	return "if" + strconv.Itoa(int(link))
}

// scope is the nexthop's scope as Linux reports it: link for a gateway,
// host for an IPv4 nexthop on a link alone, global otherwise.
func nhScope(v *nexthop.Version) string {
	switch {
	case v.IsGroup() || v.Flags&nexthop.Blackhole != 0:
		return "global"
	case v.Gateway.IsValid() || v.Family == nexthop.FamilyInet6:
		return "link"
	}
	return "host"
}

func (p *nhPrinter) print(v *nexthop.Version) {
	d := p.s.opt.details
	scope := nhScope(v)
	if j := p.j; j != nil {
		j.startObject()
		j.uint("id", uint64(v.ID))
		if v.IsGroup() {
			j.name("group")
			j.startArray()
			for _, e := range v.Group {
				j.startObject()
				j.uint("id", uint64(e.ID))
				if e.Weight != 1 {
					j.uint("weight", uint64(e.Weight))
				}
				j.endObject()
			}
			j.endArray()
			if v.Type == nexthop.ResilientType {
				j.str("type", "resilient")
				j.name("resilient_args")
				j.startObject()
				j.uint("buckets", uint64(v.Buckets))
				j.uint("idle_timer", uint64(v.IdleTimer))
				j.uint("unbalanced_timer", uint64(v.UnbalancedTimer))
				j.uint("unbalanced_time", uint64(p.unbalanced(v)))
				j.endObject()
			}
		}
		if v.Gateway.IsValid() {
			j.str("gateway", v.Gateway.String())
		}
		if !v.IsGroup() && v.Flags&nexthop.Blackhole == 0 {
			j.str("dev", p.devName(v.Link))
		}
		if scope != "global" || d {
			j.str("scope", scope)
		}
		if v.Flags&nexthop.Blackhole != 0 {
			j.name("blackhole")
			j.raw("null")
		}
		if v.Proto != 0 || d {
			j.str("protocol", protoString(fib6.Proto(v.Proto)))
		}
		j.strings("flags", pathFlags(v.Nexthop))
		j.endObject()
		return
	}
	b := strconv.AppendUint([]byte("id "), uint64(v.ID), 10)
	b = append(b, ' ')
	if v.IsGroup() {
		b = append(b, "group "...)
		for i, e := range v.Group {
			if i > 0 {
				b = append(b, '/')
			}
			b = strconv.AppendUint(b, uint64(e.ID), 10)
			if e.Weight != 1 {
				b = strconv.AppendUint(append(b, ','), uint64(e.Weight), 10)
			}
		}
		b = append(b, ' ')
		if v.Type == nexthop.ResilientType {
			b = strconv.AppendUint(append(b, "type resilient buckets "...), uint64(v.Buckets), 10)
			b = strconv.AppendUint(append(b, " idle_timer "...), uint64(v.IdleTimer), 10)
			b = strconv.AppendUint(append(b, " unbalanced_timer "...), uint64(v.UnbalancedTimer), 10)
			b = strconv.AppendUint(append(b, " unbalanced_time "...), uint64(p.unbalanced(v)), 10)
			b = append(b, ' ')
		}
	}
	if v.Gateway.IsValid() {
		b = append(v.Gateway.AppendTo(append(b, "via "...)), ' ')
	}
	if !v.IsGroup() && v.Flags&nexthop.Blackhole == 0 {
		b = append(append(append(b, "dev "...), p.devName(v.Link)...), ' ')
	}
	if scope != "global" || d {
		b = append(append(append(b, "scope "...), scope...), ' ')
	}
	if v.Flags&nexthop.Blackhole != 0 {
		b = append(b, "blackhole "...)
	}
	if v.Proto != 0 || d {
		b = append(append(append(b, "proto "...), protoString(fib6.Proto(v.Proto))...), ' ')
	}
	for _, f := range pathFlags(v.Nexthop) {
		b = append(append(b, f...), ' ')
	}
	p.s.out.Write(append(b, '\n'))
}

// unbalanced is how long a resilient group has been unbalanced, in
// seconds.
func (p *nhPrinter) unbalanced(v *nexthop.Version) int64 {
	o := p.s.r.Nexthops.Get(v.ID)
	if o == nil {
		return 0
	}
	_, _, unb := p.s.r.Nexthops.Buckets(o)
	return unb / 1000
}
