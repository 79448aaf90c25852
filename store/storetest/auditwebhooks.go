package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// testWebhookAuditWithChange: every outbound webhook endpoint change —
// creation, update (and re-enabling, a rotation: both are updates), a test
// event, a recovery and deletion — commits with the audit entry that
// records it (issue 17): a refused entry leaves the change unmade, a
// taken one leaves exactly that entry, a write that fails on its own (a
// missing endpoint) leaves none.
func testWebhookAuditWithChange(t *testing.T, o Options) {
	r := newAuditRecorder(t, o)
	s := r.s
	ctx := context.Background()
	get := func(id string) (store.WebhookEndpoint, error) {
		t.Helper()
		return s.GetWebhookEndpoint(ctx, id)
	}

	e := endpoint("ep_a", "*")
	r.refused("CreateWebhookEndpoint", s.CreateWebhookEndpoint(ctx, e, r.bad()))
	if _, err := get(e.ID); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("endpoint after a refused create: %v, want not found", err)
	}
	if err := s.CreateWebhookEndpoint(ctx, e, r.ok("endpoint.created", e.ID)); err != nil {
		t.Fatal(err)
	}

	changed := e
	changed.URL, changed.DisabledAt, changed.DisabledReason = "https://hooks.example.com/other", t0, "disabled by an operator"
	r.refused("UpdateWebhookEndpoint", s.UpdateWebhookEndpoint(ctx, changed, r.bad()))
	if got, err := get(e.ID); err != nil || got.URL != e.URL || !got.DisabledAt.IsZero() {
		t.Fatalf("endpoint after a refused update = %+v, %v", got, err)
	}
	if err := s.UpdateWebhookEndpoint(ctx, changed, r.ok("endpoint.disabled", e.ID)); err != nil {
		t.Fatal(err)
	}
	if got, err := get(e.ID); err != nil || got.URL != changed.URL || !got.DisabledAt.Equal(t0) {
		t.Fatalf("endpoint after the update = %+v, %v", got, err)
	}
	missing := endpoint("ep_none", "*")
	if err := s.UpdateWebhookEndpoint(ctx, missing, store.AuditEntry{At: t0, Actor: r.who, Action: "endpoint.updated", Target: missing.ID}); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("update of a missing endpoint: %v", err)
	}

	// A rotation is an update of the secrets.
	rotated := changed
	rotated.PrevSecret, rotated.PrevUntil, rotated.Secret = changed.Secret, t0, []byte("sealed-new")
	r.refused("UpdateWebhookEndpoint (rotate)", s.UpdateWebhookEndpoint(ctx, rotated, r.bad()))
	if got, err := get(e.ID); err != nil || string(got.Secret) != string(changed.Secret) || len(got.PrevSecret) != 0 {
		t.Fatalf("secrets after a refused rotation = %q/%q, %v", got.Secret, got.PrevSecret, err)
	}
	if err := s.UpdateWebhookEndpoint(ctx, rotated, r.ok("endpoint.rotated", e.ID)); err != nil {
		t.Fatal(err)
	}

	// A recovery queues deliveries again: a refused entry queues nothing.
	if _, err := s.RecoverWebhookDeliveries(ctx, e.ID, t0, t0, r.bad()); err == nil {
		t.Fatal("RecoverWebhookDeliveries with a refused audit entry succeeded")
	}
	if _, err := s.RecoverWebhookDeliveries(ctx, missing.ID, t0, t0, store.AuditEntry{At: t0, Actor: r.who, Action: "endpoint.recovered", Target: missing.ID}); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("recovery of a missing endpoint: %v", err)
	}
	if _, err := s.RecoverWebhookDeliveries(ctx, e.ID, t0, t0, r.ok("endpoint.recovered", e.ID)); err != nil {
		t.Fatal(err)
	}

	// A test event: a refused entry leaves no row in the outbox.
	test := outboxRow("msg_test", "endpoint.test", "")
	test.Endpoint = e.ID
	r.refused("AppendOutbox", s.AppendOutbox(ctx, []store.OutboxRow{test}, r.bad()))
	if pending, _, err := s.WebhookQueue(ctx); err != nil || pending != 0 {
		t.Fatalf("queue after a refused test event = %d, %v; want empty", pending, err)
	}
	if err := s.AppendOutbox(ctx, []store.OutboxRow{test}, r.ok("endpoint.tested", e.ID)); err != nil {
		t.Fatal(err)
	}
	if pending, _, err := s.WebhookQueue(ctx); err != nil || pending != 1 {
		t.Fatalf("queue after the test event = %d, %v; want 1", pending, err)
	}

	r.refused("DeleteWebhookEndpoint", s.DeleteWebhookEndpoint(ctx, e.ID, r.bad()))
	if _, err := get(e.ID); err != nil {
		t.Fatalf("endpoint after a refused delete: %v", err)
	}
	if err := s.DeleteWebhookEndpoint(ctx, missing.ID, store.AuditEntry{At: t0, Actor: r.who, Action: "endpoint.deleted", Target: missing.ID}); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("delete of a missing endpoint: %v", err)
	}
	if err := s.DeleteWebhookEndpoint(ctx, e.ID, r.ok("endpoint.deleted", e.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := get(e.ID); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("endpoint after its delete: %v", err)
	}

	// Without entries the writes work as before and log nothing.
	if err := s.CreateWebhookEndpoint(ctx, endpoint("ep_b", "*")); err != nil {
		t.Fatal(err)
	}
	r.check()
}
