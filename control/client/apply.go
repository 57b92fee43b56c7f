package client

import (
	"fmt"
	"io"
	"os"

	"urouter/control/wire"
)

const applyUsage = "Usage: urouter apply FILE [ --dry-run ] [ --all ]"

// applyMain is `urouter apply FILE [ --dry-run ] [ --all ]`: the config
// FILE ("-": stdin) goes to the daemon, which makes the running router
// say what it says and answers with the commands it ran (or, with
// --dry-run, would run).
func applyMain(o wire.Options, socket string, args []string) int {
	file := ""
	for _, a := range args {
		switch a {
		case "--dry-run", "-dry-run", "-n":
			o.DryRun = true
		case "--all", "-all", "all":
			o.All = true
		case "help", "-h", "--help":
			fmt.Fprintln(os.Stderr, applyUsage)
			return 255
		default:
			if file != "" {
				fmt.Fprintf(os.Stderr, "Error: either \"%s\" is a duplicate, or \"%s\" is garbage.\n", "FILE", a)
				return 255
			}
			file = a
		}
	}
	if file == "" {
		fmt.Fprintln(os.Stderr, "Error: argument \"FILE\" is required")
		fmt.Fprintln(os.Stderr, applyUsage)
		return 255
	}
	var input io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			fmt.Fprintf(os.Stderr, "Cannot open file \"%s\" for reading: %s\n", file, strerrorOf(err))
			return 1
		}
		defer func() { _ = f.Close() }() // read only: nothing to lose
		input = f
	}
	o.Apply, o.BatchName = true, file
	return Talk(wire.SocketPath(socket), o, input, false, os.Stdout, os.Stderr)
}
