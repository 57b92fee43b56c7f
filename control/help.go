package control

import "urouter/control/wire"

// Help: urouter's usage (`help`) and each object's (`OBJECT help`), as a
// session prints them (to stderr, with ip's status of a usage, 255), and
// as the client prints them itself, with no daemon to ask (Words.Help).

// usage is urouter's: every command, the daemon's flags (cmd/urouter's
// test holds them to its flag set), the objects and the reference.
const usage = "Usage: urouter [ OPTIONS ] OBJECT { COMMAND | help }\n" +
	"       urouter [ OPTIONS ] [ -force ] -batch FILE\n" +
	"       urouter daemon [ --config FILE ] [ --state FILE ] [ --socket PATH ]\n" +
	"                      [ --icmp-ratelimit N ] [ --icmp-burst N ]\n" +
	"                      [ --icmp-dest-ratelimit MS ] [ --icmp-dest-burst N ]\n" +
	"                      [ --multipath-hash-policy 0-3 ]\n" +
	"                      [ --router-probe-interval DURATION ]\n" +
	"                      [ --fpm [ADDR]:PORT ] [ --fpm-hold DURATION ] [ --mirror-table ID[,ID]... ]\n" +
	"                      [ --control-share PERCENT ] [ --control-nice { 0-19 | idle } ]\n" +
	"                      [ --max-sessions N ] [ --metrics ADDR:PORT ]\n" +
	"       urouter save [ --all ]\n" +
	"       urouter status [ show ]\n" +
	"       urouter apply FILE [ --dry-run ] [ --all ]\n" +
	"       urouter capture [ dev LINK ]... [ drops ] [ in | out ] [ count N ] [ snaplen N ]\n" +
	"                       [ -w FILE | - ] [ FILTER ]\n" +
	"       urouter trace { add COUNT [ dev LINK ] [ FILTER ] | show | clear }\n" +
	"       urouter sysctl [ -n ] [ -N ] [ -q ] [ -e ] [ -b ] [ -w ] [ -a ] NAME[=VALUE]...\n" +
	"where  OBJECT := { address | apply | capture | fpm | help | link | mirror | monitor |\n" +
	"                   neighbour | nexthop | ntable | ra | route | rule | save | sr | status |\n" +
	"                   sysctl | trace | vrf }\n" +
	"       OPTIONS := { -6 | -s[tatistics] | -d[etails] | -j[son] | -p[retty] | -br[ief] |\n" +
	"                    -o[neline] | -force | --socket PATH }\n" +
	"The daemon is found at --socket PATH, $UROUTER_SOCKET, or " + wire.DefaultSocket + ".\n" +
	"An object's words: urouter OBJECT help. The reference is docs/: address.md, apply.md,\n" +
	"capture-and-trace.md, container.md, daemon.md, daemons.md, link.md, linux-parity.md,\n" +
	"metrics.md, monitor.md, neigh.md, nexthop.md, ra.md, route.md, rule.md,\n" +
	"save-and-state.md, srv6.md, sysctl.md, vrf.md (e.g. docs/route.md)."

// objectHelp is what `OBJECT help` answers for object obj (as objects
// names it; "help" is urouter's usage), nil for an object without one.
func objectHelp(obj string) *cmdErr {
	switch obj {
	case "help":
		return parseErr("%s", usage)
	case "address":
		return addrUsage()
	case "route":
		return routeUsage()
	case "rule":
		return ruleUsage()
	case "neighbor", "neighbour":
		return neighUsage()
	case "ntable", "ntbl":
		return ntableUsage()
	case "link":
		return linkUsage()
	case "monitor":
		return monitorUsage()
	case "vrf":
		return vrfUsage()
	case "sr":
		return srUsage()
	case "nexthop":
		return nexthopUsage()
	case "ra":
		return raUsage()
	case "fpm", "mirror":
		return showOnlyUsage(obj)
	case "sysctl":
		return sysctlUsage()
	case "save":
		return saveUsage()
	case "status":
		return statusUsage()
	case "capture":
		return parseErr("%s", captureUsage)
	case "trace":
		return parseErr("%s", traceUsage)
	case "apply":
		return applyUsage()
	}
	return nil
}

// Help is what `urouter OBJECT help` prints for the object word obj
// (`urouter help` for a word that picks help), to stderr, exiting 255,
// as a session does; false for a word that picks no object with a help.
func (ws Words) Help(obj string) (string, bool) {
	if e := objectHelp(ws.Object(obj)); e != nil {
		return e.msg, true
	}
	return "", false
}

// ownGarbage is garbageArgs for one of urouter's own objects, whose
// help is urouter's.
func ownGarbage(obj string, word []byte) *cmdErr {
	e := garbageArgs(word)
	e.msg = "Garbage instead of arguments \"" + string(word) + " ...\". Try \"urouter " + obj + " help\"."
	return e
}
