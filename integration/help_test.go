package integration

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// helpObjects are the objects whose `urouter OBJECT help` the client
// answers itself (control's objectHelp), each as a user may write it.
var helpObjects = []string{"route", "nexthop", "nh", "rule", "link", "address", "a", "neigh", "neighbour", "ntable",
	"monitor", "vrf", "ra", "fpm", "mirror", "sr", "capture", "trace", "sysctl", "save", "status", "apply"}

// TestHelpWithoutDaemon: every help is the client's own, printed with no
// daemon and no socket: `urouter help`, `urouter OBJECT help` for every
// object, -h, -help and --help, each a usage on stderr with ip's exit
// status of a usage (255), none a word about the daemon.
func TestHelpWithoutDaemon(t *testing.T) {
	parallel(t)
	missing := filepath.Join(t.TempDir(), "no", "such.sock")
	run := func(args ...string) (string, string, int) {
		return runCmd("env", append([]string{"UROUTER_SOCKET=" + missing, plain}, args...)...)
	}
	var cmds [][]string
	for _, o := range helpObjects {
		cmds = append(cmds, []string{o, "help"}, []string{"-j", o, "help"})
	}
	cmds = append(cmds, []string{"help"}, []string{"h"}, []string{"-h"}, []string{"-help"}, []string{"--help"}, []string{},
		[]string{"-6", "help"}, []string{"--socket", missing, "route", "help"})
	for _, args := range cmds {
		out, errs, st := run(args...)
		if out != "" || !strings.HasPrefix(errs, "Usage:") || st != 255 || strings.Contains(errs, "cannot reach the daemon") {
			t.Errorf("urouter %s: %q %q %d", strings.Join(args, " "), out, errs, st)
		}
		if obj := len(args) > 1 && args[1] == "help" && args[0][0] != '-'; obj && strings.HasPrefix(errs, "Usage: urouter [ OPTIONS ]") {
			t.Errorf("urouter %s: urouter's usage, not the object's", strings.Join(args, " "))
		}
	}
	// a command that is no help goes to the daemon, which is not there
	if _, errs, st := run("route", "show"); st != 1 || !strings.Contains(errs, "cannot reach the daemon at "+missing) {
		t.Errorf("route show with no daemon: %q %d", errs, st)
	}
}

// TestUsageListsEverything: `urouter --help` names every flag of the
// daemon's (as `urouter daemon -help` lists them) and every command.
func TestUsageListsEverything(t *testing.T) {
	parallel(t)
	_, usage, _ := runCmd(plain, "--help")
	_, flags, _ := runCmd(plain, "daemon", "-help")
	names := regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)`).FindAllStringSubmatch(flags, -1)
	if len(names) < 15 {
		t.Fatalf("urouter daemon -help lists %d flags:\n%s", len(names), flags)
	}
	for _, n := range names {
		if !strings.Contains(usage, "--"+n[1]+" ") {
			t.Errorf("the usage lacks the daemon's --%s", n[1])
		}
	}
	for _, want := range []string{"urouter daemon ", "urouter save [ --all ]", "urouter status", "urouter apply FILE [ --dry-run ] [ --all ]",
		"urouter capture ", "urouter trace ", "urouter sysctl ", "-batch FILE", "docs/route.md", "route.md", "link.md", "address.md",
		"neigh.md", "sysctl.md", "-br[ief]", "-o[neline]"} {
		if !strings.Contains(usage, want) {
			t.Errorf("the usage lacks %q:\n%s", want, usage)
		}
	}
}
