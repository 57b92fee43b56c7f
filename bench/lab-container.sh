#!/usr/bin/env bash
# The container demo: urouter's image (make image) between two hosts, its
# interfaces given to it after it starts, as containerlab gives them:
#
#   urouter-ct-a (2001:db8:1::2) --veth-- [container urouter-ct: eth1 | eth2] --veth-- urouter-ct-b (2001:db8:2::2)
#
# The container starts with no network but its loopback, its config
# (examples/containerlab/r1.conf) making host links on eth1 and eth2,
# which are not there: it is not healthy. The veths are then made on the
# host, one end moved into the container's namespace and renamed eth1 or
# eth2 (as containerlab does); it attaches and turns healthy. Then ping6,
# traceroute6 and iperf3 through it, a restart (its namespace, and so its
# veths, are new: the state volume keeps the configuration, the veths are
# made again), forwarding again. Run as root: `sudo make lab-container`.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${LAB_SECONDS:-3}
A=urouter-ct-a B=urouter-ct-b C=urouter-ct
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/container/containers.conf}
export DISABLE_HC_SYSTEMD=true # no systemd here: `podman healthcheck run` runs the check
[ "$(id -u)" = 0 ] || { echo "lab-container.sh: run me as root (podman, network namespaces)" >&2; exit 1; }
. bench/install.sh
install_missing podman:podman runc:runc iproute2:ip iperf3:iperf3 iputils-ping:ping traceroute:traceroute6
podman image exists urouter:latest || make image

cleanup() {
	podman rm -f -t 0 $C >/dev/null 2>&1 || true
	podman volume rm -f urouter-ct-state >/dev/null 2>&1 || true
	for ns in $A $B; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
		ip netns del "$ns" 2>/dev/null || true
	done
}
trap cleanup EXIT
cleanup
for ns in $A $B; do
	ip netns add "$ns"
	ip -n "$ns" link set lo up
done

health() { podman healthcheck run $C >/dev/null 2>&1 && echo healthy || echo unhealthy; }
echo "== starting the container: no network, its config waiting for eth1 and eth2"
podman run -d --name $C --network none --privileged \
	-v "$PWD/examples/containerlab/r1.conf:/etc/urouter/urouter.conf:ro" \
	-v urouter-ct-state:/var/lib/urouter urouter:latest >/dev/null
for _ in $(seq 50); do podman exec $C urouter status >/dev/null 2>&1 || [ $? = 1 ] && break; sleep 0.1; done
podman exec $C urouter link show || true
echo "   health: $(health)"

# wire makes the veths of host ns (its eth0, address addr) and of the
# container (dev), as containerlab does: made on the host, moved, renamed.
wire() {
	local ns=$1 dev=$2 addr=$3 gw=$4 pid tmp="ct$RANDOM"
	pid=$(podman inspect -f '{{.State.Pid}}' $C)
	ip link add "$tmp" type veth peer name eth0 netns "$ns"
	ip link set "$tmp" netns "/proc/$pid/ns/net"
	nsenter -t "$pid" -n ip link set "$tmp" name "$dev"
	nsenter -t "$pid" -n ip link set "$dev" up
	ip -n "$ns" addr add "$addr/64" dev eth0 nodad
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route replace 2001:db8::/32 via "$gw"
}
wire_all() {
	wire $A eth1 2001:db8:1::2 2001:db8:1::1
	wire $B eth2 2001:db8:2::2 2001:db8:2::1
	for _ in $(seq 50); do podman exec $C urouter status >/dev/null 2>&1 && break; sleep 0.1; done
}
echo "== eth1 and eth2 moved in"
wire_all
podman exec $C urouter link show
echo "   health: $(health)"

traffic() {
	ip netns exec $A ping -6 -c 3 -i 0.2 2001:db8:2::2
	ip netns exec $A traceroute6 -n -q 1 -w 1 2001:db8:2::2
	ip netns exec $B iperf3 -s -1 -D -B 2001:db8:2::2
	sleep 0.3
	ip netns exec $A iperf3 -6 -c 2001:db8:2::2 -t "$SECS" | tail -4
}
echo "== through the container"
traffic

echo "== podman restart: a new namespace (the veths went with the old), the state volume kept"
podman restart -t 2 $C >/dev/null
wire_all
podman exec $C urouter -6 route
echo "   health: $(health)"
ip netns exec $A ping -6 -c 3 -i 0.2 2001:db8:2::2
echo "== done"
