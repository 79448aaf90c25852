package tracker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/webhookout"
)

type fakeOutbox struct {
	enabled atomic.Bool
	kicks   atomic.Int64
}

func (f *fakeOutbox) Enabled() bool { return f.enabled.Load() }
func (f *fakeOutbox) Kick()         { f.kicks.Add(1) }

// outboxRows fans the outbox out to an endpoint wanting everything and
// returns what it would receive, in outbox order.
func outboxRows(t *testing.T, st store.Store) []store.OutboxRow {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	for {
		n, err := st.DispatchOutbox(ctx, now, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	ds, err := st.ClaimWebhookDeliveries(ctx, store.WebhookClaim{Now: now.Add(time.Hour), Lease: time.Hour, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []store.OutboxRow
	for _, d := range ds {
		out = append(out, d.Row)
	}
	return out
}

// TestOutboxWrittenWithTheChange: every change the group actor commits
// (creation, status changes, a reply, completion) and an unmatched inbound
// message have their outbound webhook row, written by the same commit:
// each row's seq is a journal event of its group.
func TestOutboxWrittenWithTheChange(t *testing.T) {
	hooks := &fakeOutbox{}
	hooks.enabled.Store(true)
	e := newEnv(t, func(c *Config) { c.Webhooks = hooks })
	ctx := context.Background()
	if err := e.st.CreateWebhookEndpoint(ctx, store.WebhookEndpoint{ID: "all", URL: "https://x.example/", Events: []string{"*"},
		Signing: store.SigningHMAC, Secret: []byte("clear:whsec_x"), CreatedAt: e.clk.Now(), UpdatedAt: e.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	id := e.create(2, crewcast.ModeIndividual)
	_, rows := e.waitGroup(id, "all sent", allStatus(crewcast.StatusSent))
	for i, d := range rows {
		if _, err := e.tr.Ingest(ctx, []crewcast.Event{statusEvent(fmt.Sprintf("ev-%d", i), d, crewcast.StatusDelivered)}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitGroup(id, "complete", func(g store.GroupRow, _ []store.DeliveryRow) bool { return g.Status == crewcast.GroupComplete })
	if _, err := e.tr.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: "in-1", Kind: crewcast.KindInbound,
		From: nums(2)[0], To: from, Text: "yes"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tr.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: "in-2", Kind: crewcast.KindInbound,
		From: "+15550109999", To: from, Text: "who is this?"}}); err != nil {
		t.Fatal(err)
	}
	var got []store.OutboxRow
	var count map[string]int
	for deadline := time.Now().Add(10 * time.Second); ; {
		got = append(got, outboxRows(t, e.st)...)
		count = map[string]int{}
		for _, r := range got {
			count[r.Type]++
		}
		if count[webhookout.RecipientReplied] == 1 && count[webhookout.InboundUnmatched] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox types %v", count)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Each recipient went pending → sending → sent → delivered.
	if count[webhookout.GroupCreated] != 1 || count[webhookout.GroupCompleted] != 1 || count[webhookout.RecipientUpdated] != 6 {
		t.Fatalf("outbox types %v, want 1 group.created, 6 recipient.updated, 1 group.completed", count)
	}
	seqs := map[uint64]bool{}
	if err := e.st.Load(ctx, id, 0, func(ev actor.Event) error { seqs[ev.Seq] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	last := map[string]string{}
	for _, r := range got {
		if r.Type == webhookout.InboundUnmatched {
			if r.GroupID != "" {
				t.Fatalf("unmatched row names group %q", r.GroupID)
			}
			continue
		}
		if r.GroupID != id || !seqs[r.Seq] {
			t.Fatalf("row %s %s seq %d is not a journal event of the group", r.Type, r.GroupID, r.Seq)
		}
		var b struct {
			Type string `json:"type"`
			Data struct {
				GroupID   string `json:"group_id"`
				Seq       uint64 `json:"seq"`
				Recipient *struct {
					Number string `json:"number"`
					Status string `json:"status"`
				} `json:"recipient"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.Payload, &b); err != nil || b.Type != r.Type || b.Data.GroupID != id || b.Data.Seq != r.Seq {
			t.Fatalf("body of %s: %s (%v)", r.Type, r.Payload, err)
		}
		if r.Type == webhookout.RecipientUpdated {
			last[b.Data.Recipient.Number] = b.Data.Recipient.Status
		}
	}
	for _, n := range nums(2) {
		if last[n] != string(crewcast.StatusDelivered) {
			t.Fatalf("last recipient.updated of %s says %q, want delivered", n, last[n])
		}
	}
	if hooks.kicks.Load() == 0 {
		t.Fatal("the worker was never kicked after a commit with outbox rows")
	}
}

// Without endpoints, commits write no outbox rows.
func TestNoOutboxWithoutEndpoints(t *testing.T) {
	hooks := &fakeOutbox{}
	e := newEnv(t, func(c *Config) { c.Webhooks = hooks })
	id := e.create(2, crewcast.ModeIndividual)
	e.waitGroup(id, "all sent", allStatus(crewcast.StatusSent))
	if n, _, err := e.st.WebhookQueue(context.Background()); err != nil || n != 0 {
		t.Fatalf("outbox rows without endpoints: %d %v", n, err)
	}
}

// A webhook shows a recipient as the API does: the contact they were
// chosen as and the text they were sent (docs/design.md §11 in §13's payloads).
func TestOutboxRecipientCarriesContactAndText(t *testing.T) {
	hooks := &fakeOutbox{}
	hooks.enabled.Store(true)
	e := newEnv(t, func(c *Config) { c.Webhooks = hooks })
	ctx := context.Background()
	if err := e.st.CreateWebhookEndpoint(ctx, store.WebhookEndpoint{ID: "all", URL: "https://x.example/", Events: []string{"*"},
		Signing: store.SigningHMAC, Secret: []byte("clear:whsec_x"), CreatedAt: e.clk.Now(), UpdatedAt: e.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	n := nums(1)[0]
	id, _, err := e.tr.Create(ctx, group.Request{From: from, Text: "Hi {{first_name}}", Crews: []string{"All"},
		Resolved: []group.RecipientInput{{Number: n, Name: "Ada King", ContactID: "ct_ada"}}}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	for deadline := time.Now().Add(10 * time.Second); ; {
		for _, r := range outboxRows(t, e.st) {
			if r.Type != webhookout.RecipientUpdated {
				continue
			}
			var b struct {
				Data struct{ Recipient webhookout.RecipientJSON } `json:"data"`
			}
			if err := json.Unmarshal(r.Payload, &b); err != nil {
				t.Fatal(err)
			}
			if b.Data.Recipient.ContactID != "ct_ada" || b.Data.Recipient.Text != "Hi Ada" {
				t.Fatalf("webhook recipient %+v, want contact ct_ada and text %q", b.Data.Recipient, "Hi Ada")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no recipient.updated row")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
