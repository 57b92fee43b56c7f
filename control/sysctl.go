package control

import (
	"errors"
	"fmt"
	"strings"

	"urouter/router"
)

// `sysctl [-n] [-N] [-q] [-e] [-w] [-a] NAME[=VALUE]...`: the router's
// knobs by Linux's names (router/sysctl.go), read and written as
// procps-ng's sysctl(8) does, with its output and its messages. Every
// name is done in turn; the command fails if one did.

type sysctlOpts struct {
	values, names, quiet, ignore, write, all, binary bool
}

func sysctlUsage() *cmdErr {
	return parseErr("Usage: urouter sysctl [ -n ] [ -N ] [ -q ] [ -e ] [ -b ] [ -w ] NAME[=VALUE]...\n" +
		"       urouter sysctl -a\n" +
		"       urouter sysctl DIR\n" +
		"NAME := a knob's name, dotted or slashed (net.ipv6.conf.all.forwarding); DIR, a name's\n" +
		"        beginning (net.ipv6.neigh.lan1): every knob under it")
}

func (s *Session) sysctlCmd(args [][]byte) *cmdErr {
	var o sysctlOpts
	var keys []string
	opts := true
	if len(args) > 0 && is(args[0], "help") { // no knob's name: urouter's help, as its other objects'
		return sysctlUsage()
	}
	for _, a := range args {
		if opts && is(a, "--") {
			opts = false // what follows are names
			continue
		}
		if opts && (is(a, "--help") || is(a, "-h")) { // procps's help, in urouter's words
			return sysctlUsage()
		}
		if opts && len(a) > 1 && a[0] == '-' {
			if err := o.parse(str(a)); err != nil {
				return err
			}
			continue
		}
		keys = append(keys, str(a))
	}
	if o.all {
		o.printAll(s, s.r.SysctlNames())
		return nil
	}
	if len(keys) == 0 {
		return &cmdErr{msg: "sysctl: no variables specified\nTry `sysctl --help' for more information.", code: 1}
	}
	var errs, written []string
	for _, k := range keys {
		if msg := s.sysctlOne(&o, k); msg != "" {
			errs = append(errs, msg)
		} else if name, value, ok := strings.Cut(k, "="); ok {
			written = append(written, strings.TrimSpace(name)+"="+strings.TrimSpace(value))
		}
	}
	if len(errs) > 0 {
		if len(written) > 0 { // what it did all the same, for the state file
			flags := "sysctl -q -w "
			if o.ignore {
				flags = "sysctl -q -e -w " // a name it passed over is passed over again
			}
			s.did.partial = append(s.did.partial[:0], flags+strings.Join(written, " ")...)
		}
		return &cmdErr{msg: strings.Join(errs, "\n"), code: 1}
	}
	return nil
}

// printAll prints the knobs names, each with its value.
func (o *sysctlOpts) printAll(s *Session, names []string) {
	for _, n := range names {
		v, _ := s.r.Sysctl(n) // listed just now; a link gone since reads empty
		o.print(s, n, v)
	}
}

// longOpts are procps's long options, by the letter each stands for.
var longOpts = map[string]string{"--all": "-a", "--values": "-n", "--names": "-N", "--quiet": "-q",
	"--ignore": "-e", "--write": "-w", "--binary": "-b"}

func (o *sysctlOpts) parse(a string) *cmdErr {
	if short, ok := longOpts[a]; ok {
		a = short
	} else if strings.HasPrefix(a, "--") {
		return &cmdErr{msg: fmt.Sprintf("sysctl: unrecognized option '%s'\nTry `sysctl --help' for more information.", a), code: 1}
	}
	for _, c := range a[1:] {
		switch c {
		case 'a', 'A', 'X':
			o.all = true
		case 'n':
			o.values = true
		case 'N':
			o.names = true
		case 'q':
			o.quiet = true
		case 'e':
			o.ignore = true
		case 'w':
			o.write = true
		case 'b':
			o.binary = true
		case 'o', 'x': // procps: "does nothing"
		case 'p', 'f':
			return &cmdErr{msg: "sysctl: -p: the router reads a file of settings as its --config (sysctl -w lines)", code: 1}
		default:
			return &cmdErr{msg: fmt.Sprintf("sysctl: invalid option -- '%c'\nTry `sysctl --help' for more information.", c), code: 1}
		}
	}
	return nil
}

// sysctlOne reads or writes one NAME[=VALUE]; it returns the error
// message, if any.
func (s *Session) sysctlOne(o *sysctlOpts, arg string) string {
	name, value, isWrite := strings.Cut(arg, "=")
	name = strings.ReplaceAll(strings.TrimSpace(name), "/", ".")
	if !isWrite && o.write {
		return "sysctl: command line(0): invalid syntax, continuing..."
	}
	if !isWrite {
		v, err := s.r.Sysctl(name)
		if err == nil {
			o.print(s, name, v)
			return ""
		}
		if names := knobsUnder(s.r, name); len(names) > 0 {
			o.printAll(s, names)
			return ""
		}
		return o.failed(name, err)
	}
	value = strings.TrimSpace(value)
	if err := s.r.SetSysctl(name, value); err != nil {
		if errors.Is(err, router.ErrNoKnob) && len(knobsUnder(s.r, name)) > 0 {
			err = router.ErrBadValue // a directory
		}
		return o.failed(name, err)
	}
	switch {
	case o.quiet:
	case o.values || o.names:
		fmt.Fprintf(s.out, "%s\n", value)
	default:
		fmt.Fprintf(s.out, "%s = %s\n", name, value)
	}
	return ""
}

func (o *sysctlOpts) failed(name string, err error) string {
	if errors.Is(err, router.ErrNoKnob) {
		if o.ignore {
			return ""
		}
		return fmt.Sprintf("sysctl: cannot stat /proc/sys/%s: No such file or directory", strings.ReplaceAll(name, ".", "/"))
	}
	return fmt.Sprintf("sysctl: setting key \"%s\": %v", name, err)
}

func (o *sysctlOpts) print(s *Session, name, value string) {
	switch {
	case o.names:
		fmt.Fprintf(s.out, "%s\n", name)
	case o.binary:
		fmt.Fprintf(s.out, "%s", value)
	case o.values:
		fmt.Fprintf(s.out, "%s\n", value)
	default:
		fmt.Fprintf(s.out, "%s = %s\n", name, value)
	}
}

// knobsUnder are the knobs below dir (net.ipv6.conf.d0), as sysctl lists
// a directory.
func knobsUnder(r *router.Router, dir string) []string {
	var out []string
	for _, n := range r.SysctlNames() {
		if strings.HasPrefix(n, dir+".") {
			out = append(out, n)
		}
	}
	return out
}
