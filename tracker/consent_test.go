package tracker

import (
	"context"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// awaitConsent waits until the number's consent history has n entries.
func awaitConsent(t *testing.T, st store.Store, number string, n int) []store.ConsentEntry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, err := st.ConsentHistory(context.Background(), number)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) >= n || time.Now().After(deadline) {
			return h
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Issue 32 item 3: a STOP makes the person's consent opted_out from sms
// with the words they sent, a START opted_in from sms, both committed with
// the suppression they make or lift: from a recipient of a group (the
// group actor) and from a number no group knows (the unmatched journal).
func TestStopAndStartRecordConsent(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	const stranger, crew = "+15559870101", "+15559870102"
	inbound := func(id, who, text string) {
		t.Helper()
		if _, err := e.tr.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: id, Kind: crewcast.KindInbound,
			From: who, To: from, Text: text}}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(h []store.ConsentEntry, n int, state, text string) {
		t.Helper()
		if len(h) != n {
			t.Fatalf("history = %+v, want %d entries", h, n)
		}
		last := h[n-1]
		if last.State != state || last.Source != store.ConsentSourceSMS || last.Text != text || last.By != "" || last.At.IsZero() {
			t.Fatalf("last entry = %+v, want %s from sms with %q", last, state, text)
		}
	}
	inbound("in-1", stranger, "STOP")
	awaitSuppressed(t, e.st, stranger, 10*time.Second)
	check(awaitConsent(t, e.st, stranger, 1), 1, store.ConsentOptedOut, "STOP")
	inbound("in-2", stranger, "START")
	check(awaitConsent(t, e.st, stranger, 2), 2, store.ConsentOptedIn, "START")

	id, _, err := e.tr.Create(ctx, group.Request{From: from, To: []string{crew}, Text: "Crew call 7am",
		Mode: crewcast.ModeIndividual}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitGroup(id, "sent", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		return len(rows) == 1 && rows[0].Status == crewcast.StatusSent
	})
	inbound("in-3", crew, "Stop")
	awaitSuppressed(t, e.st, crew, 10*time.Second)
	check(awaitConsent(t, e.st, crew, 1), 1, store.ConsentOptedOut, "Stop")
}

// withConsent: a provider opt-out is opted_out from provider, an
// operator's suppression adds nothing here (its request records it), the
// words come from the number's reply in the unit, and the effects it was
// given are left as they were (a unit committed again derives the same).
func TestWithConsentDerivesEntries(t *testing.T) {
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	in := store.Effects{
		Suppress: []store.Suppression{{Number: "+15559870201", Reason: store.ReasonStop},
			{Number: "+15559870202", Reason: store.ReasonProviderOptOut, CreatedAt: at.Add(-time.Second)},
			{Number: "+15559870203", Reason: store.ReasonManual}},
		Unsuppress: []string{"+15559870204"},
		Replies:    []store.Reply{{Number: "+15559870201", Text: "stop texting me"}, {Number: "+15559870204", Text: "START"}},
	}
	out := withConsent(in, at)
	want := []store.ConsentEntry{
		{Number: "+15559870201", At: at, State: store.ConsentOptedOut, Source: store.ConsentSourceSMS, Text: "stop texting me"},
		{Number: "+15559870202", At: at.Add(-time.Second), State: store.ConsentOptedOut, Source: store.ConsentSourceProvider},
		{Number: "+15559870204", At: at, State: store.ConsentOptedIn, Source: store.ConsentSourceSMS, Text: "START"},
	}
	if len(out.Consent) != len(want) {
		t.Fatalf("consent = %+v, want %+v", out.Consent, want)
	}
	for i := range want {
		if out.Consent[i] != want[i] {
			t.Fatalf("consent[%d] = %+v, want %+v", i, out.Consent[i], want[i])
		}
	}
	if in.Consent != nil || len(withConsent(in, at).Consent) != 3 {
		t.Fatalf("withConsent changed its input: %+v", in.Consent)
	}
	if e := withConsent(store.Effects{Replies: in.Replies}, at); e.Consent != nil {
		t.Fatalf("no suppression, yet consent = %+v", e.Consent)
	}
}
