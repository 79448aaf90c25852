package httpapi

import "testing"

// Issue 27 item 11: API answers lacked X-Content-Type-Options: nosniff,
// so a browser could sniff a JSON or CSV answer holding a message text
// into HTML. Every answer carries it: JSON, CSV, YAML, metrics, errors
// (404, 405, 401) and event streams.
func TestEveryAPIAnswerIsNosniff(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createGroup("+15550100001")
	for _, c := range []struct{ method, path, key string }{
		{"GET", "/healthz", ""},
		{"GET", "/openapi.yaml", ""},
		{"GET", "/metrics", ""},
		{"GET", "/v1/groups", "read"},
		{"GET", "/v1/groups/" + id, "read"},
		{"GET", "/v1/reports/deliveries?format=csv", "read"},
		{"GET", "/v1/groups", ""},
		{"GET", "/v1/no-such-thing", "read"},
		{"DELETE", "/v1/groups", "read"},
		{"POST", "/v1/groups", "send"},
	} {
		resp, _ := e.do(c.method, c.path, "", c.key, nil)
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s (%d): X-Content-Type-Options %q, want nosniff", c.method, c.path, resp.StatusCode, got)
		}
	}
	s := e.openStream("/v1/groups/"+id+"/stream", "", "read")
	if got := s.resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("event stream: X-Content-Type-Options %q, want nosniff", got)
	}
}
