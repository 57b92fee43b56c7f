#!/usr/bin/env bash
# The routing-daemon demo: FRR programs urouter over FPM. Run as root on a
# fresh machine: it installs what it needs (Debian's frr and bird2,
# iproute2, ping, traceroute), builds urouter and sets up
#
#   urouter-frr-p (BIRD, AS 65001) ==veth== lan1 [urouter, mirrors km1 km2; zebra + bgpd AS 65000] lan2 ==veth== urouter-frr-h
#   urouter-frr-u (FRR, AS 65002)  ==veth== lan3 [km3: a TAP mirror; BGP unnumbered, no address but link-local]
#
# bgpd peers with BIRD across urouter's link (through the mirror km1);
# BIRD announces LAB_PREFIXES (1000) prefixes and its loopback; zebra
# streams them to urouter over FPM. bgpd also peers with a second FRR by
# BGP unnumbered on lan3 (`neighbor km3 interface`: each side learns the
# other's link-local address from its Router Advertisements, which cross
# the mirror both ways). Then traffic from the host to both peers'
# loopbacks through urouter, zebra and bgpd killed and restarted while
# traffic flows, and everything torn down.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${LAB_PREFIXES:-1000}
P=urouter-frr-p H=urouter-frr-h R=urouter-frr-r UN=urouter-frr-u
SOCK=/run/urouter-frr.sock
export PATH=/usr/local/go/bin:$PATH

[ "$(id -u)" = 0 ] || { echo "lab-frr.sh: run me as root (network namespaces, TUN)" >&2; exit 1; }
. bench/install.sh
install_missing iproute2:ip iputils-ping:ping traceroute:traceroute6 frr:/usr/lib/frr/zebra bird2:bird
echo "== building urouter"
CGO_ENABLED=0 go build -o bin/urouter ./cmd/urouter
U="ip netns exec $R bin/urouter --socket $SOCK"

D=""
cleanup() {
	for ns in $P $H $R $UN; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
		ip netns del "$ns" 2>/dev/null || true
	done
	[ -z "$D" ] || rm -rf "$D"
}
trap cleanup EXIT
cleanup
D=$(mktemp -d /tmp/urouter-frr.XXXXXX) && chmod 755 "$D"
for ns in $P $H $R $UN; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip -n $R link add vethP type veth peer name eth0 netns $P
ip -n $R link add vethH type veth peer name eth0 netns $H
ip -n $R link add vethU type veth peer name eth0 netns $UN
ip -n $UN link set eth0 up
ip -n $UN addr add 2001:db8:fe::1/128 dev lo
ip netns exec $UN sysctl -qw net.ipv6.conf.all.forwarding=1
for h in "$P 1" "$H 2"; do
	set -- $h
	ip netns exec "$1" sysctl -qw net.ipv6.conf.eth0.accept_dad=0
	ip -n "$1" addr add "2001:db8:d$2::2/64" dev eth0 nodad
	ip -n "$1" link set eth0 up
	ip -n "$1" -6 route add default via "2001:db8:d$2::1"
done
ip -n $P addr add 2001:db8:ff::1/128 dev lo

echo "== urouter, its links mirrored into the kernel as km1, km2 (TUNs) and km3 (a TAP)"
cat >"$D/urouter.conf" <<EOF
link add lan1 type host dev vethP
link add lan2 type host dev vethH
link add lan3 type host dev vethU
link set lan1 up
link set lan2 up
link set lan3 up
address add 2001:db8:d1::1/64 dev lan1
address add 2001:db8:d2::1/64 dev lan2
link set lan1 mirror km1
link set lan2 mirror km2
link set lan3 mirror km3 type tap
EOF
ip netns exec $R bin/urouter daemon --socket $SOCK --config "$D/urouter.conf" --fpm 127.0.0.1:2620 >"$D/urouter.log" 2>&1 &
until $U link show >/dev/null 2>&1; do sleep 0.1; done
$U link show lan1

echo "== FRR: zebra with dplane_fpm_nl, bgpd; BIRD announcing $N prefixes"
cat >"$D/zebra.conf" <<EOF
hostname urouter-frr
fpm address 127.0.0.1 port 2620
interface km3
 ipv6 nd ra-interval 3
 no ipv6 nd suppress-ra
EOF
cat >"$D/bgpd.conf" <<EOF
hostname urouter-frr
router bgp 65000
 bgp router-id 192.0.2.1
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 neighbor 2001:db8:d1::2 remote-as 65001
 neighbor 2001:db8:d1::2 timers connect 1
 neighbor km3 interface remote-as external
 neighbor km3 timers connect 1
 address-family ipv6 unicast
  neighbor 2001:db8:d1::2 activate
  neighbor km3 activate
  redistribute connected
 exit-address-family
EOF
# The unnumbered peer: FRR in its own namespace and pathspace (-N).
mkdir -p "$D/u" && chmod 755 "$D/u"
cat >"$D/u/zebra.conf" <<EOF
hostname urouter-frr-u
interface eth0
 ipv6 nd ra-interval 3
 no ipv6 nd suppress-ra
EOF
cat >"$D/u/bgpd.conf" <<EOF
hostname urouter-frr-u
router bgp 65002
 bgp router-id 192.0.2.3
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 neighbor eth0 interface remote-as external
 neighbor eth0 timers connect 1
 address-family ipv6 unicast
  neighbor eth0 activate
  network 2001:db8:fe::1/128
 exit-address-family
EOF
{
	echo 'router id 192.0.2.2;'
	echo 'protocol device { }'
	echo 'protocol static s6 { ipv6;'
	echo ' route 2001:db8:ff::1/128 blackhole;'
	for ((i = 0; i < N; i++)); do printf ' route 2001:db8:a000:%x::/64 blackhole;\n' $i; done
	echo '}'
	echo 'protocol bgp r { local 2001:db8:d1::2 as 65001; neighbor 2001:db8:d1::1 as 65000;'
	echo ' connect delay time 1; connect retry time 1; error wait time 1, 5; ipv6 { import none; export all; }; }'
} >"$D/bird.conf"
frr() { # frr NAME [ARGS]: an FRR daemon of the router's netns, its sockets in $D
	local name=$1
	shift
	rm -f "$D/$name.pid"
	ip netns exec $R /usr/lib/frr/$name -d -u root -g frrvty --vty_socket "$D" -f "$D/$name.conf" \
		-i "$D/$name.pid" -z "$D/zserv.api" --log "file:$D/$name.log" "$@"
}
start_frr() {
	rm -f "$D/zserv.api"
	frr zebra -M dplane_fpm_nl
	until [ -S "$D/zserv.api" ]; do sleep 0.1; done # bgpd before zebra misreads its peers' routes
	frr bgpd
}
start_frr
for name in zebra bgpd; do
	ip netns exec $UN /usr/lib/frr/$name -d -N $UN -u root -g frrvty --vty_socket "$D/u" -f "$D/u/$name.conf" \
		-i "$D/u/$name.pid" -z "$D/u/zserv.api" --log "file:$D/u/$name.log"
	until [ -S "$D/u/zserv.api" ]; do sleep 0.1; done
done
ip netns exec $P bird -c "$D/bird.conf" -s "$D/bird.ctl" -P "$D/bird.pid"
want=$((N + 2)) # and the unnumbered peer's loopback
bgp() { $U route show proto bgp | grep -c '^2001' || true; }
for ((t = 0; t < 300; t++)); do [ "$(bgp)" -ge $want ] && break; sleep 0.2; done
echo "urouter has $(bgp) BGP routes (want $want):"
$U route show proto bgp | sed -n 1,3p
$U route show 2001:db8:ff::1
for ((t = 0; t < 300; t++)); do $U route show 2001:db8:fe::1 | grep -q fe80 && break; sleep 0.2; done
echo "the unnumbered peer's loopback, via its link-local address (learnt from its RAs):"
$U route show 2001:db8:fe::1
$U fpm show

echo "== from the host to the peer's loopback, through urouter"
ip netns exec $H ping -6 -c 3 -i 0.2 2001:db8:ff::1
ip netns exec $H traceroute6 -n -q 1 -w 1 2001:db8:ff::1
echo "== from the host to the unnumbered peer's loopback"
ip netns exec $H ping -6 -c 3 -i 0.2 2001:db8:fe::1

echo "== zebra and bgpd killed: urouter keeps forwarding"
kill -9 "$(cat "$D/zebra.pid")" "$(cat "$D/bgpd.pid")"
sleep 1
$U fpm show | sed -n 1p
ip netns exec $H ping -6 -c 3 -i 0.2 2001:db8:ff::1 | tail -2
echo "== restarted: zebra replays its table; what it does not repeat is swept once it settles"
start_frr
for ((t = 0; t < 300; t++)); do $U fpm show | grep -q "connects 2" && break; sleep 0.2; done
for ((t = 0; t < 300; t++)); do $U fpm show | sed -n 1p | grep -q " connected " && break; sleep 0.2; done
$U fpm show
echo "urouter has $(bgp) BGP routes"
ip netns exec $H ping -6 -c 3 -i 0.2 2001:db8:ff::1 | tail -2
