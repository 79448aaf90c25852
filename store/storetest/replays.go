package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// testReplayRecord: an event whose inbox row retention purged is still
// refused (InboxReplay) while its replay record lasts, and stored again
// only after PurgeReplays dropped the record.
func testReplayRecord(t *testing.T, o Options) {
	s, clock, _ := open(t, o)
	ctx := context.Background()
	ev := func(id string) store.InboxEntry {
		return store.InboxEntry{Provider: "twilio", EventID: id, Payload: []byte(`[]`)}
	}
	ingest := func(want []store.InboxResult, es ...store.InboxEntry) {
		t.Helper()
		got, err := s.IngestInbox(ctx, es)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("IngestInbox = %v, want %v", got, want)
		}
	}
	New, Dup, Replay := store.InboxNew, store.InboxDuplicate, store.InboxReplay
	ingest([]store.InboxResult{New, Dup, New}, ev("SM1:received:"), ev("SM1:received:"), ev("SM2:delivered:"))
	ingest([]store.InboxResult{Dup}, ev("SM1:received:"))
	if err := s.AckInbox(ctx, []store.InboxRef{{Provider: "twilio", EventID: "SM1:received:"}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if n, err := s.PurgeInbox(ctx, clock.Now()); err != nil || n != 1 {
		t.Fatalf("PurgeInbox = %d, %v; want 1", n, err)
	}
	// The row is gone, the record stays: a replay, and nothing stored.
	ingest([]store.InboxResult{Replay, Dup}, ev("SM1:received:"), ev("SM2:delivered:"))
	if isNew, err := s.InsertInbox(ctx, []store.InboxEntry{ev("SM1:received:")}); err != nil || isNew[0] {
		t.Fatalf("InsertInbox of a replay: %v, %v; want not new", isNew, err)
	}
	if p, err := s.PendingInbox(ctx, store.InboxRef{}, 10); err != nil || len(p) != 1 || p[0].EventID != "SM2:delivered:" {
		t.Fatalf("pending after the replay: %+v, %v; want only SM2", p, err)
	}
	// Same event id at another provider is another event.
	ingest([]store.InboxResult{New}, store.InboxEntry{Provider: "telnyx", EventID: "SM1:received:", Payload: []byte(`[]`)})
	// Records seen before the horizon go; later ones stay.
	clock.Advance(time.Hour)
	ingest([]store.InboxResult{New}, ev("SM3:received:"))
	if n, err := s.PurgeReplays(ctx, clock.Now()); err != nil || n != 3 {
		t.Fatalf("PurgeReplays = %d, %v; want 3 (SM1, SM2, telnyx SM1)", n, err)
	}
	ingest([]store.InboxResult{New, Dup}, ev("SM1:received:"), ev("SM3:received:"))
}

// testServerKeys: the first stored key wins, for concurrent starters too,
// and is read back by every later one.
func testServerKeys(t *testing.T, o Options) {
	s, _, db := open(t, o)
	ctx := context.Background()
	if _, err := s.ServerKey(ctx, store.HashKeyName); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("ServerKey before any: %v, want not found", err)
	}
	other := db.Open(t, Config{})
	got := make([][]byte, 8)
	errs := make([]error, 8)
	concurrently(8, func(i int) {
		st := s
		if i%2 == 1 {
			st = other
		}
		got[i], errs[i] = st.EnsureServerKey(ctx, store.HashKeyName, []byte{byte(i + 1), 2, 3})
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if !bytes.Equal(got[i], got[0]) || len(got[0]) != 3 {
			t.Fatalf("EnsureServerKey answered %v to one starter and %v to another: want one key", got[0], got[i])
		}
	}
	if k, err := other.EnsureServerKey(ctx, store.HashKeyName, []byte("later")); err != nil || !bytes.Equal(k, got[0]) {
		t.Fatalf("a later EnsureServerKey = %v, %v; want the stored %v", k, err, got[0])
	}
	if k, err := s.ServerKey(ctx, store.HashKeyName); err != nil || !bytes.Equal(k, got[0]) {
		t.Fatalf("ServerKey = %v, %v; want %v", k, err, got[0])
	}
}
