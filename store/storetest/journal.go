package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// commit runs Commit and fails the test on a batch error.
func commit(t *testing.T, s store.Store, units ...actor.Unit) []error {
	t.Helper()
	res, err := s.Commit(context.Background(), units)
	if err != nil {
		t.Fatalf("Commit: batch error: %v", err)
	}
	if len(res) != len(units) {
		t.Fatalf("Commit: %d results for %d units", len(res), len(units))
	}
	return res
}

// commitOK commits units that must all succeed.
func commitOK(t *testing.T, s store.Store, units ...actor.Unit) {
	t.Helper()
	for i, err := range commit(t, s, units...) {
		if err != nil {
			t.Fatalf("Commit: unit %d (%s): %v", i, units[i].Key, err)
		}
	}
}

// events returns n events of type typ with data "<prefix>-<i>".
func events(prefix string, n int) []actor.Event {
	out := make([]actor.Event, n)
	for i := range out {
		out[i] = actor.Event{Type: "test.event", Data: fmt.Appendf(nil, `{"p":%q,"i":%d}`, prefix, i)}
	}
	return out
}

// load returns every event of key.
func load(t *testing.T, s store.Store, key string) []actor.Event {
	t.Helper()
	var out []actor.Event
	if err := s.Load(context.Background(), key, 0, func(e actor.Event) error {
		out = append(out, e)
		return nil
	}); err != nil {
		t.Fatalf("Load(%s): %v", key, err)
	}
	return out
}

// wantSeqs checks key's journal holds exactly seqs 1..n.
func wantSeqs(t *testing.T, s store.Store, key string, n int) []actor.Event {
	t.Helper()
	evs := load(t, s, key)
	if len(evs) != n {
		t.Fatalf("journal %s: %d events, want %d", key, len(evs), n)
	}
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("journal %s: event %d has seq %d", key, i, e.Seq)
		}
	}
	return evs
}

func group(id string, seq uint64) *store.GroupRow {
	return &store.GroupRow{
		ID: id, Status: crewcast.GroupSending, From: "+15550100000", Mode: crewcast.ModeIndividual,
		Text: "Crew call 7am", CreatedAt: t0, UpdatedAt: t0.Add(time.Duration(seq) * time.Second),
		Counts: map[string]int{"pending": 2, "sent": int(seq)}, Seq: seq,
	}
}

func wantNoGroup(t *testing.T, s store.Store, id string) {
	t.Helper()
	if _, err := s.GetGroup(context.Background(), id); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("GetGroup(%s) = %v, want ErrNotFound (a failed unit's effects must be absent)", id, err)
	}
}

func testAppendAndConflict(t *testing.T, o Options) {
	s, clock, _ := open(t, o)
	ctx := context.Background()
	evs := events("a", 2)
	evs[1].Time = t0.Add(-time.Hour) // an explicit time is kept
	commitOK(t, s, actor.Unit{Key: "k", ExpectSeq: 0, Events: evs})
	got := wantSeqs(t, s, "k", 2)
	if !got[0].Time.Equal(clock.Now()) || !got[1].Time.Equal(t0.Add(-time.Hour)) {
		t.Fatalf("event times %v, %v: want the clock's now for the unset one and the explicit one kept", got[0].Time, got[1].Time)
	}
	if got[0].Type != "test.event" || string(got[1].Data) != string(evs[1].Data) {
		t.Fatalf("events not stored as given: %+v", got)
	}

	for _, expect := range []uint64{0, 1, 5} {
		res := commit(t, s, actor.Unit{Key: "k", ExpectSeq: expect, Events: events("x", 1),
			Effects: []any{store.Effects{Group: group("k", 9)}}})
		var ce *actor.ConflictError
		if !errors.As(res[0], &ce) || !errors.Is(res[0], actor.ErrConflict) {
			t.Fatalf("append at %d over seq 2: %v, want *ConflictError", expect, res[0])
		}
		if ce.Key != "k" || ce.Expected != expect || ce.Actual != 2 {
			t.Fatalf("conflict = %+v, want key k expected %d actual 2", ce, expect)
		}
	}
	wantSeqs(t, s, "k", 2)
	wantNoGroup(t, s, "k")

	commitOK(t, s, actor.Unit{Key: "k", ExpectSeq: 2, Events: events("b", 1)})
	var after []uint64
	if err := s.Load(ctx, "k", 1, func(e actor.Event) error { after = append(after, e.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, []uint64{2, 3}) {
		t.Fatalf("Load after 1 = %v, want [2 3]", after)
	}
	stop := errors.New("stop")
	n := 0
	if err := s.Load(ctx, "k", 0, func(actor.Event) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("Load must stop at fn's error and return it: err %v after %d calls", err, n)
	}
	if evs := load(t, s, "missing"); len(evs) != 0 {
		t.Fatalf("unknown key has %d events", len(evs))
	}
	// A unit with no events still checks its sequence.
	res := commit(t, s, actor.Unit{Key: "k", ExpectSeq: 1, Reminders: []actor.ReminderOp{{Name: "r", Due: t0}}})
	if !errors.Is(res[0], actor.ErrConflict) {
		t.Fatalf("event-less unit at a stale seq: %v, want conflict", res[0])
	}
	if rs, err := s.DueReminders(ctx, t0, 10); err != nil || len(rs) != 0 {
		t.Fatalf("failed unit's reminder stored: %v %v", rs, err)
	}
	if res, err := s.Commit(ctx, nil); err != nil || len(res) != 0 {
		t.Fatalf("empty Commit = %v, %v", res, err)
	}
}

func testCommitBatch(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	commitOK(t, s, actor.Unit{Key: "g-bad", Events: events("pre", 1)})
	units := []actor.Unit{
		{Key: "g-1", Events: events("1", 2), Effects: []any{store.Effects{Group: group("g-1", 2),
			Deliveries: []store.DeliveryRow{delivery("g-1", "+15550100001", 1)}}}},
		// Wrong expected sequence: fails alone.
		{Key: "g-bad", ExpectSeq: 0, Events: events("bad", 1), Reminders: []actor.ReminderOp{{Name: "check", Due: t0}},
			Effects: []any{&store.Effects{Group: group("g-bad", 1), Deliveries: []store.DeliveryRow{delivery("g-bad", "+15550100009", 1)},
				Routes: []store.Route{{Key: "msg-bad", Value: "g-bad"}}, Suppress: []store.Suppression{{Number: "+15550100009", Reason: "manual"}},
				Replies:   []store.Reply{{Provider: "telnyx", EventID: "ev-bad", GroupID: "g-bad", Number: "+15550100009", Text: "hi"}},
				InboxDone: []store.InboxRef{{Provider: "telnyx", EventID: "in-bad", Target: "g-bad"}}}}},
		{Key: "g-2", Events: events("2", 1), Effects: []any{store.Effects{Group: group("g-2", 1),
			InboxDone: []store.InboxRef{{Provider: "telnyx", EventID: "in-2", Target: "g-2"}}}}},
	}
	if _, err := s.InsertInbox(ctx, []store.InboxEntry{
		{Provider: "telnyx", EventID: "in-bad", Payload: []byte("{}")},
		{Provider: "telnyx", EventID: "in-2", Payload: []byte("{}")},
	}); err != nil {
		t.Fatal(err)
	}
	res := commit(t, s, units...)
	if res[0] != nil || res[2] != nil || !errors.Is(res[1], actor.ErrConflict) {
		t.Fatalf("results = %v, want [nil conflict nil]", res)
	}
	wantSeqs(t, s, "g-1", 2)
	wantSeqs(t, s, "g-2", 1)
	wantSeqs(t, s, "g-bad", 1)
	for _, id := range []string{"g-1", "g-2"} {
		if g, err := s.GetGroup(ctx, id); err != nil || g.ID != id {
			t.Fatalf("GetGroup(%s) = %+v, %v", id, g, err)
		}
	}
	// Nothing of the failed unit exists.
	wantNoGroup(t, s, "g-bad")
	if rows, _, err := s.ListDeliveries(ctx, store.DeliveryQuery{GroupID: "g-bad"}); err != nil || len(rows) != 0 {
		t.Fatalf("failed unit's deliveries: %v %v", rows, err)
	}
	if _, err := s.GetRoute(ctx, "msg-bad"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("failed unit's route: %v", err)
	}
	if sp, err := s.Suppressed(ctx, []string{"+15550100009"}); err != nil || len(sp) != 0 {
		t.Fatalf("failed unit's suppression: %v %v", sp, err)
	}
	if rs, _, err := s.ListReplies(ctx, store.ReplyQuery{GroupID: "g-bad"}); err != nil || len(rs) != 0 {
		t.Fatalf("failed unit's reply: %v %v", rs, err)
	}
	if rs, err := s.DueReminders(ctx, t0, 10); err != nil || len(rs) != 0 {
		t.Fatalf("failed unit's reminder: %v %v", rs, err)
	}
	pending, err := s.PendingInbox(ctx, store.InboxRef{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].EventID != "in-bad" || pending[0].Target != "" {
		t.Fatalf("pending inbox = %+v, want only in-bad, unrouted (the failed unit's ack must be absent)", pending)
	}
}

func delivery(groupID, number string, attempts int) store.DeliveryRow {
	return store.DeliveryRow{
		GroupID: groupID, Number: number, Name: "Crew " + number, Status: crewcast.StatusSent, Attempts: attempts,
		ProviderMessageID: "msg-" + number, ClaimedAt: t0.Add(time.Second), SentAt: t0.Add(2 * time.Second),
		UpdatedAt: t0.Add(2 * time.Second),
	}
}

func testCommitChainedSameKey(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	units := []actor.Unit{
		{Key: "c", ExpectSeq: 0, Events: events("1", 2), Effects: []any{store.Effects{Group: group("c", 2)}}},
		{Key: "c", ExpectSeq: 2, Events: events("2", 1), Effects: []any{store.Effects{Group: group("c", 3)}}},
		{Key: "c", ExpectSeq: 3, Events: events("3", 3), Effects: []any{store.Effects{Group: group("c", 6)}}},
	}
	commitOK(t, s, units...)
	evs := wantSeqs(t, s, "c", 6)
	if string(evs[2].Data) != string(units[1].Events[0].Data) {
		t.Fatalf("event 3 = %s, want unit 2's", evs[2].Data)
	}
	g, err := s.GetGroup(context.Background(), "c")
	if err != nil || g.Seq != 6 {
		t.Fatalf("group after chain: %+v, %v (want the last unit's row)", g, err)
	}
	// A chain broken by a failed unit: the unit after it expects a sequence
	// that never came and fails too; a later unit at the real head commits.
	res := commit(t, s,
		actor.Unit{Key: "c", ExpectSeq: 6, Events: events("4", 1)},
		actor.Unit{Key: "c", ExpectSeq: 5, Events: events("bad", 1)},
		actor.Unit{Key: "c", ExpectSeq: 8, Events: events("orphan", 1)},
		actor.Unit{Key: "c", ExpectSeq: 7, Events: events("5", 1)},
	)
	if res[0] != nil || !errors.Is(res[1], actor.ErrConflict) || !errors.Is(res[2], actor.ErrConflict) || res[3] != nil {
		t.Fatalf("results = %v, want [nil conflict conflict nil]", res)
	}
	evs = wantSeqs(t, s, "c", 8)
	if string(evs[7].Data) != string(events("5", 1)[0].Data) {
		t.Fatalf("event 8 = %s", evs[7].Data)
	}
}

type foreignEffect struct{}

func testCommitUnknownEffect(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	res := commit(t, s,
		actor.Unit{Key: "u-1", Events: events("1", 1), Effects: []any{store.Effects{Group: group("u-1", 1)}, foreignEffect{}}},
		actor.Unit{Key: "u-2", Events: events("2", 1), Effects: []any{(*store.Effects)(nil), &store.Effects{Group: group("u-2", 1)}}},
		actor.Unit{Key: "u-3", Events: events("3", 1), Effects: []any{"text"}},
	)
	if !errors.Is(res[0], store.ErrUnknownEffect) || res[1] != nil || !errors.Is(res[2], store.ErrUnknownEffect) {
		t.Fatalf("results = %v, want [unknown nil unknown]", res)
	}
	wantSeqs(t, s, "u-1", 0)
	wantNoGroup(t, s, "u-1")
	wantSeqs(t, s, "u-2", 1)
	wantSeqs(t, s, "u-3", 0)
}

func testCommitIdempotency(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	if _, err := s.GetIdempotency(ctx, "req-1"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("GetIdempotency(unknown) = %v", err)
	}
	ik := &store.IdempotencyKey{Key: "req-1", RequestHash: "h1", GroupID: "i-1", CreatedAt: t0}
	commitOK(t, s, actor.Unit{Key: "i-1", Events: events("1", 1), Effects: []any{store.Effects{Group: group("i-1", 1), Idempotency: ik}}})
	got, err := s.GetIdempotency(ctx, "req-1")
	if err != nil || !reflect.DeepEqual(got, *ik) {
		t.Fatalf("GetIdempotency = %+v, %v, want %+v", got, err, *ik)
	}
	res := commit(t, s,
		actor.Unit{Key: "i-2", Events: events("2", 1), Effects: []any{store.Effects{Group: group("i-2", 1),
			Idempotency: &store.IdempotencyKey{Key: "req-1", RequestHash: "h2", GroupID: "i-2"}}}},
		actor.Unit{Key: "i-3", Events: events("3", 1), Effects: []any{store.Effects{Group: group("i-3", 1),
			Idempotency: &store.IdempotencyKey{Key: "req-3", RequestHash: "h3", GroupID: "i-3"}}}},
		// Same key as the unit just before it, in the same batch.
		actor.Unit{Key: "i-4", Events: events("4", 1), Effects: []any{store.Effects{Group: group("i-4", 1),
			Idempotency: &store.IdempotencyKey{Key: "req-3", RequestHash: "h4", GroupID: "i-4"}}}},
	)
	if !errors.Is(res[0], store.ErrIdempotencyConflict) || res[1] != nil || !errors.Is(res[2], store.ErrIdempotencyConflict) {
		t.Fatalf("results = %v, want [idempotency nil idempotency]", res)
	}
	// One unit carrying the same new key twice clashes with itself; its
	// writes made before the clash are rolled back with it.
	res = commit(t, s, actor.Unit{Key: "i-5", Events: events("5", 1), Effects: []any{
		store.Effects{Group: group("i-5", 1), Idempotency: &store.IdempotencyKey{Key: "req-5", GroupID: "i-5"}},
		store.Effects{Idempotency: &store.IdempotencyKey{Key: "req-5", GroupID: "i-5"}},
	}})
	if !errors.Is(res[0], store.ErrIdempotencyConflict) {
		t.Fatalf("self-clashing unit: %v", res[0])
	}
	if _, err := s.GetIdempotency(ctx, "req-5"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("self-clashing unit's key stored: %v", err)
	}
	for _, id := range []string{"i-2", "i-4", "i-5"} {
		wantSeqs(t, s, id, 0)
		wantNoGroup(t, s, id)
	}
	if got, err := s.GetIdempotency(ctx, "req-1"); err != nil || got.GroupID != "i-1" || got.RequestHash != "h1" {
		t.Fatalf("first key overwritten: %+v %v", got, err)
	}
	if got, err := s.GetIdempotency(ctx, "req-3"); err != nil || got.GroupID != "i-3" || got.CreatedAt.IsZero() {
		t.Fatalf("req-3 = %+v %v (CreatedAt defaults to now)", got, err)
	}
}

// keysOnDistinctShards returns n keys with pairwise different shards.
func keysOnDistinctShards(prefix string, n int) []string {
	var out []string
	seen := map[int]bool{}
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("%s-%d", prefix, i)
		if sh := store.ShardOf(k); !seen[sh] {
			seen[sh] = true
			out = append(out, k)
		}
	}
	return out
}

func testFencing(t *testing.T, o Options) {
	db := o.NewDB(t)
	ctx := context.Background()
	a := db.Open(t, Config{Owner: "node-a"})
	b := db.Open(t, Config{Owner: "node-b"})
	keys := keysOnDistinctShards("f", 2)
	k1, k2 := keys[0], keys[1]
	sh1 := store.ShardOf(k1)

	// b holds nothing: every shard went to a.
	if res := commit(t, b, actor.Unit{Key: k2, Events: events("b", 1)}); !errors.Is(res[0], actor.ErrFenced) {
		t.Fatalf("commit by a store holding no lease: %v, want ErrFenced", res[0])
	}
	commitOK(t, a, actor.Unit{Key: k1, Events: events("a1", 1)})

	epoch, err := b.TakeShard(ctx, sh1, "node-b")
	if err != nil || epoch != 2 {
		t.Fatalf("TakeShard = %d, %v, want epoch 2", epoch, err)
	}
	res := commit(t, a,
		actor.Unit{Key: k1, ExpectSeq: 1, Events: events("stale", 1), Reminders: []actor.ReminderOp{{Name: "x", Due: t0}},
			Effects: []any{store.Effects{Group: group(k1, 2), Routes: []store.Route{{Key: "r-stale", Value: k1}}}}},
		actor.Unit{Key: k2, Events: events("a2", 1)},
	)
	if !errors.Is(res[0], actor.ErrFenced) || res[1] != nil {
		t.Fatalf("stale owner's results = %v, want [ErrFenced nil] (other shards unaffected)", res)
	}
	wantSeqs(t, a, k1, 1)
	wantNoGroup(t, a, k1)
	if _, err := a.GetRoute(ctx, "r-stale"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("fenced unit's route written: %v", err)
	}
	if rs, err := a.DueReminders(ctx, t0, 10); err != nil || len(rs) != 0 {
		t.Fatalf("fenced unit's reminder written: %v %v", rs, err)
	}
	wantSeqs(t, b, k2, 1)

	commitOK(t, b, actor.Unit{Key: k1, ExpectSeq: 1, Events: events("b1", 1)})
	wantSeqs(t, a, k1, 2)
	// An erasure's rewrite of the group is fenced like a commit (issue 20,
	// docs/design.md §9): the stale owner cannot rewrite it, the owner can.
	noop := store.GroupErasure{Number: "+15550500001", Replacement: "h:x",
		Event: func(_ string, d []byte) ([]byte, error) { return d, nil }}
	if _, err := a.EraseFromGroup(ctx, k1, noop); !errors.Is(err, actor.ErrFenced) {
		t.Fatalf("stale owner's EraseFromGroup: %v, want ErrFenced", err)
	}
	if _, err := b.EraseFromGroup(ctx, k1, noop); err != nil {
		t.Fatalf("owner's EraseFromGroup: %v", err)
	}

	leases, err := a.ListLeases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l := leases[sh1]; l.Shard != sh1 || l.Owner != "node-b" || l.Epoch != 2 {
		t.Fatalf("lease of shard %d = %+v", sh1, l)
	}
	// Taking it back fences b in turn.
	if e, err := a.TakeShard(ctx, sh1, "node-a"); err != nil || e != 3 {
		t.Fatalf("TakeShard back = %d, %v", e, err)
	}
	if res := commit(t, b, actor.Unit{Key: k1, ExpectSeq: 2, Events: events("b2", 1)}); !errors.Is(res[0], actor.ErrFenced) {
		t.Fatalf("b after losing the shard: %v", res[0])
	}
	commitOK(t, a, actor.Unit{Key: k1, ExpectSeq: 2, Events: events("a3", 1)})
	wantSeqs(t, b, k1, 3)
}

func testLeases(t *testing.T, o Options) {
	db := o.NewDB(t)
	ctx := context.Background()
	a := db.Open(t, Config{Owner: "solo"})
	leases, err := a.ListLeases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != store.NumShards {
		t.Fatalf("%d leases, want %d", len(leases), store.NumShards)
	}
	for i, l := range leases {
		if l != (store.Lease{Shard: i, Owner: "solo", Epoch: 1}) {
			t.Fatalf("lease %d = %+v, want solo at epoch 1", i, l)
		}
	}
	key := keysOnDistinctShards("l", 1)[0]
	if e, err := a.TakeShard(ctx, store.ShardOf(key), "solo"); err != nil || e != 2 {
		t.Fatalf("TakeShard = %d %v", e, err)
	}
	if _, err := a.TakeShard(ctx, store.NumShards, "solo"); err == nil {
		t.Fatal("TakeShard out of range succeeded")
	}
	commitOK(t, a, actor.Unit{Key: key, Events: events("1", 1)})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopening with the same owner keeps the epochs it holds.
	a2 := db.Open(t, Config{Owner: "solo"})
	commitOK(t, a2, actor.Unit{Key: key, ExpectSeq: 1, Events: events("2", 1)})
	leases, err = a2.ListLeases(ctx)
	if err != nil || leases[store.ShardOf(key)].Epoch != 2 {
		t.Fatalf("lease after reopen = %+v, %v", leases, err)
	}
	// Another owner opening later takes nothing.
	other := db.Open(t, Config{Owner: "other"})
	if res := commit(t, other, actor.Unit{Key: key, ExpectSeq: 2, Events: events("3", 1)}); !errors.Is(res[0], actor.ErrFenced) {
		t.Fatalf("second owner's commit: %v, want ErrFenced", res[0])
	}
	wantSeqs(t, a2, key, 2)
}

func testLoadAllEvents(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	var want []string
	seqs := map[string]uint64{}
	for batch := range 4 {
		var units []actor.Unit
		for _, k := range []string{"x", "y", "z"}[batch%2:] {
			units = append(units, actor.Unit{Key: k, ExpectSeq: seqs[k], Events: events(fmt.Sprint(k, batch), 2)})
			for i := range 2 {
				seqs[k]++
				want = append(want, fmt.Sprintf("%s/%d/%s", k, seqs[k], events(fmt.Sprint(k, batch), 2)[i].Data))
			}
		}
		// A failed unit in the middle leaves no positions behind.
		units = append(units[:1], append([]actor.Unit{{Key: "x", ExpectSeq: 99, Events: events("bad", 1)}}, units[1:]...)...)
		commit(t, s, units...)
	}
	var got []string
	var last int64
	for {
		page, err := s.LoadAllEvents(ctx, last, 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 4 {
			t.Fatalf("page of %d events, limit 4", len(page))
		}
		for _, e := range page {
			if e.Pos <= last {
				t.Fatalf("position %d after %d: positions must increase", e.Pos, last)
			}
			last = e.Pos
			got = append(got, fmt.Sprintf("%s/%d/%s", e.Key, e.Seq, e.Data))
		}
		if len(page) < 4 {
			break
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadAllEvents order:\n got %v\nwant %v", got, want)
	}
}

func testSnapshots(t *testing.T, o Options) {
	s, clock, db := open(t, o)
	ctx := context.Background()
	if _, err := s.LoadSnapshot(ctx, "s"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("LoadSnapshot(missing) = %v", err)
	}
	sn := actor.Snapshot{Key: "s", Seq: 5, State: []byte(`{"state":1}`), Time: t0}
	if err := s.SaveSnapshot(ctx, sn); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LoadSnapshot(ctx, "s"); err != nil || !reflect.DeepEqual(got, sn) {
		t.Fatalf("LoadSnapshot = %+v, %v, want %+v", got, err, sn)
	}
	sn2 := actor.Snapshot{Key: "s", Seq: 9, State: []byte(`{"state":2}`)}
	if err := s.SaveSnapshot(ctx, sn2); err != nil {
		t.Fatal(err)
	}
	sn2.Time = clock.Now()
	if got, err := s.LoadSnapshot(ctx, "s"); err != nil || !reflect.DeepEqual(got, sn2) {
		t.Fatalf("overwritten snapshot = %+v, %v, want %+v", got, err, sn2)
	}
	other := actor.Snapshot{Key: "o", Seq: 1, State: []byte("x"), Time: t0}
	if err := s.SaveSnapshot(ctx, other); err != nil {
		t.Fatal(err)
	}
	db.Corrupt(t, "s")
	if _, err := s.LoadSnapshot(ctx, "s"); !errors.Is(err, actor.ErrCorruptSnapshot) {
		t.Fatalf("corrupted snapshot loaded: %v, want ErrCorruptSnapshot", err)
	}
	if got, err := s.LoadSnapshot(ctx, "o"); err != nil || !reflect.DeepEqual(got, other) {
		t.Fatalf("other snapshot = %+v, %v", got, err)
	}
	// A fresh save replaces the corrupt one.
	if err := s.SaveSnapshot(ctx, sn); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LoadSnapshot(ctx, "s"); err != nil || got.Seq != 5 {
		t.Fatalf("after re-save: %+v, %v", got, err)
	}
	if err := s.DeleteSnapshot(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadSnapshot(ctx, "s"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("deleted snapshot: %v", err)
	}
	if err := s.DeleteSnapshot(ctx, "s"); err != nil {
		t.Fatalf("deleting a missing snapshot: %v", err)
	}
	empty := actor.Snapshot{Key: "e", Seq: 1, State: nil, Time: t0}
	if err := s.SaveSnapshot(ctx, empty); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LoadSnapshot(ctx, "e"); err != nil || len(got.State) != 0 {
		t.Fatalf("empty state: %+v, %v", got, err)
	}
}

func testReminders(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	due := func(before time.Time, limit int) []actor.Reminder {
		t.Helper()
		rs, err := s.DueReminders(ctx, before, limit)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	for _, r := range []actor.Reminder{
		{Key: "a", Name: "check", Due: t0.Add(3 * time.Minute)},
		{Key: "b", Name: "check", Due: t0.Add(1 * time.Minute)},
		{Key: "a", Name: "retry", Due: t0.Add(2 * time.Minute)},
		{Key: "c", Name: "later", Due: t0.Add(time.Hour)},
	} {
		if err := s.SetReminder(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got := due(t0.Add(3*time.Minute), 10)
	want := []actor.Reminder{
		{Key: "b", Name: "check", Due: t0.Add(1 * time.Minute)},
		{Key: "a", Name: "retry", Due: t0.Add(2 * time.Minute)},
		{Key: "a", Name: "check", Due: t0.Add(3 * time.Minute)}, // due == before is due
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DueReminders = %+v\nwant %+v", got, want)
	}
	if got := due(t0.Add(time.Hour), 2); !reflect.DeepEqual(got, want[:2]) {
		t.Fatalf("limit 2 = %+v", got)
	}
	// Setting again moves it.
	if err := s.SetReminder(ctx, actor.Reminder{Key: "b", Name: "check", Due: t0.Add(30 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteReminder(ctx, "a", "retry"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteReminder(ctx, "a", "missing"); err != nil {
		t.Fatalf("deleting a missing reminder: %v", err)
	}
	got = due(t0.Add(time.Hour), 10)
	want = []actor.Reminder{
		{Key: "a", Name: "check", Due: t0.Add(3 * time.Minute)},
		{Key: "b", Name: "check", Due: t0.Add(30 * time.Minute)},
		{Key: "c", Name: "later", Due: t0.Add(time.Hour)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after move/delete = %+v\nwant %+v", got, want)
	}
	// Reminders as part of a unit: set, move and delete with the events.
	commitOK(t, s, actor.Unit{Key: "a", Events: events("1", 1), Reminders: []actor.ReminderOp{
		{Name: "check", Delete: true},
		{Name: "follow-up", Due: t0.Add(5 * time.Minute)},
	}}, actor.Unit{Key: "c", Reminders: []actor.ReminderOp{{Name: "later", Due: t0}}})
	got = due(t0.Add(time.Hour), 10)
	want = []actor.Reminder{
		{Key: "c", Name: "later", Due: t0},
		{Key: "a", Name: "follow-up", Due: t0.Add(5 * time.Minute)},
		{Key: "b", Name: "check", Due: t0.Add(30 * time.Minute)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after unit reminders = %+v\nwant %+v", got, want)
	}
}

func testMigrations(t *testing.T, o Options) {
	db := o.NewDB(t)
	ctx := context.Background()
	s := db.Open(t, Config{})
	v, err := s.MigrationVersion(ctx)
	if err != nil || v < 1 {
		t.Fatalf("MigrationVersion = %d, %v", v, err)
	}
	for range 2 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
		if v2, err := s.MigrationVersion(ctx); err != nil || v2 != v {
			t.Fatalf("version after re-run = %d, %v, want %d", v2, err, v)
		}
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if e := s.Engine(); e != "sqlite" && e != "postgres" {
		t.Fatalf("Engine() = %q", e)
	}
	commitOK(t, s, actor.Unit{Key: "m", Events: events("1", 1)})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Reopening an existing database migrates nothing and keeps the data.
	s2 := db.Open(t, Config{})
	if v2, err := s2.MigrationVersion(ctx); err != nil || v2 != v {
		t.Fatalf("version after reopen = %d, %v", v2, err)
	}
	wantSeqs(t, s2, "m", 1)
}

// concurrently runs fn n times at once and waits for all.
func concurrently(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

// testCommitSharedRowsInOrder: units of one batch that write the same rows
// leave the state that applying them one after another leaves, whatever
// the engine does to batch its statements.
func testCommitSharedRowsInOrder(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	if err := s.AddSuppression(ctx, store.Suppression{Number: "n2", Reason: "manual", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InsertInbox(ctx, []store.InboxEntry{{Provider: "p", EventID: "e1"}}); err != nil {
		t.Fatal(err)
	}
	d := func(status crewcast.Status) store.DeliveryRow {
		r := delivery("A", "+15550700001", 1)
		r.Status = status
		return r
	}
	reply := func(text string) store.Reply {
		return store.Reply{Provider: "p", EventID: "in-1", GroupID: "A", Number: "+15550700001", Text: text, ReceivedAt: t0}
	}
	commitOK(t, s,
		actor.Unit{Key: "A", Events: events("a1", 1), Reminders: []actor.ReminderOp{{Name: "r1", Due: t0}},
			Effects: []any{store.Effects{Group: group("A", 1), Deliveries: []store.DeliveryRow{d(crewcast.StatusSent)},
				Suppress: []store.Suppression{{Number: "n1", Reason: "stop"}}, Routes: []store.Route{{Key: "K", Value: "A"}},
				InboxDone: []store.InboxRef{{Provider: "p", EventID: "e1", Target: "A"}}, Replies: []store.Reply{reply("first")}}}},
		actor.Unit{Key: "B", Effects: []any{store.Effects{Unsuppress: []string{"n1"},
			InboxDone: []store.InboxRef{{Provider: "p", EventID: "e1"}}, Replies: []store.Reply{reply("second")}}}},
		actor.Unit{Key: "A", ExpectSeq: 1, Events: events("a2", 1),
			Reminders: []actor.ReminderOp{{Name: "r1", Delete: true}, {Name: "r2", Due: t0.Add(time.Minute)}},
			Effects: []any{store.Effects{Group: group("A", 2), Deliveries: []store.DeliveryRow{d(crewcast.StatusDelivered)},
				Unsuppress: []string{"n2"}}}},
		actor.Unit{Key: "C", Effects: []any{store.Effects{Suppress: []store.Suppression{{Number: "n2", Reason: "stop", CreatedAt: t0}},
			Routes: []store.Route{{Key: "K", Value: "C"}}}}},
	)
	wantSeqs(t, s, "A", 2)
	if g, err := s.GetGroup(ctx, "A"); err != nil || g.Seq != 2 {
		t.Fatalf("group = %+v, %v, want the later unit's row", g, err)
	}
	if rows, _, err := s.ListDeliveries(ctx, store.DeliveryQuery{GroupID: "A"}); err != nil || len(rows) != 1 || rows[0].Status != crewcast.StatusDelivered {
		t.Fatalf("deliveries = %+v, %v", rows, err)
	}
	sup, err := s.Suppressed(ctx, []string{"n1", "n2"})
	if err != nil || len(sup) != 1 || sup["n2"].Reason != "manual" {
		t.Fatalf("suppressions = %+v, %v, want only n2 (manual: a START does not lift it, a STOP does not replace it)", sup, err)
	}
	if r, err := s.GetRoute(ctx, "K"); err != nil || r.Value != "C" {
		t.Fatalf("route = %+v, %v", r, err)
	}
	rs, err := s.DueReminders(ctx, t0.Add(time.Hour), 10)
	if err != nil || len(rs) != 1 || rs[0].Name != "r2" {
		t.Fatalf("reminders = %+v, %v", rs, err)
	}
	if p, err := s.PendingInbox(ctx, store.InboxRef{}, 10); err != nil || len(p) != 0 {
		t.Fatalf("pending = %+v, %v", p, err)
	}
	// The entry is stored once and processed (a processed entry's target
	// is not readable through the interface).
	if isNew, err := s.InsertInbox(ctx, []store.InboxEntry{{Provider: "p", EventID: "e1"}}); err != nil || isNew[0] {
		t.Fatalf("re-insert = %v, %v", isNew, err)
	}
	replies, _, err := s.ListReplies(ctx, store.ReplyQuery{GroupID: "A"})
	if err != nil || len(replies) != 1 || replies[0].Text != "first" {
		t.Fatalf("replies = %+v, %v, want the first only", replies, err)
	}
}
