package metrics

import (
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"urouter/feed"
	"urouter/router"
)

// TestMetrics: /metrics is served, parses with Prometheus's text parser,
// follows Prometheus's naming conventions (promlint), and says what the
// router holds.
func TestMetrics(t *testing.T) {
	r := router.New()
	l, err := r.AddDummy("d0", 1500)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetUp(l, true); err != nil {
		t.Fatal(err)
	}
	if err := r.AddAddr(l, netip.MustParsePrefix("2001:db8:1::1/64")); err != nil {
		t.Fatal(err)
	}
	addVRFMember(t, r)
	ap := feed.NewApplier(r, r.LinkOfKernel)
	f, err := feed.ListenFPM("127.0.0.1:0", ap, feed.Timers{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := NewCollector(r, Feeds{FPM: f})
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %+v", err, problems)
	}
	s, err := Serve("127.0.0.1:0", c)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	resp, err := http.Get("http://" + s.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	get := func(name string, labels map[string]string) (float64, bool) {
		for _, m := range fams[name].GetMetric() {
			ok := true
			for _, lp := range m.GetLabel() {
				if v, has := labels[lp.GetName()]; has && v != lp.GetValue() {
					ok = false
				}
			}
			if ok {
				switch {
				case m.Gauge != nil:
					return m.GetGauge().GetValue(), true
				case m.Counter != nil:
					return m.GetCounter().GetValue(), true
				}
			}
		}
		return 0, false
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"urouter_link_up", map[string]string{"link": "d0"}, 1},
		{"urouter_link_mtu_bytes", map[string]string{"link": "d0"}, 1500},
		{"urouter_routes", map[string]string{"table": "main"}, 1},  // the connected route
		{"urouter_routes", map[string]string{"table": "local"}, 2}, // ::1 and 2001:db8:1::1
		{"urouter_rules", nil, 3},                                  // and the VRF's l3mdev rule
		{"urouter_fpm_connected", nil, 0},
		{"urouter_feed_routes_total", map[string]string{"feed": "fpm"}, 0},
		{"urouter_feed_pending_groups", map[string]string{"feed": "fpm"}, 0},
		{"urouter_feed_pending_overflow_total", map[string]string{"feed": "fpm"}, 0},
		{"urouter_fpm_closed_total", map[string]string{"reason": "replaced"}, 0},
		{"urouter_link_drops_total", map[string]string{"link": "d0", "reason": "no_route"}, 0},
		{"urouter_link_drops_total", map[string]string{"link": "d0", "reason": "policed"}, 0},
		{"urouter_link_copp_packets_total", map[string]string{"link": "d0", "class": "echo", "verdict": "passed"}, 0},
		{"urouter_link_copp_packets_total", map[string]string{"link": "d0", "class": "routing", "verdict": "dropped"}, 0},
		{"urouter_link_vrf", map[string]string{"link": "d1", "vrf": "red"}, 1},
		{"urouter_link_vrf", map[string]string{"link": "red", "vrf": "red"}, 1},
		{"urouter_routes", map[string]string{"table": "10", "vrf": "red"}, 2}, // d1's connected and local routes
	} {
		if v, ok := get(c.name, c.labels); !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	h := fams["urouter_table_publish_duration_seconds"]
	local := uint64(0)
	for _, m := range h.GetMetric() {
		if m.GetLabel()[0].GetValue() == "local" {
			local = m.GetHistogram().GetSampleCount()
		}
	}
	if h.GetType() != dto.MetricType_HISTOGRAM || local != 2 { // the two addresses' local routes, each its commit
		t.Errorf("publish histogram: %v", h)
	}
}

// addVRFMember adds VRF red (table 10) and d1 in it, up, with an address.
func addVRFMember(t *testing.T, r *router.Router) {
	red, err := r.AddVRF("red", 0, 10, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	d1, err := r.AddDummy("d1", 1500)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{r.SetMaster(d1, red), r.SetUp(d1, true), r.AddAddr(d1, netip.MustParsePrefix("2001:db8:2::1/64"))} {
		if err != nil {
			t.Fatal(err)
		}
	}
}
