package tracker

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/store"
)

// parkedCounter records ParkedExpired calls.
type parkedCounter struct {
	NopMetrics
	mu      sync.Mutex
	expired map[string]int
}

func (m *parkedCounter) ParkedExpired(provider string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.expired == nil {
		m.expired = map[string]int{}
	}
	m.expired[provider]++
}

// rawInboxPayload reads an inbox row's payload straight from the SQLite
// file: what a stolen disk would show, whatever the store API exposes.
func rawInboxPayload(t *testing.T, path, eventID string) (payload []byte, processed bool) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var at int64
	if err := db.QueryRow(`SELECT payload, processed_at FROM inbox WHERE event_id = ?`, eventID).Scan(&payload, &at); err != nil {
		t.Fatal(err)
	}
	return payload, at != 0
}

// TestParkedWebhooksExpireAndAreRedacted is issue 12's finding 6: a
// receipt for a message id crewcast never sent was parked forever —
// routed again by every sweep (CPU grows with them), its number and body
// out of retention's reach. Past ParkedTTL it must be acknowledged as
// expired, its payload dropped, counted in a metric, and purged with the
// processed inbox.
func TestParkedWebhooksExpireAndAreRedacted(t *testing.T) {
	m := &parkedCounter{}
	e := newEnv(t, func(c *Config) { c.Metrics = m; c.ParkedTTL = time.Hour })
	ctx := context.Background()
	stray := crewcast.Event{Provider: "fake", EventID: "stray-1", Kind: crewcast.KindStatus, MessageID: "never-sent",
		From: from, To: "+15550107777", Status: crewcast.StatusDelivered, Text: "secret body"}
	if _, err := e.tr.Ingest(ctx, []crewcast.Event{stray}); err != nil {
		t.Fatal(err)
	}
	// The router parks it at once (in real time; expiry comes hours
	// later). Wait for that here: a router still running when the sweep
	// below expires the entry would park it again afterwards.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		e.tr.mu.Lock()
		_, parked := e.tr.parked[msgKey("fake", "never-sent")]
		e.tr.mu.Unlock()
		if parked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the router never parked the receipt")
		}
	}
	// Within the TTL the entry stays parked: its send result may still be
	// on its way.
	e.clk.Advance(59 * time.Minute)
	if err := e.tr.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if p, err := e.st.PendingInbox(ctx, store.InboxRef{}, 10); err != nil || len(p) != 1 {
		t.Fatalf("pending within the TTL = %d, %v; want the parked entry", len(p), err)
	}
	e.clk.Advance(2 * time.Minute)
	if err := e.tr.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if p, err := e.st.PendingInbox(ctx, store.InboxRef{}, 10); err != nil || len(p) != 0 {
		t.Fatalf("pending past the TTL = %d, %v; want none", len(p), err)
	}
	payload, processed := rawInboxPayload(t, e.path, "stray-1")
	if !processed || len(payload) != 0 {
		t.Fatalf("expired entry: processed %v, payload %q; want processed with no number or body", processed, payload)
	}
	m.mu.Lock()
	n := m.expired["fake"]
	m.mu.Unlock()
	if n != 1 {
		t.Fatalf("ParkedExpired counted %d, want 1", n)
	}
	e.tr.mu.Lock()
	left := len(e.tr.parked)
	e.tr.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d parked marks left in memory", left)
	}
	// Retention's inbox purge deletes it with the other processed entries.
	e.clk.Advance(8 * 24 * time.Hour)
	rep, err := e.tr.RunRetention(ctx, RetentionPolicy{})
	if err != nil || rep.InboxPurged != 1 {
		t.Fatalf("retention purged %d, %v; want the expired entry", rep.InboxPurged, err)
	}
}
