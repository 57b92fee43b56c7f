#!/usr/bin/env bash
# The Ethernet forwarding lab's router (FW_LINK=eth, run by
# ../shared/bench/forwarding as a cmd: mode, in fw-mid) with its two links
# in a VRF, against the same router with them in the default one, in one
# run:
#
#   main: the lab's own configuration ($FW_CONF)
#   vrf:  VRF red (table 10) made first, both links enslaved to it before
#         their addresses: every packet is routed as coming in by red,
#         through the l3mdev rule (1000), in table 10
#
# Only the domain differs: the same links, sockets and connected routes.
# Usage (as the lab's cmd):
#   bash bench/fw-vrf.sh main|vrf    with UROUTER set
set -euo pipefail
mode=$1
: "${UROUTER:?the urouter binary}"
conf=$(dirname "$FW_CONF")/fw-vrf-$mode.conf
case $mode in
main) cp "$FW_CONF" "$conf" ;;
vrf)
	{
		echo "link add red type vrf table 10"
		echo "link set red up"
		grep '^link add' "$FW_CONF"
		echo "link set ethA master red"
		echo "link set ethB master red"
		grep -v '^link add' "$FW_CONF"
	} >"$conf"
	;;
*)
	echo "fw-vrf.sh: main or vrf" >&2
	exit 2
	;;
esac
exec "$UROUTER" daemon --config "$conf"
