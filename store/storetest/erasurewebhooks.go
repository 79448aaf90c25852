package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// testErasureWebhookAttempts: erasing a person deletes the outbound
// webhook events naming them with their queue entries and their attempts
// (an attempt keeps the receiver's answer, which may echo the payload),
// and any other attempt whose answer names them; the other recipient's
// event and attempt stay.
func testErasureWebhookAttempts(t *testing.T, o Options) {
	s, clock, _ := open(t, o)
	ctx := context.Background()
	const who, other = "+15550500011", "+15550500012"
	if err := s.CreateWebhookEndpoint(ctx, endpoint("a", "*")); err != nil {
		t.Fatal(err)
	}
	row := func(id, number string) store.OutboxRow {
		r := outboxRow(id, "recipient.updated", "g1")
		r.Payload = []byte(`{"type":"recipient.updated","data":{"recipient":{"number":"` + number + `"}}}`)
		return r
	}
	commitOK(t, s, actor.Unit{Key: "g1", Events: events("a", 1), Effects: []any{store.Effects{Group: group("g1", 1),
		Outbox: []store.OutboxRow{row("msg_who", who), row("msg_other", other)}}}})
	if n, err := s.DispatchOutbox(ctx, clock.Now(), 100); err != nil || n != 2 {
		t.Fatalf("dispatch = %d %v, want 2", n, err)
	}
	ds, err := s.ClaimWebhookDeliveries(ctx, store.WebhookClaim{Now: clock.Now(), Lease: time.Minute, Limit: 100, Owner: "n1"})
	if err != nil || len(ds) != 2 {
		t.Fatalf("claim = %v, %v", claimed(ds), err)
	}
	for _, d := range ds {
		// Each receiver answer echoes what it got; the other's first
		// answer also names the person (a receiver's own text).
		for k, resp := range []string{string(d.Row.Payload), "retry later, " + who} {
			if d.Row.MsgID == "msg_who" && k == 1 {
				continue
			}
			out := store.WebhookOutcome{Attempt: store.WebhookAttempt{EndpointID: "a", OutboxID: d.Row.ID, MsgID: d.Row.MsgID,
				Type: d.Row.Type, At: clock.Now(), StatusCode: 503, Result: store.AttemptHTTP, Response: resp},
				NextAt: clock.Now().Add(time.Second)}
			if _, err := s.RecordWebhookAttempt(ctx, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	nc, err := s.EraseNumber(ctx, who, "h:erased", "")
	if err != nil {
		t.Fatal(err)
	}
	if nc["webhook_outbox"] != 1 || nc["webhook_deliveries"] != 1 || nc["webhook_attempts"] != 2 {
		t.Fatalf("EraseNumber counts = %v, want 1 event, 1 queue entry, 2 attempts", nc)
	}
	as, err := s.ListWebhookAttempts(ctx, "a", 10)
	if err != nil || len(as) != 1 || as[0].MsgID != "msg_other" || as[0].Response != string(row("", other).Payload) {
		t.Fatalf("attempts after erasure = %+v, %v; want the other's echo only", as, err)
	}
	if nc, err := s.EraseNumber(ctx, who, "h:erased", ""); err != nil || nc.Total() != 0 {
		t.Fatalf("second EraseNumber = %v, %v", nc, err)
	}
}
