#!/usr/bin/env bash
# The Ethernet forwarding lab's router (FW_LINK=eth, run by
# ../shared/bench/forwarding as a cmd: mode, in fw-mid) with its two LANs
# brought to it over trunks, so that tagged and untagged links are
# measured alike, in one run:
#
#   trunk:    fw0 --veth-- fwa [tc: push 802.1Q 100] --> trk --veth-- trk (urouter: trunk.100, trunk.200)
#             fw0 --veth-- fwb [tc: push 802.1Q 200] --> trk        (the tags popped on the way back)
#   untagged: fwa --> trkA (urouter: ethA), fwb --> trkB (ethB): the same
#             redirects, no tag
#
# Each LAN's frames cross the same tc redirect (tools/tagswitch) and one
# more veth in both modes; only the tags, the one trunk (one socket, one
# reader) and the VLAN demux differ. Usage (as the lab's cmd):
#   bash bench/fw-vlan.sh trunk|untagged    with UROUTER and TAGSWITCH set
set -euo pipefail
mode=$1
: "${UROUTER:?the urouter binary}" "${TAGSWITCH:?the tagswitch binary}"
conf=$(dirname "$FW_CONF")/fw-vlan-$mode.conf
case $mode in
trunk)
	ip link add trk type veth peer name trkp
	ip link set trkp up
	"$TAGSWITCH" trkp "$FW_ETH_A=q100" "$FW_ETH_B=q200"
	cat >"$conf" <<CONF
link add trunk type host dev trk
link add link trunk name trunk.100 type vlan id 100
link add link trunk name trunk.200 type vlan id 200
link set trunk up
address add $FW_GW_A/64 dev trunk.100
address add $FW_GW_B/64 dev trunk.200
CONF
	;;
untagged)
	for s in A B; do
		ip link add "trk$s" type veth peer name "trk${s}p"
		ip link set "trk${s}p" up
	done
	"$TAGSWITCH" trkAp "$FW_ETH_A=untagged"
	"$TAGSWITCH" trkBp "$FW_ETH_B=untagged"
	cat >"$conf" <<CONF
link add ethA type host dev trkA
link add ethB type host dev trkB
link set ethA up
link set ethB up
address add $FW_GW_A/64 dev ethA
address add $FW_GW_B/64 dev ethB
CONF
	;;
*)
	echo "fw-vlan.sh: trunk or untagged" >&2
	exit 2
	;;
esac
exec "$UROUTER" daemon --config "$conf"
