package tracker

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// loadCounter counts the journal events Load reads per key.
type loadCounter struct {
	store.Store
	mu     sync.Mutex
	loaded map[string]int
}

func (s *loadCounter) Load(ctx context.Context, key string, after uint64, fn func(actor.Event) error) error {
	return s.Store.Load(ctx, key, after, func(e actor.Event) error {
		s.mu.Lock()
		if s.loaded == nil {
			s.loaded = map[string]int{}
		}
		s.loaded[key]++
		s.mu.Unlock()
		return fn(e)
	})
}

func (s *loadCounter) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loaded[key]
}

func recordUnmatched(t *testing.T, e *env, tr *Tracker, from, to int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < to; i++ {
		if _, err := tr.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: fmt.Sprintf("u-%d", i), Kind: crewcast.KindInbound,
			From: "+15550109999", To: from0, Text: "who is this?"}}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		p, err := e.st.PendingInbox(ctx, store.InboxRef{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d unmatched replies left unprocessed", len(p))
		}
	}
}

const from0 = from

// TestUnmatchedJournalStartsFromSnapshotAndIsTrimmed is issue 12's
// finding 9 (second half): the "unmatched" journal was replayed from 0 on
// every start and never truncated. Start-up must read only what follows
// its latest snapshot, and retention must delete old events.
func TestUnmatchedJournalStartsFromSnapshotAndIsTrimmed(t *testing.T) {
	mod := func(c *Config) { c.SnapshotEvery = 5 }
	e := newEnv(t, mod)
	ctx := context.Background()
	recordUnmatched(t, e, e.tr, 0, 12)
	snap, err := e.st.LoadSnapshot(ctx, unmatchedKey)
	if err != nil || snap.Seq < 10 {
		t.Fatalf("unmatched snapshot at seq %d, %v; want one at 10 or later", snap.Seq, err)
	}
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.tr.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}

	// A new process reads the snapshot and the events after it only.
	counted := &loadCounter{Store: e.st}
	e.st = counted
	tr := e.start(mod)
	if n := counted.count(unmatchedKey); n > 2 {
		t.Fatalf("start-up read %d unmatched journal events, want only those after the snapshot (at most 2)", n)
	}
	recordUnmatched(t, e, tr, 12, 14)

	// Retention deletes events older than DeleteAfter that a snapshot
	// covers; recording continues after it.
	e.clk.Advance(400 * 24 * time.Hour)
	if _, err := tr.RunRetention(ctx, RetentionPolicy{}); err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	if err := e.st.Load(ctx, unmatchedKey, 0, func(ev actor.Event) error { seqs = append(seqs, ev.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	snap, _ = e.st.LoadSnapshot(ctx, unmatchedKey)
	if len(seqs) == 0 || seqs[0] != snap.Seq || seqs[len(seqs)-1] != 14 {
		t.Fatalf("unmatched journal after retention holds seqs %v (snapshot at %d); want the snapshot's event onwards, up to 14", seqs, snap.Seq)
	}
	recordUnmatched(t, e, tr, 14, 15)
	// The replies themselves went with the retention run, as a group's
	// replies go with the group; the one recorded after it stays.
	rows, _, err := e.st.ListReplies(ctx, store.ReplyQuery{Unmatched: true, Limit: 100})
	if err != nil || len(rows) != 1 || rows[0].EventID != "u-14" {
		t.Fatalf("unmatched replies after retention = %+v, %v; want only u-14", rows, err)
	}
}

// blockingStore holds Commit of the unmatched journal until released.
type blockingStore struct {
	store.Store
	entered chan struct{}
	release chan struct{}
}

func (s *blockingStore) Commit(ctx context.Context, units []actor.Unit) ([]error, error) {
	for _, u := range units {
		if u.Key == unmatchedKey {
			s.entered <- struct{}{}
			<-s.release
			break
		}
	}
	return s.Store.Commit(ctx, units)
}

// TestUnmatchedRecordHonoursItsContext: recording held the log's mutex
// across the commit, so while one commit hung every other recorder waited
// on the mutex past its own deadline (issue 12, finding 16).
func TestUnmatchedRecordHonoursItsContext(t *testing.T) {
	e, st := newStoreEnv(t)
	bs := &blockingStore{Store: st, entered: make(chan struct{}, 1), release: make(chan struct{})}
	e.st = bs
	e.tr = e.start(nil)
	ev := func(id string) []crewcast.Event {
		return []crewcast.Event{{Provider: "fake", EventID: id, Kind: crewcast.KindInbound, From: "+15550109999", To: from, Text: "hi"}}
	}
	first := make(chan error, 1)
	go func() {
		first <- e.tr.unmatched.record(context.Background(), store.InboxRef{Provider: "fake", EventID: "b-1"}, ev("b-1"))
	}()
	<-bs.entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	second := make(chan error, 1)
	go func() {
		second <- e.tr.unmatched.record(ctx, store.InboxRef{Provider: "fake", EventID: "b-2"}, ev("b-2"))
	}()
	select {
	case err := <-second:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("second record = %v, want its deadline", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("second record still waiting on the first one's commit past its own deadline")
		close(bs.release)
		<-first
		<-second
		return
	}
	close(bs.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}
