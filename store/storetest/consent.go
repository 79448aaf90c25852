package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// testConsent: a number's consent history is append-only and kept in
// order, exactly as written, whether appended on its own or with a commit's
// suppression; it survives a reopen (a restart); the newest entry of each
// number is found in one read; erasing the number deletes its history, and
// only its, while its suppression stays under the kept form.
func testConsent(t *testing.T, o Options) {
	ctx := context.Background()
	db := o.NewDB(t)
	s := db.Open(t, Config{Now: NewClock(t0).Now})
	const who, other = "+15550700001", "+15550700002"
	in := store.ConsentEntry{Number: who, At: t0, State: store.ConsentOptedIn, Source: store.ConsentSourceImport,
		By: "usr_1", Text: "Yes, text me about shifts"}
	if err := s.AppendConsent(ctx, in, store.ConsentEntry{Number: other, At: t0, State: store.ConsentOptedIn,
		Source: store.ConsentSourceAPI, By: "key_1"}); err != nil {
		t.Fatal(err)
	}
	stop := store.ConsentEntry{Number: who, At: t0.Add(time.Minute), State: store.ConsentOptedOut,
		Source: store.ConsentSourceSMS, Text: "STOP please"}
	commitOK(t, s, actor.Unit{Key: "u", Effects: []any{store.Effects{
		Suppress: []store.Suppression{{Number: who, Reason: store.ReasonStop, CreatedAt: stop.At}},
		Consent:  []store.ConsentEntry{stop},
	}}})
	want := []store.ConsentEntry{in, stop}
	if h, err := s.ConsentHistory(ctx, who); err != nil || !reflect.DeepEqual(h, want) {
		t.Fatalf("ConsentHistory = %+v, %v; want %+v", h, err, want)
	}
	if h, err := s.ConsentHistory(ctx, "+15550700009"); err != nil || h == nil || len(h) != 0 {
		t.Fatalf("ConsentHistory of a number with none = %#v, %v; want empty", h, err)
	}
	latest, err := s.LatestConsent(ctx, []string{who, other, "+15550700009"})
	if err != nil || len(latest) != 2 || latest[who] != stop || latest[other].Source != store.ConsentSourceAPI {
		t.Fatalf("LatestConsent = %+v, %v", latest, err)
	}

	// A unit that fails (its claim names a suppressed number) writes no
	// consent entry; the other unit of the same commit writes its own.
	lift := store.ConsentEntry{Number: other, At: t0.Add(2 * time.Minute), State: store.ConsentOptedOut,
		Source: store.ConsentSourceBoard, By: "usr_2"}
	res := commit(t, s,
		actor.Unit{Key: "bad", Effects: []any{store.Effects{Claim: []string{who},
			Consent: []store.ConsentEntry{{Number: who, State: store.ConsentOptedIn, Source: store.ConsentSourceSMS}}}}},
		actor.Unit{Key: "good", Effects: []any{store.Effects{Consent: []store.ConsentEntry{lift}}}})
	if !errors.Is(res[0], store.ErrSuppressed) || res[1] != nil {
		t.Fatalf("Commit = %v, want the claim refused and the other unit committed", res)
	}
	if h, err := s.ConsentHistory(ctx, other); err != nil || len(h) != 2 || h[1] != lift {
		t.Fatalf("the committed unit's consent: %+v, %v", h, err)
	}

	// A restart: a new store on the same database reads the same history.
	s2 := db.Open(t, Config{Now: NewClock(t0).Now})
	if h, err := s2.ConsentHistory(ctx, who); err != nil || !reflect.DeepEqual(h, want) {
		t.Fatalf("after reopen: ConsentHistory = %+v, %v", h, err)
	}

	counts, err := s2.EraseNumber(ctx, who, "h:erased", "h:kept")
	if err != nil {
		t.Fatal(err)
	}
	if counts["consent_history"] != 2 {
		t.Fatalf("erasure counts = %v, want consent_history: 2", counts)
	}
	if h, err := s2.ConsentHistory(ctx, who); err != nil || len(h) != 0 {
		t.Fatalf("after erasure: ConsentHistory = %+v, %v; want none", h, err)
	}
	if h, err := s2.ConsentHistory(ctx, other); err != nil || len(h) != 2 {
		t.Fatalf("after erasure: the other number's history = %+v, %v", h, err)
	}
	sup, err := s2.Suppressed(ctx, []string{who, "h:kept"})
	if err != nil || len(sup) != 1 || sup["h:kept"].Reason != store.ReasonStop {
		t.Fatalf("after erasure: suppressions = %+v, %v; want only the kept one", sup, err)
	}
}
