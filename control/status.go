package control

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"urouter/dataplane"

	"urouter/control/statefile"
)

// `status`: whether the router is ready, and why not: its config and
// state applied, every link set up on its interface (a host link waiting
// for its interface is not), its feeds connected. It fails (exit 1)
// unless ready, for a container's health check and for scripts that wait
// for the router. A link without its carrier (its neighbour is down) is
// told, not a reason: a lab's health check would mark the router
// unhealthy for its neighbour's state.

// Startup is how the daemon's start went.
type Startup struct {
	Started       time.Time
	Config        string // the --config file, if any
	ConfigLines   int
	ConfigSkipped bool // the state file held the configuration
}

func statusUsage() *cmdErr { return parseErr("Usage: urouter status [ show ]") }

func (s *Session) statusCmd(args [][]byte) *cmdErr {
	if len(args) > 1 || len(args) == 1 && !matches(args[0], "show") {
		return statusUsage()
	}
	st := s.startup
	if st == nil {
		st = &Startup{}
	}
	rd := s.readiness()
	w := s.newPrinter()
	ready := len(rd.why) == 0
	if !w.json() {
		if ready {
			w.text("status ready\n")
		} else {
			w.text("status not ready\n")
		}
	} else {
		w.j.startObject()
		w.number("ready", "", strconv.FormatBool(ready))
	}
	w.strings("reasons", "    %s\n", rd.why)
	if !st.Started.IsZero() {
		w.uint("uptime", "uptime %ds\n", uint64(time.Since(st.Started)/time.Second))
	}
	if st.Config != "" {
		w.openObject("config")
		w.str("file", "config %s: ", st.Config)
		if st.ConfigSkipped {
			w.number("applied", "", "false")
			w.text("not applied (the state file holds the configuration)\n")
		} else {
			w.number("applied", "", "true")
			w.uint("lines", "%d lines applied\n", uint64(st.ConfigLines))
		}
		w.closeObject()
	}
	if s.state != nil {
		printStateStatus(&w, s.state)
	}
	w.openObject("links")
	w.uint("up", "links %d up", uint64(rd.up))
	w.uint("set_up", " of %d set up\n", uint64(rd.configured))
	if w.json() {
		w.strings("no_carrier", "", rd.noCarrier)
	} else if len(rd.noCarrier) > 0 {
		w.textf("    no carrier: %s\n", strings.Join(rd.noCarrier, " "))
	}
	w.closeObject()
	s.statusVRFs(&w)
	if rd.fpm != "" {
		w.str("fpm", "fpm %s\n", rd.fpm)
	}
	_, tracing := s.r.DP.Traces()
	w.uint("captures", "captures %d\n", uint64(s.r.DP.Captures()))
	w.uint("tracing", "tracing %d packets more\n", uint64(tracing))
	if w.json() {
		w.j.endObject()
		w.w.WriteByte('\n')
	}
	if !ready {
		return &cmdErr{msg: "urouter: not ready", code: 1}
	}
	return nil
}

// readiness is what status finds: why the router is not ready (none:
// it is), its links up of those set up, its FPM feed's state.
type readiness struct {
	why            []string
	up, configured int
	noCarrier      []string // links set up, on their interface, without its carrier
	fpm            string
}

func (s *Session) readiness() readiness {
	var why []string
	if st := s.state; st != nil {
		if st.Loaded.Errors > 0 {
			why = append(why, st.FailedWhy())
		}
		if u := st.Unsaved(); u != "" { // read once: a repair may clear it meanwhile
			why = append(why, fmt.Sprintf("state %s: a change is not saved: %s", st.Path(), u))
		}
	}
	up, configured := 0, 0
	var noCarrier []string
	for _, l := range s.r.Links.All() {
		if l.IsLoopback() || !l.Up() {
			continue
		}
		configured++
		switch {
		case l.Waiting():
			why = append(why, "link "+l.Name+" waits for its interface "+l.HostDev())
		case !l.Carrier():
			noCarrier = append(noCarrier, l.Name)
		default:
			up++
		}
	}
	var fpmState string
	if s.feeds != nil && s.feeds.FPM != nil {
		f := s.feeds.FPM.Status()
		switch {
		case !f.Connected:
			fpmState = "waiting for zebra on " + f.Listen
			why = append(why, "fpm: zebra has not connected to "+f.Listen)
		case !f.Settled:
			fpmState = "connected from " + f.Peer + ", replaying"
		default:
			fpmState = "connected from " + f.Peer + ", settled"
		}
	}
	if s.feeds != nil {
		for _, m := range s.feeds.Tables {
			if m.Synced().UnixNano() <= 0 {
				why = append(why, "mirror table "+strconv.FormatUint(uint64(m.Table), 10)+" has not synced")
			}
		}
	}
	return readiness{why: why, up: up, configured: configured, noCarrier: noCarrier, fpm: fpmState}
}

// printStateStatus prints status's word on the state file: what the
// start applied from it.
func printStateStatus(w *printer, st *statefile.State) {
	l := st.Loaded
	w.openObject("state")
	w.str("file", "state %s: ", st.Path())
	w.uint("records", "%d records, ", uint64(l.Records))
	w.uint("lines", "%d lines, ", uint64(l.Lines))
	w.uint("errors", "%d errors", uint64(l.Errors))
	if n := st.Held(); n > 0 {
		w.uint("held", ", %d lines held", uint64(n))
	}
	if l.Torn != "" {
		w.str("torn", "; at start %s", l.Torn)
	}
	w.text("\n")
	w.closeObject()
}

// statusVRFs says each VRF's table and how many links it has, when the
// router has any: `vrf red table 10 links 2`.
func (s *Session) statusVRFs(w *printer) {
	var vrfs []*dataplane.Link
	for _, l := range s.r.Links.All() {
		if l.IsVRF() {
			vrfs = append(vrfs, l)
		}
	}
	if len(vrfs) == 0 {
		return
	}
	w.openArray("vrfs")
	for _, v := range vrfs {
		_, t := v.L3()
		w.openObject("")
		w.str("name", "vrf %s", v.Name)
		w.uint("table", " table %d", uint64(t))
		w.uint("links", " links %d\n", uint64(len(s.r.Links.Members(v))))
		w.closeObject()
	}
	w.closeArray()
}
