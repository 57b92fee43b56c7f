package control

import (
	"errors"
	"fmt"
	"syscall"

	"urouter/control/wire"
	"urouter/fib6"
)

// cmdErr is a failed command: the text iproute2 prints for it and the exit
// status it gives it (255 for a parse error, 1 for an unknown device or
// object, 2 for a request the kernel rejects). errno is the errno of a
// "RTNETLINK answers: " refusal, 0 for any other failure. exits is set
// where ip calls exit() rather than returning: that ends even a forced
// batch, with no "Command failed" line (every parse error, and a bad
// address or prefix: get_addr's and get_prefix's exit(1)).
type cmdErr struct {
	msg   string
	code  int
	errno syscall.Errno
	exits bool
	// unknownObject: the line's object is not one ip knows (which ip
	// does not end a forced batch for, but a state file's start does)
	unknownObject bool
}

func (e *cmdErr) Error() string { return e.msg }

// Refused reports whether the line was well formed and the router refused
// what it asked (a device not there, a route that exists): a state file's
// start keeps such a line and goes on, where a line that does not parse
// stops it.
func (e *cmdErr) Refused() bool { return !e.exits && e.code != 255 && !e.unknownObject }

func parseErr(format string, args ...any) *cmdErr {
	return &cmdErr{msg: fmt.Sprintf(format, args...), code: 255, exits: true}
}

func garbage(word []byte) *cmdErr {
	return parseErr("Error: either \"to\" is duplicate, or \"%s\" is a garbage.", word)
}

// garbageArgs is ip link's message for a word it does not know after the
// link type.
func garbageArgs(word []byte) *cmdErr {
	return &cmdErr{msg: fmt.Sprintf("Garbage instead of arguments \"%s ...\". Try \"ip link help\".", word), code: 1}
}

// invarg is iproute2's invarg(msg, arg). Most of its messages end in a
// newline of their own, so a blank line follows, as with ip.
func invarg(msg string, arg []byte) *cmdErr {
	return parseErr("Error: argument \"%s\" is wrong: %s", arg, msg)
}

// badValue is invarg's most common message: "KEY" value is invalid.
func badValue(key string, arg []byte) *cmdErr {
	return invarg("\""+key+"\" value is invalid\n", arg)
}

func unsupported(word []byte) *cmdErr {
	return parseErr("Error: \"%s\" is not supported by this router.", word)
}

func duparg(key string, arg []byte) *cmdErr {
	return parseErr("Error: duplicate \"%s\": \"%s\" is the second value.", key, arg)
}

func incomplete() *cmdErr { return parseErr("Command line is not complete. Try option \"help\"") }

func prefixExpected(arg []byte) *cmdErr {
	return exit1(fmt.Sprintf("Error: inet6 prefix is expected rather than \"%s\".", arg))
}

func addrExpected(arg []byte) *cmdErr {
	return exit1(fmt.Sprintf("Error: inet6 address is expected rather than \"%s\".", arg))
}

// exit1 is an error ip ends with exit(1).
func exit1(msg string) *cmdErr { return &cmdErr{msg: msg, code: 1, exits: true} }

func nodev(name []byte) *cmdErr {
	return &cmdErr{msg: fmt.Sprintf("Cannot find device \"%s\"", name), code: 1}
}

// rejected is a request the router refuses, worded as iproute2 words a
// kernel refusal: "Error: ..." when there is a message, else
// "RTNETLINK answers: " and the errno's text.
func rejected(err error) *cmdErr {
	var fe *fib6.Error
	if errors.As(err, &fe) {
		if fe.Msg != "" {
			return &cmdErr{msg: "Error: " + fe.Msg, code: 2}
		}
		return answers(fe.Errno)
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return answers(errno)
	}
	return &cmdErr{msg: "Error: " + err.Error(), code: 2}
}

func answers(errno syscall.Errno) *cmdErr {
	return &cmdErr{msg: "RTNETLINK answers: " + wire.Strerror(errno), code: 2, errno: errno}
}

func extack(msg string) *cmdErr { return &cmdErr{msg: "Error: " + msg, code: 2} }
