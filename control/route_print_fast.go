package control

import (
	"bufio"
	"bytes"
	"net/netip"

	"urouter/fib6"
	"urouter/nexthop"
)

// A dump prints the same attributes on most of its lines: a full table's
// routes mostly share one or a few of the table's copies of them (see
// fib6.Table.DumpAttrs). What a route prints besides its destination
// depends on nothing else (its type, paths, table, protocol, metric and
// flags; the link names and nexthop object as they are now), so the text
// printer renders each copy once, through add, and prints every route of
// it as that text around the destination. Routes that print a time
// (expires), JSON, and rotated paths (route get) take add itself.

// printed is what add made of one copy of a route's attributes: the text
// before its destination and after it, and the nexthop object's version
// it showed (a replace of the object makes a new one).
type printed struct {
	head, tail []byte
	obj        *nexthop.Version
}

// printCache holds what the printer made of the attributes it met, for
// one show: the last one first, then by pointer.
type printCache struct {
	last    *fib6.Attrs
	lastOut *printed
	by      map[*fib6.Attrs]*printed
	scratch bytes.Buffer
	w       *bufio.Writer
	dst     []byte // render's
}

// maxPrinted bounds the cache: a table whose routes share little is
// printed by add almost as fast, and the cache then starts again.
const maxPrinted = 4096

// addAttrs prints the route of destination dst and attributes a, the
// table's own copy of them.
func (p *routePrinter) addAttrs(dst netip.Prefix, a *fib6.Attrs) {
	if p.out.j != nil || a.Expires != 0 || p.rotate != 0 || p.s.printUncached {
		p.add(fib6.Route{Dst: dst, Attrs: *a})
		return
	}
	c := &p.cache
	var obj *nexthop.Version
	if a.Object != nil {
		obj = a.Object.Load()
	}
	pr := c.lastOut
	if c.last != a || pr.obj != obj {
		pr = c.by[a]
		if pr == nil || pr.obj != obj {
			pr = p.render(dst, a, obj)
		}
		c.last, c.lastOut = a, pr
	}
	// the line is made in the writer's own free space, and so its Write
	// copies nothing (but when the line does not fit and is made apart)
	w := p.out.w
	b := append(w.AvailableBuffer(), pr.head...)
	b = appendDst(b, dst)
	w.Write(append(b, pr.tail...))
}

// render prints the route through add into the cache's scratch buffer
// and keeps the text on either side of its destination.
func (p *routePrinter) render(dst netip.Prefix, a *fib6.Attrs, obj *nexthop.Version) *printed {
	c := &p.cache
	if c.w == nil {
		c.w = bufio.NewWriter(&c.scratch)
	}
	if c.by == nil || len(c.by) >= maxPrinted {
		c.by = map[*fib6.Attrs]*printed{}
	}
	c.scratch.Reset()
	out := p.out.w
	p.out.w = c.w
	p.add(fib6.Route{Dst: dst, Attrs: *a})
	p.out.w = out
	_ = c.w.Flush() // into memory
	line := c.scratch.Bytes()
	d := appendDst(c.dst[:0], dst)
	// what comes before the destination is words ("Deleted ", a type),
	// never an address: the first match is the destination
	i := bytes.Index(line, d)
	pr := &printed{head: bytes.Clone(line[:i]), tail: bytes.Clone(line[i+len(d):]), obj: obj}
	c.by[a] = pr
	return pr
}
