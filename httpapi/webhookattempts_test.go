package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/webhookout"
)

// Issue 27 item 10: the attempts list showed what the worker had kept of
// an attempt: the transport's error text (resolved address and port,
// refused or open) and the first 256 bytes of the answer. Attempts
// recorded that way before the fix are still in the store for a while;
// the list shows only the status code and the error class.
func TestWebhookAttemptsShowNoBodiesNorAddresses(t *testing.T) {
	sealer, err := webhookout.NewSealer("httpapi test server key")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) { c.WebhookSealer = sealer })
	admin := e.keys["admin"]
	ctx := context.Background()
	resp, b := e.do("POST", "/v1/webhook-endpoints", `{"url":"https://hooks.example.com/in","events":["*"]}`, admin, nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	var ep struct{ ID string }
	_ = json.Unmarshal(b, &ep)
	old := []store.WebhookAttempt{
		{StatusCode: 500, Result: store.AttemptHTTP, Response: "internal: db=10.0.0.7:5432 token=hunter2"},
		{Result: store.AttemptNetwork, Error: `Post "https://hooks.example.com/in": dial tcp 10.0.0.7:8443: connect: connection refused`},
		{Result: store.AttemptNetwork, Error: `Post "https://hooks.example.com/in": dial tcp: lookup hooks.example.com on 10.0.0.2:53: no such host`},
		{Result: store.AttemptRefused, Error: `Post "https://hooks.example.com/in": dial tcp 10.0.0.7:443: webhookout: destination address refused: 10.0.0.7`},
		{Result: store.AttemptNetwork, Error: `Post "https://10.0.0.7:8443": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`},
		{Result: store.AttemptNetwork, Error: `Post "https://10.0.0.7:8443": tls: failed to verify certificate: x509: certificate signed by unknown authority`},
	}
	for i, a := range old {
		a.EndpointID, a.MsgID, a.Type, a.At = ep.ID, "msg_"+string(rune('a'+i)), "endpoint.test", e.clock.Now()
		if _, err := e.st.RecordWebhookAttempt(ctx, store.WebhookOutcome{Attempt: a, NextAt: e.clock.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	_, b = e.do("GET", "/v1/webhook-endpoints/"+ep.ID+"/attempts", "", admin, nil)
	for _, leak := range []string{"10.0.0", "8443", "5432", "hunter2", "connection refused", "address refused", "lookup"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("attempts list shows %q", leak)
		}
	}
	var list struct {
		Attempts []struct {
			WebhookID  string `json:"webhook_id"`
			StatusCode int    `json:"status_code"`
			Error      string `json:"error"`
		}
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range list.Attempts {
		got[a.WebhookID] = a.Error
	}
	want := map[string]string{"msg_a": "http_status", "msg_b": "connect", "msg_c": "dns", "msg_d": "blocked_address",
		"msg_e": "timeout", "msg_f": "tls"}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: error %q, want %q", id, got[id], w)
		}
	}
}
