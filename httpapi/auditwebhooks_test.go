package httpapi

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/crewcast/crewcast/store"
)

// Every outbound webhook endpoint change is audited (docs/design.md §14:
// "endpoint change"), with its entry handed to the store write that makes
// the change (one transaction, issue 17): with AppendAudit refused each
// route still leaves exactly one entry naming the admin key, and no entry
// carries the signing secret. Failed before the change: the endpoint
// routes wrote no entry at all.
func TestWebhookEndpointAuditCommitsWithChange(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Store = noAppendStore{c.Store} })
	var secrets []string
	ok := func(want int, method, path, body string) []byte {
		t.Helper()
		r, b := e.do(method, path, body, "admin", nil)
		if r.StatusCode != want {
			t.Fatalf("%s %s: %d %s", method, path, r.StatusCode, b)
		}
		return b
	}
	created := decode[newEndpointJSON](t, ok(201, "POST", "/v1/webhook-endpoints", `{"url":"https://hooks.example.com/in","events":["*"]}`))
	id := created.ID
	secrets = append(secrets, created.Secret)
	ok(200, "PATCH", "/v1/webhook-endpoints/"+id, `{"url":"https://hooks.example.com/new","description":"ops"}`)
	ok(200, "PATCH", "/v1/webhook-endpoints/"+id, `{"disabled":true}`)
	ok(200, "PATCH", "/v1/webhook-endpoints/"+id, `{"disabled":false}`) // the board's "Enable again"
	ok(200, "PATCH", "/v1/webhook-endpoints/"+id, `{}`)                 // changes nothing: no entry
	secrets = append(secrets, decode[newEndpointJSON](t, ok(200, "POST", "/v1/webhook-endpoints/"+id+"/rotate", "")).Secret)
	ok(202, "POST", "/v1/webhook-endpoints/"+id+"/test", "")
	ok(202, "POST", "/v1/webhook-endpoints/"+id+"/recover", `{"since":"2026-01-01T00:00:00Z"}`)
	ok(204, "DELETE", "/v1/webhook-endpoints/"+id, "")
	ok(404, "DELETE", "/v1/webhook-endpoints/"+id, "") // a failed change: no entry

	entries, _, err := e.st.ListAudit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range entries {
		if en.Actor.ID != e.keyIDs["admin"] || en.Actor.Type != store.ActorKey || en.Actor.IP == "" {
			t.Errorf("entry %+v: actor is not the admin key", en)
		}
		for _, s := range secrets {
			if s == "" || strings.Contains(en.Target, s) || strings.Contains(en.Target, "whsec_") {
				t.Errorf("entry %+v carries the secret", en)
			}
		}
		got = append(got, en.Action+" "+en.Target)
	}
	want := []string{auditEndpointDeleted + " " + id, auditEndpointRecovered + " " + id + " since 2026-01-01T00:00:00Z", auditEndpointTested + " " + id,
		auditEndpointRotated + " " + id, auditEndpointEnabled + " " + id, auditEndpointDisabled + " " + id,
		auditEndpointUpdated + " " + id + " url description", auditEndpointCreated + " " + id}
	if !slices.Equal(got, want) {
		t.Fatalf("audit (newest first) = %q\nwant %q", got, want)
	}
}

// An endpoint change whose audit entry the database refuses is not made:
// the client hears of the failure and nothing changed.
func TestWebhookEndpointChangeFailsWithItsAudit(t *testing.T) {
	e := newEnv(t, nil)
	refuseAudit(t, e, auditEndpointCreated, auditEndpointDeleted)
	if r, b := e.do("POST", "/v1/webhook-endpoints", `{"url":"https://hooks.example.com/in","events":["*"]}`, "admin", nil); r.StatusCode < 500 {
		t.Fatalf("create with its entry refused: %d %s, want an error", r.StatusCode, b)
	}
	if eps, err := e.st.ListWebhookEndpoints(context.Background()); err != nil || len(eps) != 0 {
		t.Fatalf("endpoints after a refused entry = %+v, %v; want none", eps, err)
	}

	e = newEnv(t, nil)
	refuseAudit(t, e, auditEndpointRotated, auditEndpointDisabled, auditEndpointDeleted)
	r, b := e.do("POST", "/v1/webhook-endpoints", `{"url":"https://hooks.example.com/in","events":["*"]}`, "admin", nil)
	if r.StatusCode != 201 {
		t.Fatalf("create: %d %s", r.StatusCode, b)
	}
	id := decode[newEndpointJSON](t, b).ID
	before, err := e.st.GetWebhookEndpoint(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/webhook-endpoints/" + id + "/rotate", ""},
		{"PATCH", "/v1/webhook-endpoints/" + id, `{"disabled":true}`},
		{"DELETE", "/v1/webhook-endpoints/" + id, ""},
	} {
		if r, b := e.do(c.method, c.path, c.body, "admin", nil); r.StatusCode < 500 {
			t.Fatalf("%s %s with its entry refused: %d %s, want an error", c.method, c.path, r.StatusCode, b)
		}
	}
	after, err := e.st.GetWebhookEndpoint(context.Background(), id)
	if err != nil {
		t.Fatalf("endpoint after a refused delete: %v", err)
	}
	if !slices.Equal(after.Secret, before.Secret) || len(after.PrevSecret) != 0 || !after.DisabledAt.IsZero() {
		t.Fatalf("endpoint changed by refused writes: %+v", after)
	}
}
