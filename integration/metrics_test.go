package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetrics: /metrics parses with Prometheus's own text parser, its
// link counters are those `link show -s` prints, and it says how many
// routes each table has and what the mirror carried.
func TestMetrics(t *testing.T) {
	parallel(t)
	l := newMirrorLab(t, []string{"--metrics", "127.0.0.1:9108", "--fpm", "127.0.0.1:2620"})
	if o, e, st := runCmd("ip", "netns", "exec", l.h, "ping", "-6", "-c", "5", "-i", "0.2", "2001:db8:c1::1"); st != 0 {
		t.Fatalf("ping: %s%s", o, e)
	}
	type stats struct {
		Stats64 struct {
			RX, TX struct{ Bytes, Packets uint64 }
		} `json:"stats64"`
	}
	linkStats := func() stats {
		out, _, _ := l.d.run("-s", "-j", "link", "show", "lan1")
		var s []stats
		if err := json.Unmarshal([]byte(out), &s); err != nil || len(s) != 1 {
			t.Fatalf("link show -s -j: %v %s", err, out)
		}
		return s[0]
	}
	// Counters only grow: what link show says lies between two scrapes.
	a := scrape(t, l.r, "127.0.0.1:9108")
	s := linkStats()
	b := scrape(t, l.r, "127.0.0.1:9108")
	for _, c := range []struct {
		name string
		v    uint64
	}{{"urouter_link_receive_packets_total", s.Stats64.RX.Packets}, {"urouter_link_receive_bytes_total", s.Stats64.RX.Bytes},
		{"urouter_link_transmit_packets_total", s.Stats64.TX.Packets}, {"urouter_link_transmit_bytes_total", s.Stats64.TX.Bytes}} {
		lo, ok1 := metricValue(a, c.name, map[string]string{"link": "lan1"})
		hi, ok2 := metricValue(b, c.name, map[string]string{"link": "lan1"})
		if !ok1 || !ok2 || float64(c.v) < lo || float64(c.v) > hi || hi < 5 {
			t.Errorf("%s{link=lan1}: scrapes %v and %v, link show -s %d", c.name, lo, hi, c.v)
		}
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"urouter_routes", map[string]string{"table": "local"}, 2},
		{"urouter_link_up", map[string]string{"link": "lan1"}, 1},
		{"urouter_neighbours", map[string]string{"link": "lan1"}, 1},
		{"urouter_mirror_from_kernel_packets_total", map[string]string{"link": "lan1", "mirror": "km1"}, 0},
		{"urouter_mirror_ra_held_total", map[string]string{"link": "lan1", "mirror": "km1"}, 0},
		{"urouter_link_drops_total", map[string]string{"link": "lan1", "reason": "no_route"}, 0},
		{"urouter_fpm_connected", nil, 0},
		{"urouter_feed_routes_total", map[string]string{"feed": "fpm"}, 0},
		{"urouter_rules", nil, 2}, // Linux's IPv6 default rules: local and main
	} {
		if v, ok := metricValue(b, c.name, c.labels); !ok || v < c.min {
			t.Errorf("%s%v: %v (present %v), want at least %v", c.name, c.labels, v, ok, c.min)
		}
	}
	if f := b["urouter_table_publish_duration_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("no publish-time histogram")
	}
}

// scrape reads /metrics at addr inside namespace ns through Prometheus's
// own text parser.
func scrape(t testing.TB, ns, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	var body []byte
	inNetns(t, ns, func() {
		// dialled on the namespace's thread, so the socket is the namespace's
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close() }()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprint(conn, "GET /metrics HTTP/1.0\r\nHost: urouter\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("/metrics: %s %s", resp.Status, resp.Header.Get("Content-Type"))
		}
		body, _ = io.ReadAll(resp.Body)
	})
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the Prometheus parser refuses /metrics: %v\n%s", err, body)
	}
	return fams
}

// metricValue is the value of the first sample of name whose labels
// include labels.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for _, lp := range m.Label {
			if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}
