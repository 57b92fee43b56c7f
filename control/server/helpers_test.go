package server

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"urouter/control"
	"urouter/control/wire"
	"urouter/router"
)

// run executes lines in a session of r, as a client's with options o
// but without a daemon, and returns what the client would print and the
// exit status.
func run(r *router.Router, o wire.Options, lines ...string) (stdout, stderr string, status int) {
	var out, errs bytes.Buffer
	if o.Batch && o.BatchName == "" {
		o.BatchName = "test.batch"
	}
	w := bufio.NewWriter(&out)
	s := control.NewSession(r, o, w, func(m string) { errs.WriteString(m + "\n") })
	status = s.Run(bufio.NewReader(strings.NewReader(strings.Join(lines, "\n") + "\n")))
	_ = w.Flush() // a bytes.Buffer takes everything
	return out.String(), errs.String(), status
}

// newTestRouter is a router with an up dummy link d0 on 2001:db8:91::/64.
func newTestRouter(t *testing.T) *router.Router {
	t.Helper()
	r := router.New()
	if _, e, st := run(r, wire.Options{Batch: true},
		"link add d0 type dummy", "link set d0 up", "address add 2001:db8:91::1/64 dev d0"); st != 0 {
		t.Fatalf("setup: %s", e)
	}
	return r
}
