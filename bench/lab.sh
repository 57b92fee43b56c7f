#!/usr/bin/env bash
# The demo lab: urouter between two hosts on TUN links, real traffic
# through it. Run as root on a fresh machine: it installs what it needs
# (iproute2, iperf3, ping, traceroute), builds urouter, sets up
#
#   urouter-lab-a (2001:db8:a::2) --tunA-- urouter --tunB-- urouter-lab-b (2001:db8:b::2)
#
# pings through the router and to it, traces the route, pushes TCP and
# UDP with iperf3, prints the figures and the router's counters, and
# tears everything down. LAB_SECONDS (default 5) is the iperf3 duration.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${LAB_SECONDS:-5}
A=urouter-lab-a B=urouter-lab-b R=urouter-lab-r
SOCK=/run/urouter-lab.sock
export PATH=/usr/local/go/bin:$PATH

[ "$(id -u)" = 0 ] || { echo "lab.sh: run me as root (network namespaces, TUN)" >&2; exit 1; }
need=()
for p in iproute2:ip iperf3:iperf3 iputils-ping:ping traceroute:traceroute6; do
	command -v "${p#*:}" >/dev/null || need+=("${p%%:*}")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "== installing ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
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

echo "== starting urouter with bench/lab.conf"
ip netns exec $R bin/urouter daemon --socket "$SOCK" --config bench/lab.conf &
DPID=$!
for _ in $(seq 100); do $U route show >/dev/null 2>&1 && break; sleep 0.05; done
ip -n $A addr add 2001:db8:a::2/64 dev tunA nodad
ip -n $A link set tunA up
ip -n $A -6 route add default dev tunA
ip -n $B addr add 2001:db8:b::2/64 dev tunB nodad
ip -n $B link set tunB up
ip -n $B -6 route add default dev tunB
$U -6 route show table all

echo; echo "== ping6 a -> b through the router (hop limit 63: routed)"
ip netns exec $A ping -6 -c 5 -i 0.2 2001:db8:b::2
echo; echo "== ping6 a -> the router"
ip netns exec $A ping -6 -c 2 -i 0.2 2001:db8:b::1
echo; echo "== traceroute6 a -> b"
ip netns exec $A traceroute6 -n -q 1 2001:db8:b::2
echo; echo "== a route to nowhere"
ip netns exec $A ping -6 -c 1 -W 1 2001:db8:dead::1 || true

ip netns exec $B iperf3 -s -D -p 5201 >/dev/null
sleep 0.3
echo; echo "== iperf3 TCP, one stream, ${SECS}s"
tcp=$(ip netns exec $A iperf3 -6 -c 2001:db8:b::2 -t "$SECS" -J)
echo; echo "== iperf3 UDP, 64-byte datagrams, ${SECS}s"
udp=$(ip netns exec $A iperf3 -6 -c 2001:db8:b::2 -u -b 0 -l 64 -t "$SECS" -J)
echo
echo "== router counters"
$U -s link show tunA
$U -s link show tunB
echo
awk -v t="$(echo "$tcp" | grep -m1 -A8 '"sum_received"' | awk -F: '/bits_per_second/ {gsub(/[ ,]/, "", $2); print $2}')" \
    -v u="$(echo "$udp" | grep -A12 '"sum"' | awk -F: '/"packets"/ {gsub(/[ ,]/, "", $2); p=$2} /"lost_packets"/ {gsub(/[ ,]/, "", $2); l=$2} END {print p-l}')" \
    -v s="$SECS" 'BEGIN {
	printf "FIGURES: TCP %.2f Gbit/s through urouter; UDP 64-byte %.0f packets/s received\n", t / 1e9, u / s
}'
