# Sourced by the demo labs: install_missing PKG:COMMAND... installs with
# apt-get the Debian packages whose command is missing. Packages that
# would start their daemons here (frr, bird2) are kept from it by a
# policy-rc.d for the install's time: the labs start their own.
install_missing() {
	local need=() p norc=""
	for p in "$@"; do
		command -v "${p#*:}" >/dev/null || need+=("${p%%:*}")
	done
	[ ${#need[@]} -gt 0 ] || return 0
	echo "== installing ${need[*]}"
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && norc=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	[ -z "$norc" ] || rm -f /usr/sbin/policy-rc.d
}
