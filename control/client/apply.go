package client

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"urouter/control/wire"
)

// applyMain is `urouter apply FILE [ --dry-run ] [ --all ]`: the config
// FILE ("-": stdin) goes to the daemon, which makes the running router
// say what it says and answers with the commands it ran (or, with
// --dry-run, would run).
// usage is control's (Words.Help).
func applyMain(o wire.Options, socket string, args []string, usage string) int {
	file := ""
	for _, a := range args {
		switch a {
		case "--dry-run", "-dry-run", "-n":
			o.DryRun = true
		case "--all", "-all", "all":
			o.All = true
		case "help", "-h", "--help":
			fmt.Fprintln(os.Stderr, usage)
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
		fmt.Fprintln(os.Stderr, usage)
		return 255
	}
	content, err := readConfig(file)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Cannot open file \"%s\" for reading: %s\n", file, strerrorOf(err))
		return 1
	}
	// The size goes ahead of the config: a daemon that gets less (this
	// client killed while it sends) applies nothing, where a config cut
	// at a line's end would read whole and delete what its rest says.
	o.Apply, o.BatchName, o.Size = true, file, int64(len(content))
	return Talk(wire.SocketPath(socket), o, bytes.NewReader(content), false, os.Stdout, os.Stderr)
}

// readConfig reads file ("-": stdin) whole, ending in a newline.
func readConfig(file string) ([]byte, error) {
	var in io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }() // read only: nothing to lose
		in = f
	}
	b, err := io.ReadAll(in)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	return b, err
}
