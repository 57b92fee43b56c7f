package feed

import (
	"errors"
	"strconv"
	"syscall"
	"time"

	"urouter/nexthop"
	"urouter/seg6"
)

// Routes and nexthops that ask for a lightweight tunnel other than SRv6's
// seg6 and seg6local (seg6.go) (MPLS, ip6, bpf...: RTA_ENCAP, NHA_ENCAP)
// are refused: urouter does not encapsulate so, and installed without its encapsulation such a
// route would send the traffic out as it came, where zebra meant it to
// leave in a tunnel (a VPN's traffic into the underlay). The kernel
// without the tunnel type's support refuses them the same way.

// encapNames are iproute2's names of the LWTUNNEL_ENCAP_* types.
var encapNames = [...]string{1: "mpls", 2: "ip", 3: "ila", 4: "ip6", 5: "seg6", 6: "bpf", 7: "seg6local",
	8: "rpl", 9: "ioam6", 10: "xfrm"}

// encapError is the refusal of an encapsulation (logged, besides counted).
// It wraps the errno, as the other refusals carry one.
type encapError struct{ err *nexthop.Error }

func (e *encapError) Error() string { return e.err.Error() }
func (e *encapError) Unwrap() error { return e.err }

// errEncap is the refusal of encapsulation type typ, as the kernel words
// it (lwtunnel_valid_encap_type, lwtunnel_build_state), naming the type.
func errEncap(typ uint16) error {
	if int(typ) >= len(encapNames) || encapNames[typ] == "" {
		return &encapError{&nexthop.Error{Errno: syscall.EINVAL, Msg: "Unknown lwt encapsulation type " + strconv.Itoa(int(typ))}}
	}
	return &encapError{&nexthop.Error{Errno: syscall.EOPNOTSUPP, Msg: "lwt encapsulation type not supported: encap " + encapNames[typ]}}
}

func isEncap(err error) bool {
	var e *encapError
	return errors.As(err, &e)
}

// encapOf is the refusal of a route that forwards (unicast) through an
// encapsulation urouter does not do, on any of its paths; nil if it asks
// for none or for SRv6 (seg6.go builds that). A reject route's
// encapsulation moves nothing: it is installed without it.
func encapOf(q *RouteMsg) error {
	if q.Type != syscall.RTN_UNICAST {
		return nil
	}
	if q.Encap && !isSeg6(q.EncapType) {
		return errEncap(q.EncapType)
	}
	for i := range q.Paths {
		if q.Paths[i].Encap && !isSeg6(q.Paths[i].EncapType) {
			return errEncap(q.Paths[i].EncapType)
		}
	}
	return nil
}

func isSeg6(typ uint16) bool { return typ == seg6.EncapTypeSeg6 || typ == seg6.EncapTypeSeg6Local }

// refuseEncap refuses the route of key k, whose encapsulation urouter
// cannot do, with err, and takes away the route it replaces: zebra (or the kernel) has
// replaced it, and the old one forwarding in its stead would send the
// traffic out unencapsulated. The destination is then as if the route had
// never been said (a covering route, or unreachable), as for a new route
// refused.
func (a *Applier) refuseEncap(k routeKey, err error) error {
	if t := a.r.Tables.Get(k.table); t != nil {
		if x := a.txn(t); x.Has(k.prefixes()) {
			_, _ = x.Delete(k.match()) // it is there: Has said so
		}
	}
	if g, ok := a.routes[k]; ok {
		delete(a.routes, k)
		if g != a.gen {
			a.old--
		}
	}
	return err
}

// refuseEncapNexthop is refuseEncap for nexthop object id: the object it
// replaces goes, and with it the routes through it, as a deletion takes
// them.
func (a *Applier) refuseEncapNexthop(id uint32, err error) error {
	if a.r.Nexthops.Get(id) != nil {
		a.commit() // a nexthop deletion walks the tables
		delete(a.nexthops, id)
		_ = a.r.DeleteNexthop(id) // it is there: Get said so
	}
	return err
}

// encapLogEvery is how often the feed logs refused encapsulations: one
// line, then a count of those that followed, per interval.
const encapLogEvery = time.Minute
