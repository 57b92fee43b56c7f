#!/usr/bin/env bash
# urouter apply against its peer, a restart with the new config: a
# router with config A (N routes through a TUN) is taken to config B (1%
# of A's routes through another gateway, N/10 routes more) by `urouter
# apply B`, then B applied again (nothing to do); the peer is the only
# way there was before apply, a daemon started with --config B, timed
# until it answers. Each in a netns of its own, ROUNDS times; medians.
#
#   UROUTER=bin/urouter N=100000 ROUNDS=3 flock /tmp/bench.lock bench/apply.sh
set -euo pipefail
UROUTER=${UROUTER:-bin/urouter}
N=${N:-100000}
ROUNDS=${ROUNDS:-3}
UROUTER=$(realpath "$UROUTER")
dir=$(mktemp -d)
ns=uro-bench-apply-$$
cleanup() {
	[ -f "$dir/pid" ] && kill "$(cat "$dir/pid")" 2>/dev/null && sleep 0.5
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

awk -v n="$N" -v d="$dir" 'BEGIN {
	base = "link add t0 type tun\nlink set t0 up\naddress add 2001:db8:1::1/64 dev t0"
	print base > (d "/a.conf"); print base > (d "/b.conf")
	for (i = 0; i < n; i++) {
		r = sprintf("route add 2001:db8:%x:%x::/64 via 2001:db8:1::", 4096 + int(i / 256), i % 256)
		print r "2 dev t0" > (d "/a.conf")
		print r (i % 100 == 0 ? 3 : 2) " dev t0" > (d "/b.conf")
	}
	for (i = 0; i < n / 10; i++)
		printf "route add 2001:db8:%x:%x::/64 via 2001:db8:1::2 dev t0\n", 32768 + int(i / 256), i % 256 > (d "/b.conf")
}'

now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
# start CONFIG: a daemon in $ns with it; prints the seconds until it answers
start() {
	ip netns add "$ns"
	local t0
	t0=$(now)
	ip netns exec "$ns" "$UROUTER" daemon --config "$1" --socket "$dir/sock" 2>"$dir/log" &
	echo $! >"$dir/pid"
	until "$UROUTER" --socket "$dir/sock" status >/dev/null 2>&1; do sleep 0.01; done
	sub "$(now)" "$t0"
	echo
}
stop() {
	kill "$(cat "$dir/pid")"
	while kill -0 "$(cat "$dir/pid")" 2>/dev/null; do sleep 0.05; done
	rm -f "$dir/pid"
	ip netns del "$ns"
}
timed() {
	local t0
	t0=$(now)
	"$@" >/dev/null
	sub "$(now)" "$t0"
	echo
}

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
: >"$dir/apply" ; : >"$dir/again" ; : >"$dir/restart"
for _ in $(seq "$ROUNDS"); do
	start "$dir/a.conf" >/dev/null
	timed "$UROUTER" --socket "$dir/sock" apply "$dir/b.conf" >>"$dir/apply"
	timed "$UROUTER" --socket "$dir/sock" apply "$dir/b.conf" >>"$dir/again"
	stop
	start "$dir/b.conf" >>"$dir/restart"
	stop
done
ap=$(median <"$dir/apply"); ag=$(median <"$dir/again"); rs=$(median <"$dir/restart")
changes=$((N / 100 + N / 10))
printf 'routes %d, changes %d, rounds %d (medians)\n' "$N" "$changes" "$ROUNDS"
printf '  restart with B (peer)  %6.2f s\n' "$rs"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
printf '  apply B                %6.2f s  ratio %s\n' "$ap" "$(ratio "$ap" "$rs")"
printf '  apply B again (no-op)  %6.2f s  ratio %s\n' "$ag" "$(ratio "$ag" "$rs")"
