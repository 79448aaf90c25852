package tracker

import (
	"context"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/store"
)

// TestOptOutPhrasesSuppressAndPossibleOptOutsAreFlagged: a plain request
// to stop and a Spanish keyword suppress, in a group and unmatched; a stop
// word among other words suppresses nothing and is flagged on the reply.
func TestOptOutPhrasesSuppressAndPossibleOptOutsAreFlagged(t *testing.T) {
	e := newEnv(t, nil)
	id := e.create(3, crewcast.ModeIndividual)
	e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	ctx := context.Background()
	n := nums(3)
	const strangerStop, strangerMaybe = "+15550109998", "+15550109999"
	for _, in := range []struct{ id, from, text string }{
		{"in-1", n[0], "Please remove me!"}, {"in-2", n[1], "I can't stop by today"}, {"in-3", n[2], "yes"},
		{"in-4", strangerStop, "¡Baja, por favor!"}, {"in-5", strangerMaybe, "Need to cancel my shift"},
	} {
		if _, err := e.tr.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: in.id, Kind: crewcast.KindInbound, From: in.from, To: from, Text: in.text}}); err != nil {
			t.Fatal(err)
		}
	}
	var rows []store.Reply
	for deadline := time.Now().Add(10 * time.Second); ; {
		var err error
		if rows, _, err = e.st.ListReplies(ctx, store.ReplyQuery{Limit: 10}); err != nil {
			t.Fatal(err)
		}
		if len(rows) == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replies %+v", rows)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, r := range rows {
		want := r.Number == n[1] || r.Number == strangerMaybe
		if r.PossibleOptOut != want {
			t.Errorf("reply %q: possible_opt_out %v, want %v", r.Text, r.PossibleOptOut, want)
		}
	}
	sup, err := e.st.Suppressed(ctx, []string{n[0], n[1], n[2], strangerStop, strangerMaybe})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sup[n[0]]; !ok || len(sup) != 2 {
		t.Errorf("suppressed %v, want %s and %s only", sup, n[0], strangerStop)
	}
	if _, ok := sup[strangerStop]; !ok {
		t.Errorf("suppressed %v, want %s (unmatched BAJA)", sup, strangerStop)
	}
}
