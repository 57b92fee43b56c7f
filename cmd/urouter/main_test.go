package main

import (
	"flag"
	"regexp"
	"testing"

	"urouter/control"
)

// TestUsageNamesDaemonFlags: urouter's usage (urouter help, --help)
// names every flag of the daemon's, and no flag it does not have, so
// that the two do not drift apart.
func TestUsageNamesDaemonFlags(t *testing.T) {
	usage, ok := control.Words{}.Help("help")
	if !ok {
		t.Fatal("no usage")
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`--([a-z][a-z-]*)`).FindAllStringSubmatch(usage, -1) {
		named[m[1]] = true
	}
	fs, _ := daemonFlags()
	flags := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		flags[f.Name] = true
		if !named[f.Name] {
			t.Errorf("the usage lacks the daemon's --%s", f.Name)
		}
	})
	for n := range named {
		if !flags[n] && n != "all" && n != "dry-run" { // save's and apply's
			t.Errorf("the usage names --%s, which the daemon lacks", n)
		}
	}
}
