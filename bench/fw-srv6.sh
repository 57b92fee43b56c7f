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
#
# The kernel on these machines has no seg6 routes, so no kernel runs a
# role beside it; the lab's kernel mode forwards plainly.
# Usage (as the lab's cmd):
#   bash bench/fw-srv6.sh main|encap|encap-dt6    with UROUTER set
set -euo pipefail
mode=$1
: "${UROUTER:?the urouter binary}"
conf=$(dirname "$FW_CONF")/fw-srv6-$mode.conf
cp "$FW_CONF" "$conf"
case $mode in
main) ;;
encap)
	# host B takes SRHs to its addresses, and has the SID
	ip netns exec fw-right sh -c 'for f in /proc/sys/net/ipv6/conf/*/seg6_enabled; do echo 1 >"$f"; done'
	dev=$(ip -n fw-right -6 -o addr show | awk '/2001:db8:2::2\// {print $2; exit}')
	# deprecated, so that host B does not answer from it (its UDP sockets
	# pick their source by route, and a client would take no answer from it)
	ip -n fw-right addr replace 2001:db8:2::3/64 dev "$dev" nodad preferred_lft 0
	echo "route add 2001:db8:2::2/128 encap seg6 mode encap segs 2001:db8:2::3 dev ethB" >>"$conf"
	;;
encap-dt6)
	cat >>"$conf" <<-'EOC'
		route add 2001:db8:2::/64 dev ethB table 100
		route add fc00::d6/128 encap seg6local action End.DT6 table 100 dev ethB
		route add 2001:db8:2::2/128 encap seg6 mode encap segs fc00::d6 dev ethB
	EOC
	;;
*)
	echo "fw-srv6.sh: main, encap or encap-dt6" >&2
	exit 2
	;;
esac
exec "$UROUTER" daemon --config "$conf"
