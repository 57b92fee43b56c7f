#!/usr/bin/env bash
# fw-rules.sh: print the forwarding lab's router config ($FW_CONF, given
# as $1) followed by 1,024 rules in front of the default ones, of which
# the lab's packets (2001:db8:1::/64 <-> 2001:db8:2::/64, TCP and UDP to
# and from port 5201 and ephemeral ports) match only the last. The others
# select on links the packets do not come in by, on other sources, and on
# UDP source ports below the ephemeral range:
#
#   compare.sh 'urouter=cmd:exec urouter daemon --config "$FW_CONF"' \
#     'urouter-rules=cmd:bash bench/fw-rules.sh "$FW_CONF" >"$FW_CONF.rules" && exec urouter daemon --config "$FW_CONF.rules"'
set -e
cat "$1"
echo "link add nolink type dummy"
echo "route add blackhole default table 100" # a rule matched wrongly drops the packet
for ((i = 1; i < 1024; i++)); do
	case $((i % 3)) in
	0) echo "rule add pref $i iif nolink lookup 100" ;;
	1) printf 'rule add pref %d from 2001:db8:%x::/48 lookup 100\n' "$i" $((0x100 + i)) ;;
	2) echo "rule add pref $i ipproto udp sport $((1000 + 10 * i))-$((1005 + 10 * i)) lookup 100" ;;
	esac
done
echo "rule add pref 1024 from 2001:db8::/32 lookup main"
