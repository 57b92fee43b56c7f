#!/usr/bin/env bash
# The demo labs: urouter between two hosts, real traffic through it. Run as
# root on a fresh machine: it installs what it needs (iproute2, iperf3,
# ping, traceroute), builds urouter and sets up, with `lab.sh` or
# `lab.sh tun`, TUN links:
#
#   urouter-lab-a (2001:db8:a::2) --tunA-- urouter --tunB-- urouter-lab-b (2001:db8:b::2)
#
# or, with `lab.sh eth`, Ethernet (veth pairs, as a container has them;
# the hosts autoconfigure from urouter's Router Advertisements):
#
#   urouter-lab-a (SLAAC in 2001:db8:a::/64) ==veth== urouter ==veth== urouter-lab-b (2001:db8:b::/64)
#
# then pings through the router and to it, traces the route, pushes TCP
# and UDP with iperf3, prints the figures and the router's counters, and
# tears everything down. LAB_SECONDS (default 5) is the iperf3 duration.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${LAB_SECONDS:-5}
LINK=${1:-tun}
case $LINK in tun | eth) ;; *) echo "usage: lab.sh [tun|eth]" >&2; exit 2 ;; esac
A=urouter-lab-a B=urouter-lab-b R=urouter-lab-r
SOCK=/run/urouter-lab.sock
export PATH=/usr/local/go/bin:$PATH

[ "$(id -u)" = 0 ] || { echo "lab.sh: run me as root (network namespaces, TUN)" >&2; exit 1; }
. bench/install.sh
install_missing iproute2:ip iperf3:iperf3 iputils-ping:ping traceroute:traceroute6
echo "== building urouter"
CGO_ENABLED=0 go build -o bin/urouter ./cmd/urouter
U="bin/urouter --socket $SOCK"

cleanup() {
	[ -n "${DPID:-}" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	for ns in $A $B $R; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
		ip netns del "$ns" 2>/dev/null || true
	done
}
trap cleanup EXIT
cleanup
for ns in $A $B $R; do
	ip netns add "$ns"
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
done

CONF=bench/lab.conf HA=2001:db8:a::2 HB=2001:db8:b::2
if [ "$LINK" = eth ]; then
	CONF=bench/lab-eth.conf
	ip -n $R link add vethA type veth peer name eth0 netns $A
	ip -n $R link add vethB type veth peer name eth0 netns $B
fi
echo "== starting urouter with $CONF"
ip netns exec $R bin/urouter daemon --socket "$SOCK" --config $CONF &
DPID=$!
for _ in $(seq 100); do $U route show >/dev/null 2>&1 && break; sleep 0.05; done
if [ "$LINK" = tun ]; then
	ip -n $A addr add $HA/64 dev tunA nodad
	ip -n $A link set tunA up
	ip -n $A -6 route add default dev tunA
	ip -n $B addr add $HB/64 dev tunB nodad
	ip -n $B link set tunB up
	ip -n $B -6 route add default dev tunB
else
	ip -n $A link set eth0 up # each host solicits urouter's RA and autoconfigures
	ip -n $B link set eth0 up
	slaac() { ip -n "$1" -6 -o addr show dev eth0 scope global dynamic | awk '{sub(/\/.*/, "", $4); print $4; exit}'; }
	for _ in $(seq 100); do HA=$(slaac $A) HB=$(slaac $B); [ -n "$HA" ] && [ -n "$HB" ] && break; sleep 0.1; done
	[ -n "$HA" ] && [ -n "$HB" ] || { echo "lab.sh: the hosts did not autoconfigure" >&2; exit 1; }
	echo "== host a autoconfigured $HA, host b $HB from urouter's RAs"
	ip -n $A -6 addr show dev eth0
	ip -n $A -6 route show
fi
$U -6 route show table all

echo; echo "== ping6 a -> b through the router (hop limit 63: routed)"
ip netns exec $A ping -6 -c 5 -i 0.2 $HB
echo; echo "== ping6 a -> the router"
ip netns exec $A ping -6 -c 2 -i 0.2 2001:db8:b::1
echo; echo "== traceroute6 a -> b"
ip netns exec $A traceroute6 -n -q 1 $HB
echo; echo "== a route to nowhere"
ip netns exec $A ping -6 -c 1 -W 1 2001:db8:dead::1 || true

ip netns exec $B iperf3 -s -D -p 5201 >/dev/null
sleep 0.3
echo; echo "== iperf3 TCP, one stream, ${SECS}s"
tcp=$(ip netns exec $A iperf3 -6 -c $HB -t "$SECS" -J)
echo; echo "== iperf3 UDP, 64-byte datagrams, ${SECS}s"
udp=$(ip netns exec $A iperf3 -6 -c $HB -u -b 0 -l 64 -t "$SECS" -J)
echo
echo "== router counters"
if [ "$LINK" = tun ]; then
	$U -s link show tunA
	$U -s link show tunB
else
	$U -s link show ethA
	$U -s link show ethB
	echo; echo "== urouter's neighbours, and host a's (urouter REACHABLE, a router)"
	$U neigh show
	ip -n $A -6 neigh show
fi
echo
awk -v t="$(echo "$tcp" | grep -m1 -A8 '"sum_received"' | awk -F: '/bits_per_second/ {gsub(/[ ,]/, "", $2); print $2}')" \
    -v u="$(echo "$udp" | grep -A12 '"sum"' | awk -F: '/"packets"/ {gsub(/[ ,]/, "", $2); p=$2} /"lost_packets"/ {gsub(/[ ,]/, "", $2); l=$2} END {print p-l}')" \
    -v s="$SECS" 'BEGIN {
	printf "FIGURES: TCP %.2f Gbit/s through urouter; UDP 64-byte %.0f packets/s received\n", t / 1e9, u / s
}'
