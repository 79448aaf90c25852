package tracker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// TestUnmatchedReplyJournaledOnceWhenSweepRacesRouter: the sweep reads the
// inbox without a transaction around routing, so it may hand over an
// unmatched inbound message that the router is recording, or has just
// recorded. The unmatched journal must still hold each message once.
func TestUnmatchedReplyJournaledOnceWhenSweepRacesRouter(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	const n = 20
	for i := range n {
		evID := fmt.Sprintf("u-%d", i)
		if _, err := e.tr.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: evID, Kind: crewcast.KindInbound,
			From: "+15550109999", To: from, Text: "who is this? " + evID}}); err != nil {
			t.Fatal(err)
		}
		// The stale reader: a sweep pass right behind the router.
		if err := e.tr.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		p, err := e.st.PendingInbox(ctx, store.InboxRef{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d unmatched replies left unprocessed", len(p))
		}
		time.Sleep(5 * time.Millisecond)
	}
	var events int
	if err := e.st.Load(ctx, unmatchedKey, 0, func(actor.Event) error { events++; return nil }); err != nil {
		t.Fatal(err)
	}
	if events != n {
		t.Fatalf("%d unmatched journal events for %d inbound messages", events, n)
	}
}
