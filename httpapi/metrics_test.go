package httpapi

import (
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
