package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// /metrics parses as Prometheus text and carries the HTTP families, with
// route patterns (never raw paths, which hold ids and numbers) as labels.
func TestMetricsEndpoint(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createGroup("+15550100001")
	e.do("GET", "/v1/groups/"+id, "", "read", nil)
	e.do("POST", "/v1/groups", createBody, "read", nil) // forbidden
	resp, b := e.do("GET", "/metrics", "", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	// Labelled families appear once observed; plain ones always.
	for _, name := range []string{"crewcast_http_request_duration_seconds", "crewcast_http_auth_failures_total",
		"crewcast_sse_clients", "crewcast_actor_timers_pending", "go_goroutines"} {
		if _, ok := mfs[name]; !ok {
			t.Errorf("family %s missing", name)
		}
	}
	if v := metricValue(t, e.reg, "crewcast_http_request_duration_seconds", map[string]string{"route": "/v1/groups/{id}", "code": "200"}); v != 1 {
		t.Errorf("GET /v1/groups/{id} observed %v times, want 1", v)
	}
	if strings.Contains(string(b), id) {
		t.Error("a group id leaked into metric labels")
	}
	if v := metricValue(t, e.reg, "crewcast_http_auth_failures_total", map[string]string{"reason": "forbidden"}); v != 1 {
		t.Errorf("forbidden counted %v", v)
	}
}

// Finding 4 of issue 12: every unauthenticated request with a new HTTP
// method (or path) must not add a metric series, or /metrics grows without
// bound. Methods outside the standard set count as "other"; paths that
// match no route as "unmatched".
func TestMetricsLabelsBoundedUnderRandomMethods(t *testing.T) {
	e := newEnv(t, nil)
	flood := func(from, n int) {
		for i := from; i < from+n; i++ {
			method := fmt.Sprintf("M%05d", i)
			for _, path := range []string{"/v1/groups", "/v1/nope/" + strconv.Itoa(i), "/webhooks/x" + strconv.Itoa(i), "/zz" + strconv.Itoa(i)} {
				req, err := http.NewRequest(method, e.srv.URL+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := e.srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		}
	}
	scrape := func() int {
		_, b := e.do("GET", "/metrics", "", "", nil)
		return len(b)
	}
	flood(0, 20)
	scrape() // the scrape's own series exist from now on
	before := scrape()
	flood(20, 200)
	after := scrape()
	if after > before+2048 {
		t.Errorf("/metrics grew from %d to %d bytes after 800 requests with new methods and paths", before, after)
	}
	mfs, err := e.reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "crewcast_http_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "method":
					if strings.HasPrefix(lp.GetValue(), "M0") {
						t.Fatalf("method label %q: want \"other\"", lp.GetValue())
					}
				case "route":
					if strings.Contains(lp.GetValue(), "nope") || strings.Contains(lp.GetValue(), "zz") {
						t.Fatalf("route label %q: want a route pattern", lp.GetValue())
					}
				}
			}
		}
	}
	if v := metricValue(t, e.reg, "crewcast_http_request_duration_seconds", map[string]string{"route": "/v1/groups", "method": "other", "code": "405"}); v != 220 {
		t.Errorf("405s on /v1/groups counted under method other: %v, want 220", v)
	}
	if v := metricValue(t, e.reg, "crewcast_http_request_duration_seconds", map[string]string{"route": "unmatched", "method": "other", "code": "404"}); v != 660 {
		t.Errorf("404s counted under route unmatched: %v, want 660", v)
	}
}
