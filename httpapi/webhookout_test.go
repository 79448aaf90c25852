package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/webhookout"
)

func TestWebhookEndpointsAPI(t *testing.T) {
	sealer, err := webhookout.NewSealer("httpapi test server key")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) { c.WebhookSealer = sealer })
	admin := e.keys["admin"]
	ctx := context.Background()

	// Only admins manage endpoints.
	if resp, _ := e.do("GET", "/v1/webhook-endpoints", "", e.keys["send"], nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("send key lists endpoints: %d", resp.StatusCode)
	}
	for _, body := range []string{
		`{"url":"http://127.0.0.1:9/x","events":["*"]}`,          // loopback without allow-private
		`{"url":"http://169.254.169.254/latest","events":["*"]}`, // metadata
		`{"url":"https://hooks.example.com/","events":[]}`,       // no events
		`{"url":"https://hooks.example.com/","events":["nope"]}`, // unknown event
		`{"url":"https://hooks.example.com/","events":["*"],"signing":"rsa"}`,
		`{"url":"ftp://hooks.example.com/","events":["*"]}`,
	} {
		if resp, b := e.do("POST", "/v1/webhook-endpoints", body, admin, nil); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %d %s, want 400", body, resp.StatusCode, b)
		}
	}
	resp, b := e.do("POST", "/v1/webhook-endpoints",
		`{"url":"https://hooks.example.com/in","events":["recipient.updated","group.completed"],"description":"ops"}`, admin, nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	var created struct {
		ID     string   `json:"id"`
		URL    string   `json:"url"`
		Events []string `json:"events"`
		Secret string   `json:"secret"`
	}
	if err := json.Unmarshal(b, &created); err != nil || !strings.HasPrefix(created.Secret, "whsec_") || created.ID == "" {
		t.Fatalf("created %s", b)
	}
	// The secret is shown only once and stored sealed.
	_, b = e.do("GET", "/v1/webhook-endpoints/"+created.ID, "", admin, nil)
	if strings.Contains(string(b), "whsec_") || strings.Contains(string(b), "secret") {
		t.Fatalf("GET shows the secret: %s", b)
	}
	stored, err := e.st.GetWebhookEndpoint(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored.Secret), strings.TrimPrefix(created.Secret, "whsec_")) {
		t.Fatal("the secret is stored in clear although a key is configured")
	}
	if got, err := sealer.Open(created.ID, stored.Secret); err != nil || got != created.Secret {
		t.Fatalf("stored secret opens to %q %v", got, err)
	}

	// Ed25519: the answer is the public key, the store keeps the private one.
	resp, b = e.do("POST", "/v1/webhook-endpoints", `{"url":"https://hooks.example.com/ed","events":["*"],"signing":"ed25519"}`, admin, nil)
	var ed struct{ ID, Secret string }
	_ = json.Unmarshal(b, &ed)
	if resp.StatusCode != http.StatusCreated || !strings.HasPrefix(ed.Secret, "whpk_") {
		t.Fatalf("ed25519 create: %d %s", resp.StatusCode, b)
	}
	edRow, _ := e.st.GetWebhookEndpoint(ctx, ed.ID)
	priv, err := sealer.Open(ed.ID, edRow.Secret)
	if err != nil || !strings.HasPrefix(priv, "whsk_") {
		t.Fatalf("stored ed25519 key %q %v", priv[:min(5, len(priv))], err)
	}
	if pub, _ := webhookout.PublicOf(priv); pub != ed.Secret {
		t.Fatal("the public key shown does not match the stored private key")
	}

	// PATCH, disable and enable.
	resp, b = e.do("PATCH", "/v1/webhook-endpoints/"+created.ID, `{"events":["*"],"disabled":true}`, admin, nil)
	var ep endpointJSON
	_ = json.Unmarshal(b, &ep)
	if resp.StatusCode != http.StatusOK || !ep.Disabled || !reflect.DeepEqual(ep.Events, []string{"*"}) || ep.Description != "ops" {
		t.Fatalf("patch: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do("PATCH", "/v1/webhook-endpoints/"+created.ID, `{"url":"http://10.0.0.1/"}`, admin, nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("patch to a private URL: %d %s", resp.StatusCode, b)
	}
	_, b = e.do("PATCH", "/v1/webhook-endpoints/"+created.ID, `{"disabled":false}`, admin, nil)
	_ = json.Unmarshal(b, &ep)
	if ep.Disabled || ep.DisabledReason != "" {
		t.Fatalf("enable: %s", b)
	}

	// Rotation: a new secret; the old one keeps signing for the overlap.
	resp, b = e.do("POST", "/v1/webhook-endpoints/"+created.ID+"/rotate", "", admin, nil)
	var rot struct{ Secret string }
	_ = json.Unmarshal(b, &rot)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(rot.Secret, "whsec_") || rot.Secret == created.Secret {
		t.Fatalf("rotate: %d %s", resp.StatusCode, b)
	}
	row, _ := e.st.GetWebhookEndpoint(ctx, created.ID)
	if prev, err := sealer.Open(created.ID, row.PrevSecret); err != nil || prev != created.Secret || !row.PrevUntil.Equal(e.clock.Now().Add(rotationOverlap)) {
		t.Fatalf("previous secret after rotation: %v until %v", err, row.PrevUntil)
	}
	_, b = e.do("GET", "/v1/webhook-endpoints/"+created.ID, "", admin, nil)
	if !strings.Contains(string(b), `"rotating_until":"`) {
		t.Fatalf("GET after rotation: %s", b)
	}

	// Test event: queued to this endpoint only.
	resp, b = e.do("POST", "/v1/webhook-endpoints/"+created.ID+"/test", "", admin, nil)
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(b), `"type":"endpoint.test"`) {
		t.Fatalf("test: %d %s", resp.StatusCode, b)
	}
	if _, err := e.st.DispatchOutbox(ctx, e.clock.Now(), 10); err != nil {
		t.Fatal(err)
	}
	ds, err := e.st.ClaimWebhookDeliveries(ctx, store.WebhookClaim{Now: e.clock.Now(), Lease: time.Minute, Limit: 10})
	if err != nil || len(ds) != 1 || ds[0].EndpointID != created.ID || ds[0].Row.Type != webhookout.EndpointTest {
		t.Fatalf("test event deliveries %+v %v", ds, err)
	}
	// Attempts log.
	if _, err := e.st.RecordWebhookAttempt(ctx, store.WebhookOutcome{Attempt: store.WebhookAttempt{EndpointID: created.ID,
		OutboxID: ds[0].Row.ID, MsgID: ds[0].Row.MsgID, Type: ds[0].Row.Type, At: e.clock.Now(), StatusCode: 204,
		Result: store.AttemptOK, Latency: 7 * time.Millisecond}, Delivered: true}); err != nil {
		t.Fatal(err)
	}
	_, b = e.do("GET", "/v1/webhook-endpoints/"+created.ID+"/attempts", "", admin, nil)
	if !strings.Contains(string(b), `"status_code":204`) || !strings.Contains(string(b), `"latency_ms":7`) ||
		!strings.Contains(string(b), `"webhook_id":"`+ds[0].Row.MsgID+`"`) {
		t.Fatalf("attempts: %s", b)
	}
	// Recover needs since; unknown ids are 404.
	if resp, _ := e.do("POST", "/v1/webhook-endpoints/"+created.ID+"/recover", `{}`, admin, nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("recover without since: %d", resp.StatusCode)
	}
	if resp, b := e.do("POST", "/v1/webhook-endpoints/"+created.ID+"/recover", `{"since":"2020-01-01T00:00:00Z"}`, admin, nil); resp.StatusCode != http.StatusAccepted ||
		!strings.Contains(string(b), `"queued":0`) {
		t.Fatalf("recover: %d %s", resp.StatusCode, b)
	}
	for _, p := range []string{"", "/attempts"} {
		if resp, _ := e.do("GET", "/v1/webhook-endpoints/ep_nope"+p, "", admin, nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET unknown%s: %d", p, resp.StatusCode)
		}
	}
	_, b = e.do("GET", "/v1/webhook-endpoints", "", admin, nil)
	var list struct{ Endpoints []endpointJSON }
	if err := json.Unmarshal(b, &list); err != nil || len(list.Endpoints) != 2 {
		t.Fatalf("list: %s", b)
	}
	if resp, _ := e.do("DELETE", "/v1/webhook-endpoints/"+created.ID, "", admin, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if resp, _ := e.do("DELETE", "/v1/webhook-endpoints/"+created.ID, "", admin, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("delete again: %d", resp.StatusCode)
	}
}

func TestWebhookEndpointAllowPrivate(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.WebhookAllowPrivate = true })
	if resp, b := e.do("POST", "/v1/webhook-endpoints", `{"url":"http://127.0.0.1:9/x","events":["*"]}`, e.keys["admin"], nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("allow-private create: %d %s", resp.StatusCode, b)
	}
}

// Webhook bodies show groups and recipients exactly as the API does.
func TestWebhookShapesMatchAPI(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	g := store.GroupRow{ID: "g1", Status: crewcast.GroupComplete, From: "+15550100000", Mode: crewcast.ModeIndividual,
		Text: "Crew call", CreatedAt: now, UpdatedAt: now.Add(time.Minute), Seq: 9,
		Counts: map[string]int{"delivered": 2, "failed": 1, "replied": 1, "acknowledged": 1, "no_reply": 1}}
	d := store.DeliveryRow{GroupID: "g1", Number: "+15550100001", Name: "Ana", Status: crewcast.StatusFailed, Attempts: 2,
		ProviderMessageID: "m1", ErrorCode: "30003", ErrorClass: crewcast.ErrorClass("unreachable"), ClaimedAt: now, SentAt: now,
		FailedAt: now.Add(time.Second), RepliedAt: now.Add(time.Hour), Ack: crewcast.Ack("yes"), LastReply: "yes", UpdatedAt: now}
	for _, c := range []struct{ api, hook any }{{groupOf(g), webhookout.GroupOf(g)}, {recipientOf(d), webhookout.RecipientOf(d)}} {
		a, _ := json.Marshal(c.api)
		h, _ := json.Marshal(c.hook)
		if string(a) != string(h) {
			t.Fatalf("webhook shape differs from the API:\n api %s\nhook %s", a, h)
		}
	}
	// An inbound message that matched no group: GET /v1/replies and the
	// inbound.unmatched event's data.reply (with and without media).
	for _, media := range [][]string{nil, {"https://example.com/a.jpg"}} {
		rp := store.Reply{Provider: "telnyx", EventID: "ev1", Number: "+15550100001", To: "+15550100000",
			Text: "can't stop by", Media: media, ReceivedAt: now, PossibleOptOut: true}
		row := webhookout.Unmatched("unmatched", 3, rp, now)
		var body struct {
			Data struct {
				Reply json.RawMessage `json:"reply"`
			} `json:"data"`
		}
		if err := json.Unmarshal(row.Payload, &body); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(replyOf(rp))
		if string(a) != string(body.Data.Reply) {
			t.Fatalf("inbound.unmatched reply differs from the API:\n api %s\nhook %s", a, body.Data.Reply)
		}
	}
}
