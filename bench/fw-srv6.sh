#!/usr/bin/env bash
# The Ethernet forwarding lab's router (FW_LINK=eth, run by
# ../shared/bench/forwarding as a cmd: mode, in fw-mid) in SRv6 roles,
# against the same router forwarding plainly, in one run:
#
#   main:      the lab's own configuration ($FW_CONF)
#   encap:     H.Encaps: host B's address (2001:db8:2::2/128) is reached
#              through a segment list of one SID, 2001:db8:2::3, a second
#              address of host B's, whose kernel takes the SRH
#              (seg6_enabled), decapsulates and delivers; answers come
#              back plain. TCP super-packets are cut by urouter after the
#              encapsulation (see docs/srv6.md)
#   encap-dt6: both ends in the router: host B's address through the
#              router's own End.DT6 SID fc00::d6, which decapsulates into
#              table 100 (host B's /64 there): each packet is
#              encapsulated and decapsulated, and leaves as it came
#   inline:    H.Insert: host B's address through B's second address
#              2001:db8:2::3, an SRH inserted; B's kernel advances it to
#              its own address and delivers (super-packets leave whole)
#   end, end-x, end-t: H.Insert through the router's own SID fc00::e
#              (End; End.X nh6 B's second address; End.T in table 100,
#              where host B's /64 is), then B's second address
#              2001:db8:2::3, whose kernel advances the SRH to B's own
#              address and delivers: each packet gets an SRH and is
#              handled by the behaviour in the same router. (End with PSP
#              cannot be measured so: popped at Segments Left 0, the
#              packet to host B's address would be inserted again.)
#
# The kernel on these machines has no seg6 routes, so no kernel runs a
# role beside it; the lab's kernel mode forwards plainly.
# Usage (as the lab's cmd):
#   bash bench/fw-srv6.sh MODE    with UROUTER set
set -euo pipefail
mode=$1

# host_sid: host B takes SRHs to its addresses, and has a second one,
# 2001:db8:2::3, a SID
host_sid() {
	ip netns exec fw-right sh -c 'for f in /proc/sys/net/ipv6/conf/*/seg6_enabled; do echo 1 >"$f"; done'
	local dev
	dev=$(ip -n fw-right -6 -o addr show | awk '/2001:db8:2::2\// {print $2; exit}')
	# deprecated, so that host B does not answer from it (its UDP sockets
	# pick their source by route, and a client would take no answer from it)
	ip -n fw-right addr replace 2001:db8:2::3/64 dev "$dev" nodad preferred_lft 0
}
: "${UROUTER:?the urouter binary}"
conf=$(dirname "$FW_CONF")/fw-srv6-$mode.conf
cp "$FW_CONF" "$conf"
case $mode in
main) ;;
encap | inline)
	host_sid
	echo "route add 2001:db8:2::2/128 encap seg6 mode $mode segs 2001:db8:2::3 dev ethB" >>"$conf"
	;;
end | end-x | end-t)
	host_sid
	case $mode in
	end) action="End" ;;
	end-x) action="End.X nh6 2001:db8:2::3" ;;
	end-t)
		action="End.T table 100"
		echo "route add 2001:db8:2::/64 dev ethB table 100" >>"$conf"
		;;
	esac
	cat >>"$conf" <<-EOC
		route add fc00::e/128 encap seg6local action $action dev ethB
		route add 2001:db8:2::2/128 encap seg6 mode inline segs fc00::e,2001:db8:2::3 dev ethB
	EOC
	;;
encap-dt6)
	cat >>"$conf" <<-'EOC'
		route add 2001:db8:2::/64 dev ethB table 100
		route add fc00::d6/128 encap seg6local action End.DT6 table 100 dev ethB
		route add 2001:db8:2::2/128 encap seg6 mode encap segs fc00::d6 dev ethB
	EOC
	;;
*)
	echo "fw-srv6.sh: main, encap, encap-dt6, inline, end, end-x or end-t" >&2
	exit 2
	;;
esac
exec "$UROUTER" daemon --config "$conf"
